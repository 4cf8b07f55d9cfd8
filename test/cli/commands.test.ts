// The `cdk8s-sidecar-injector` command (inject, explain, diff), run as a user runs it: a real process
// over real files, against what `npm run synth` writes for the default app.

import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { before, describe, test } from 'node:test';
import { parseAllDocuments } from 'yaml';
import { ResolvedInjectorConfig, loadInjectorConfig } from '../../webhook/config';
import { mutate } from '../../webhook/engine';
import { runCli } from '../../webhook/cli/program';
import { describeRun, runCliProcess } from '../support/cli-process';
import { applyResponse, decodePatch, loadReview, names, podOf, reviewNames } from '../support/recorded-reviews';
import { makeTempDir, synthDefaultAppToTemp } from '../support/synth-helpers';

/** Every document of a YAML stream, as objects. */
function parseStream(text: string): any[] {
  return parseAllDocuments(text).map((document) => {
    assert.deepEqual(document.errors, [], `the CLI printed invalid YAML:\n${text}`);
    return document.toJS();
  });
}

/** Fails unless every map of `input` keeps its keys, in the same order, in `output` (new keys may follow). */
function assertKeepsUserContent(input: unknown, output: unknown, at = ''): void {
  if (Array.isArray(input)) {
    assert.ok(Array.isArray(output), `${at || '/'}: the user's list became ${JSON.stringify(output)}`);
    assert.ok(output.length >= input.length, `${at}: the user's list lost items (${input.length} -> ${output.length})`);
    input.forEach((item, index) => assertKeepsUserContent(item, output[index], `${at}/${index}`));
  } else if (input !== null && typeof input === 'object') {
    assert.ok(output !== null && typeof output === 'object' && !Array.isArray(output), `${at || '/'}: the user's map became ${JSON.stringify(output)}`);
    const inputKeys = Object.keys(input);
    const keptKeys = Object.keys(output).filter((key) => inputKeys.includes(key));
    assert.deepEqual(keptKeys, inputKeys, `${at || '/'}: the user's keys, in the user's order`);
    for (const key of inputKeys) assertKeepsUserContent((input as any)[key], (output as any)[key], `${at}/${key}`);
  } else {
    assert.deepEqual(output, input, `${at}: the user's value`);
  }
}

/** Runs the CLI in this process (for the many small cases; the main paths spawn the real command). */
async function runInProcess(args: string[], stdin = ''): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const code = await runCli(args, { stdout: (text) => void (stdout += text), stderr: (text) => void (stderr += text), readStdin: () => stdin });
  return { code, stdout, stderr };
}

function reasonsOf(explanation: any): Record<string, string> {
  return Object.fromEntries(explanation.injections.map((decision: any) => [decision.injection, decision.reason]));
}

function detailOf(explanation: any, injection: string): string {
  return explanation.injections.find((decision: any) => decision.injection === injection)?.detail ?? '(no decision)';
}

describe('cdk8s-sidecar-injector, against the default app as synthesized', () => {
  let dist: string;
  let work: string;
  let config: ResolvedInjectorConfig;

  before(() => {
    const synthesized = synthDefaultAppToTemp();
    dist = synthesized.outdir;
    // The config exactly as the webhook loads it: the ConfigMap's config.json.
    const configMaps = synthesized.manifests.filter((manifest) => manifest.kind === 'ConfigMap' && typeof manifest.data?.['config.json'] === 'string');
    assert.equal(configMaps.length, 1, 'one ConfigMap carries the injector config');
    config = loadInjectorConfig(configMaps[0].data['config.json']);
    work = makeTempDir('cli');
  });

  test('inject on every recorded AdmissionReview object gives exactly the object the webhook patch gives, in input order', () => {
    const reviews = reviewNames().map((name) => ({ name, review: loadReview(name) }));
    const manifests = path.join(work, 'recorded-objects.yaml');
    // JSON is YAML: the objects as the apiserver sent them, one document each.
    fs.writeFileSync(manifests, reviews.map(({ review }) => JSON.stringify(review.request.object, null, 2)).join('\n---\n') + '\n');

    const run = runCliProcess(['inject', '-f', manifests, '--from', dist, '--namespace-labels', 'injection=enabled']);
    assert.equal(run.status, 0, describeRun(run));
    const printed = parseStream(run.stdout);
    assert.equal(printed.length, reviews.length, `one document per input object\n${describeRun(run)}`);

    let changed = 0;
    reviews.forEach(({ name, review }, index) => {
      const expected = applyResponse(review.request.object, mutate(review.request, config));
      const got = printed[index];
      assert.deepEqual(got, expected, `${name}: inject's object equals the recorded object with the webhook's patch applied`);
      assert.equal(JSON.stringify(got), JSON.stringify(expected), `${name}: same keys in the same order`);
      assertKeepsUserContent(review.request.object, got);
      if (JSON.stringify(expected) !== JSON.stringify(review.request.object)) changed++;
    });
    assert.ok(changed >= 4, `the webhook changes several recorded objects, so the comparison means something (changed ${changed})`);
    const sleep = podOf(printed[reviews.findIndex(({ name }) => name === 'pod-create-sleep')]);
    assert.deepEqual(names(sleep.spec.containers), ['sleep', 'helper', 'envoy', 'sidecar-nginx']);
  });

  test('inject keeps what the user wrote, in order, and passes other kinds through untouched', () => {
    const configMap = [
      '# settings the app reads; kept as written',
      'apiVersion: v1',
      'kind: ConfigMap',
      'metadata:',
      '  name: settings',
      '  namespace: shop',
      'data:',
      '  feature: "on"   # a string, not a boolean',
      '  zip: "01234"',
      '',
    ].join('\n');
    const pod = [
      'kind: Pod',
      'apiVersion: v1',
      'spec:',
      '  containers:',
      '    - name: web   # the app itself',
      '      image: nginx:1.27',
      '      env: [{ name: MODE, value: "yes" }, { name: PORT, value: "8080" }]',
      '      ports: [{ containerPort: 8080 }]',
      '  restartPolicy: Always',
      'metadata:',
      '  namespace: shop',
      '  name: web',
      '  labels: { zeta: z, alpha: a }',
      '  annotations:',
      '    sidecar-injector-webhook.morven.me/inject: "true"',
      '',
    ].join('\n');
    const service = ['apiVersion: v1', 'kind: Service', 'metadata: { name: web, namespace: shop }', 'spec: { ports: [{ port: 80 }] }', ''].join('\n');
    const file = path.join(work, 'mixed.yaml');
    fs.writeFileSync(file, `${configMap}---\n${pod}---\n${service}`);

    const run = runCliProcess(['inject', '-f', file, '--from', dist, '--namespace-labels', 'injection=enabled']);
    assert.equal(run.status, 0, describeRun(run));
    const documents = run.stdout.split(/^---\n/m);
    assert.equal(documents.length, 3, `three documents in input order\n${run.stdout}`);
    assert.equal(documents[0], configMap, 'the ConfigMap is printed exactly as written, comments included');
    assert.equal(documents[2], service, 'the Service is printed exactly as written');
    const [inputPod] = parseStream(pod);
    const [outputPod] = parseStream(documents[1]);
    assert.deepEqual(Object.keys(outputPod), ['kind', 'apiVersion', 'spec', 'metadata'], 'top-level keys keep the user order');
    assertKeepsUserContent(inputPod, outputPod);
    assert.deepEqual(names(outputPod.spec.containers), ['web', 'envoy', 'sidecar-nginx']);
    assert.match(documents[1], /value: "yes"/, 'a string YAML 1.1 reads as a boolean stays quoted, so kubectl sends a string');
    assert.match(documents[1], /- name: web # the app itself\n/, 'the patched object keeps the user comments');
  });

  test('explain names the reason for opted-out, unlabelled-namespace, kube-system, unannotated Deployment and already injected objects', () => {
    // An already injected pod: what inject printed for a recorded pod, fed back in.
    const recorded = path.join(work, 'demoapp.json');
    fs.writeFileSync(recorded, JSON.stringify(loadReview('pod-create-demoapp').request.object));
    const injected = runCliProcess(['inject', '-f', recorded, '--from', dist, '--namespace-labels', 'injection=enabled']);
    assert.equal(injected.status, 0, describeRun(injected));

    const cases = [
      'apiVersion: v1\nkind: Namespace\nmetadata: { name: shop, labels: { injection: enabled } }\n',
      'apiVersion: v1\nkind: Pod\nmetadata: { name: opted-out, namespace: shop, annotations: { sidecar-injector.io/inject: "false" } }\nspec: { containers: [{ name: app, image: busybox }] }\n',
      'apiVersion: v1\nkind: Pod\nmetadata: { name: elsewhere, namespace: unlabelled }\nspec: { containers: [{ name: app, image: busybox }] }\n',
      'apiVersion: v1\nkind: Pod\nmetadata: { name: system, namespace: kube-system }\nspec: { containers: [{ name: app, image: busybox }] }\n',
      'apiVersion: apps/v1\nkind: Deployment\nmetadata: { name: plain, namespace: shop }\nspec:\n  selector: { matchLabels: { app: plain } }\n  template:\n    metadata: { labels: { app: plain } }\n    spec: { containers: [{ name: app, image: busybox }] }\n',
    ];
    const file = path.join(work, 'cases.yaml');
    fs.writeFileSync(file, cases.join('---\n'));
    // The Namespace in the input labels "shop"; the recorded pod (namespace demoapp) arrives on stdin.
    const run = runCliProcess(['explain', '-o', 'json', '-f', file, '-f', '-', '--from', dist], { stdin: injected.stdout });
    assert.equal(run.status, 0, describeRun(run));
    const [namespace, optedOut, unlabelled, kubeSystem, deployment, already] = JSON.parse(run.stdout);

    assert.equal(namespace.injectableKind, false, 'the Namespace passes through');
    assert.match(namespace.outcome, /passed through/);

    assert.equal(optedOut.sentToWebhook, true, `opted-out pod reaches the webhook: ${JSON.stringify(optedOut.webhooks)}`);
    assert.equal(reasonsOf(optedOut).envoy, 'opted-out');
    assert.match(detailOf(optedOut, 'envoy'), /sidecar-injector\.io\/inject: "false" on the Pod/);
    assert.equal(optedOut.patchOperations, 0);

    assert.equal(unlabelled.sentToWebhook, false);
    assert.deepEqual(unlabelled.injections, [], 'no injection is decided when the webhook is not called');
    assert.equal(unlabelled.webhooks[0].namespaceSelector.matches, false);
    assert.match(unlabelled.webhooks[0].namespaceSelector.reason, /namespace "unlabelled" is not selected: needs label injection=enabled \(namespace "unlabelled" has no label injection\)/);

    assert.equal(kubeSystem.sentToWebhook, false);
    assert.equal(kubeSystem.namespaceLabels['kubernetes.io/metadata.name'], 'kube-system', 'the label the apiserver sets on every namespace');
    assert.match(kubeSystem.webhooks[0].namespaceSelector.reason, /excludes kubernetes\.io\/metadata\.name in \(kube-system, .*\) \(namespace "kube-system" has kubernetes\.io\/metadata\.name=kube-system\)/);

    assert.equal(deployment.sentToWebhook, true);
    assert.equal(reasonsOf(deployment)['wait-for-it'], 'trigger-not-met');
    assert.match(detailOf(deployment, 'wait-for-it'), /wants annotation com\.foreach\/wait-for-it; the Deployment has no such annotation/);
    assert.equal(reasonsOf(deployment).envoy, 'out-of-scope');
    assert.match(detailOf(deployment, 'envoy'), /targets Pod, not Deployment/);

    assert.equal(already.source, '<stdin>');
    assert.equal(already.namespace, 'demoapp');
    assert.equal(already.sentToWebhook, false, 'namespace demoapp has no injection label in this run');
    const again = JSON.parse(runCliProcess(['explain', '-o', 'json', '-f', '-', '--from', dist, '--namespace-labels', 'injection=enabled'], { stdin: injected.stdout }).stdout)[0];
    assert.equal(reasonsOf(again).envoy, 'already-injected');
    assert.match(detailOf(again, 'envoy'), /listed in sidecar-injector\.io\/status: "envoy"/);
    assert.equal(again.patchOperations, 0, 'nothing left to inject');
  });

  test('explain prints decisions and reasons for people by default', () => {
    const file = path.join(work, 'frontend.json');
    fs.writeFileSync(file, JSON.stringify(loadReview('deployment-create-frontend').request.object));
    const run = runCliProcess(['explain', '-f', file, '--from', dist, '--namespace-labels', 'injection=enabled']);
    assert.equal(run.status, 0, describeRun(run));
    assert.match(run.stdout, /^Deployment shop\/frontend \(.*frontend\.json, document 1, line 1\)$/m);
    assert.match(run.stdout, /webhook inject\.sidecar-injector\.sidecar-injector\.svc: called/);
    assert.match(run.stdout, /^ {4}wait-for-it +injected +trigger: annotation com\.foreach\/wait-for-it: "www\.google\.com:80"; adds init container wait-for-it$/m);
    assert.match(run.stdout, /result: injects wait-for-it/);
  });

  test('garbage YAML exits 1 naming the file and the document, and prints no manifests', () => {
    const file = path.join(work, 'garbage.yaml');
    fs.writeFileSync(file, 'apiVersion: v1\nkind: ConfigMap\nmetadata: { name: fine }\n---\nkind: Pod\nmetadata: { name: [unclosed\n---\n- just\n- a list\n');
    const run = runCliProcess(['inject', '-f', file, '--from', dist]);
    assert.equal(run.status, 1, describeRun(run));
    assert.equal(run.stdout, '', 'nothing half-done goes to stdout');
    assert.match(run.stderr, new RegExp(`${file.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}, document 2, line \\d+: not valid YAML`));
    assert.match(run.stderr, /document 3, line 7: is a list, not a Kubernetes object/);
  });

  test('usage errors exit 2 with a message, --help exits 0 on every command', async () => {
    const spawned = runCliProcess(['inject', '--from', dist]);
    assert.equal(spawned.status, 2, describeRun(spawned));
    assert.match(spawned.stderr, /no manifests: give -f/);

    const file = path.join(work, 'one.yaml');
    fs.writeFileSync(file, 'apiVersion: v1\nkind: ConfigMap\nmetadata: { name: x }\n');
    const inProcess = (args: string[]) => runInProcess(args);
    const usage: [string[], RegExp][] = [
      [['inject', '-f', file], /give --from <dist>/],
      [['inject', '-f', file, '--from', dist, '--config', 'c.json'], /either --from or --config/],
      [['explain', '-f', file, '--from', dist, '-o', 'yaml'], /Allowed choices are text, json/],
      [['diff', '-f', file, '--from', dist, '--no-such-flag'], /unknown option '--no-such-flag'/],
      [['inject', '-f', file, '--from', dist, '--namespace-labels', 'novalue'], /"novalue" is not key=value/],
      [['inject', '-f', file, '--from', dist, '--namespace', 'Not_A_Name'], /--namespace "Not_A_Name"/],
      [['frobnicate'], /unknown command 'frobnicate'/],
      [[], /Usage: cdk8s-sidecar-injector/],
    ];
    for (const [args, message] of usage) {
      const result = await inProcess(args);
      assert.equal(result.code, 2, `${args.join(' ')} exits 2; stderr: ${result.stderr}`);
      assert.match(result.stderr, message, `${args.join(' ')}`);
    }
    for (const command of [[], ['inject'], ['explain'], ['diff']]) {
      const result = await inProcess([...command, '--help']);
      assert.equal(result.code, 0, `${command.join(' ')} --help exits 0`);
      assert.match(result.stdout, new RegExp(`Usage: cdk8s-sidecar-injector ${command.join(' ')}`));
    }
    const missing = await inProcess(['inject', '-f', path.join(work, 'missing.yaml'), '--from', dist]);
    assert.equal(missing.code, 1, 'a file that does not exist is bad input');
    assert.match(missing.stderr, /missing\.yaml: cannot read: no such file or directory/);
  });

  test('diff prints the patch the webhook answers, per object', async () => {
    const review = loadReview('pod-create-sleep');
    const file = path.join(work, 'sleep.json');
    fs.writeFileSync(file, JSON.stringify(review.request.object));
    const run = await runInProcess(['diff', '-o', 'json', '-f', file, '--from', dist, '--namespace-labels', 'injection=enabled']);
    assert.equal(run.code, 0, run.stderr);
    const [object] = JSON.parse(run.stdout);
    assert.deepEqual(object.patch, decodePatch(mutate(review.request, config)), 'the JSONPatch of the webhook\'s response');
    assert.ok(object.patch.length > 0);
    const text = await runInProcess(['diff', '-f', file, '--from', dist, '--namespace-labels', 'injection=enabled']);
    assert.match(text.stdout, /^# Pod shop\/sleep \(.*sleep\.json, document 1, line 1\): injects envoy, nginx-sidecar \(\d+ patch operations\)$/m);
    assert.match(text.stdout, /^add \/spec\/containers\/- \{"name":"envoy","image":"envoyproxy\/envoy:v1\.20\.3".*\}$/m);
  });

  test('inject leaves objects the apiserver would not send as they are, and says why on stderr', async () => {
    const object = loadReview('pod-create-sleep').request.object;
    const run = await runInProcess(['inject', '-f', '-', '--from', dist], JSON.stringify(object));
    assert.equal(run.code, 0, run.stderr);
    assert.deepEqual(parseStream(run.stdout), [object], 'unchanged: namespace shop has no injection label');
    assert.match(run.stderr, /^note: <stdin>, document 1, line 1: Pod shop\/sleep: not injected: namespace "shop" is not selected: needs label injection=enabled/m);
  });

  test('a v1 List (kubectl get -o yaml) has each of its items previewed, and is printed back as one List', async () => {
    const list = {
      apiVersion: 'v1',
      kind: 'List',
      items: [
        { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'settings', namespace: 'shop' }, data: { a: 'b' } },
        loadReview('pod-create-sleep').request.object,
      ],
      metadata: { resourceVersion: '' },
    };
    const args = ['-f', '-', '--from', dist, '--namespace-labels', 'injection=enabled'];
    const injected = await runInProcess(['inject', ...args], JSON.stringify(list));
    assert.equal(injected.code, 0, injected.stderr);
    const [output] = parseStream(injected.stdout);
    assert.deepEqual(output.items[0], list.items[0], 'the ConfigMap item is untouched');
    assert.deepEqual(output.items[1], applyResponse(list.items[1], mutate(loadReview('pod-create-sleep').request, config)), 'the pod item is patched as the webhook patches it');
    assertKeepsUserContent(list, output);
    const explained = JSON.parse((await runInProcess(['explain', '-o', 'json', ...args], JSON.stringify(list))).stdout);
    assert.deepEqual(explained.map((object: any) => [object.kind, object.item]), [['ConfigMap', 0], ['Pod', 1]]);
    assert.deepEqual(explained[1].injected, ['envoy', 'nginx-sidecar']);
  });

  test('with --config only, explain decides the injections and says the webhook configuration was not checked', async () => {
    const configFile = path.join(work, 'config.json');
    fs.writeFileSync(configFile, JSON.stringify(config));
    const object = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'solo' }, spec: { containers: [{ name: 'app', image: 'busybox' }] } };
    const run = await runInProcess(['explain', '-o', 'json', '-f', '-', '--config', configFile, '--namespace', 'kube-system'], JSON.stringify(object));
    assert.equal(run.code, 0, run.stderr);
    const [explanation] = JSON.parse(run.stdout);
    assert.equal(explanation.namespace, 'kube-system', 'an object without metadata.namespace is in --namespace');
    assert.equal(explanation.webhooks, null);
    assert.equal(reasonsOf(explanation).envoy, 'injected');
    const text = await runInProcess(['explain', '-f', '-', '--config', configFile], JSON.stringify(object));
    assert.match(text.stdout, /Pod default\/solo .*\n {2}webhook: not evaluated \(no webhook configuration/);
  });
  test('inject keeps keys named "__proto__", in the user\'s objects and in injected content', async () => {
    // YAML and JSON make "__proto__" an ordinary key; the apiserver keeps it too.
    const configFile = path.join(work, 'proto-config.json');
    fs.writeFileSync(
      configFile,
      '{"injections":[{"name":"proxy","trigger":{"type":"always"},"containers":[{"name":"proxy","image":"proxy:1","futureField":{"__proto__":{"owner":"{{name}}"}}}]}]}',
    );
    const input = 'apiVersion: v1\nkind: Pod\nmetadata:\n  name: app\nspec:\n  containers:\n    - name: app\n      image: app:1\n      extra:\n        __proto__: {kept: true}\n';
    const run = await runInProcess(['inject', '-f', '-', '--config', configFile], input);
    assert.equal(run.code, 0, run.stderr);
    const [output] = parseStream(run.stdout);
    assert.equal(JSON.stringify(output.spec.containers[0].extra), '{"__proto__":{"kept":true}}');
    assert.equal(JSON.stringify(output.spec.containers[1].futureField), '{"__proto__":{"owner":"app"}}');
  });
});
