// `status` and `rollout --dry-run`, run as a user runs them: a real process, the config in a file,
// and pods as `kubectl get namespaces,replicasets,pods -A -o json` prints them, on stdin. The pods
// are made by the engine the webhook runs, under an older config (A) and the current one (B).
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import { Injection, injectionHash, resolveInjectorConfig, type ResolvedInjectorConfig } from '../../webhook/config';
import { evaluate } from '../../webhook/engine';
import { createRequestFor } from '../../webhook/fleet/admission-request';
import { parseSelector } from '../../webhook/cli/day-two-commands';
import { applyResponse } from '../support/recorded-reviews';
import { describeRun, runCliProcess } from '../support/cli-process';
import { makeTempDir, synthChart } from '../support/synth-helpers';

const envoy = (image: string): Injection => ({ name: 'envoy', trigger: { type: 'always' }, containers: [{ name: 'envoy', image }] });
const METRICS: Injection = { name: 'metrics', trigger: { type: 'labelSelector', matchLabels: { metrics: 'on' } }, containers: [{ name: 'exporter', image: 'prom/exporter:1' }] };
const CONFIG_A = resolveInjectorConfig({ injections: [envoy('envoyproxy/envoy:v1.31.0'), METRICS] });
/** B bumps Envoy and drops the metrics injection. */
const CONFIG_B = resolveInjectorConfig({ injections: [envoy('envoyproxy/envoy:v1.31.1')] });
const HASH_A = injectionHash(CONFIG_A.injections[0]);
const HASH_B = injectionHash(CONFIG_B.injections[0]);

const dir = makeTempDir('status-cli');
const configB = path.join(dir, 'config-b.json');
fs.writeFileSync(configB, JSON.stringify(CONFIG_B));

/** A pod of Deployment `deployment` (through ReplicaSet `<deployment>-7c9d8f`), as its controller creates it. */
function deploymentPod(namespace: string, deployment: string, suffix: string, labels: Record<string, string> = {}): any {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: `${deployment}-7c9d8f-${suffix}`,
      namespace,
      labels: { app: deployment, 'pod-template-hash': '7c9d8f', ...labels },
      ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: `${deployment}-7c9d8f`, uid: 'u', controller: true }],
    },
    spec: { containers: [{ name: 'app', image: 'registry.example/app:1' }] },
  };
}

/** The pod as the apiserver stores it once the webhook answered under `config` (undefined: the webhook was down). */
function admitted(pod: any, config: ResolvedInjectorConfig | undefined): any {
  if (!config) return pod;
  return applyResponse(pod, evaluate(createRequestFor(pod, pod.metadata.namespace, 'u'), config).response);
}

function list(...items: any[]): string {
  const namespaces = [...new Set(items.map((item) => item.metadata.namespace))].map((name) => ({ apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels: { team: 'shop' } } }));
  return JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [...namespaces, ...items] });
}

const outdated = [admitted(deploymentPod('shop', 'web', 'a1', { metrics: 'on' }), CONFIG_A), admitted(deploymentPod('shop', 'web', 'a2', { metrics: 'on' }), CONFIG_A)];
const current = admitted(deploymentPod('shop', 'api', 'b1'), CONFIG_B);
const missing = admitted(deploymentPod('shop', 'cart', 'c1'), undefined);
const bare = admitted({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'debug', namespace: 'ops' }, spec: { containers: [{ name: 'sh', image: 'busybox' }] } }, CONFIG_A);
/** Injected by a version that wrote no hashes. */
const unknown = admitted(deploymentPod('ops', 'legacy', 'd1'), CONFIG_B);
delete unknown.metadata.annotations['sidecar-injector.io/injection-hashes'];

test('status reports outdated, no longer configured, missing and version-unknown pods per workload, and exits 4 when a pod misses an injection', () => {
  const run = runCliProcess(['status', '--config', configB, '--stdin'], { stdin: list(...outdated, current, missing, bare, unknown) });
  assert.equal(run.status, 4, describeRun(run));
  const lines = run.stdout.split('\n');
  const row = (workload: string) => lines.find((line) => line.includes(` ${workload} `) || line.endsWith(` ${workload}`))?.trim().split(/\s+/);
  // NAMESPACE WORKLOAD PODS UP-TO-DATE OUTDATED MISSING NOT-CONFIGURED UNKNOWN
  assert.deepEqual(row('Deployment/web'), ['shop', 'Deployment/web', '2', '0', '2', '0', '2', '0'], run.stdout);
  assert.deepEqual(row('Deployment/api'), ['shop', 'Deployment/api', '1', '1', '0', '0', '0', '0'], run.stdout);
  assert.deepEqual(row('Deployment/cart'), ['shop', 'Deployment/cart', '1', '0', '0', '1', '0', '0'], run.stdout);
  assert.deepEqual(row('Pod/debug'), ['ops', 'Pod/debug', '1', '0', '1', '0', '0', '0'], run.stdout);
  assert.deepEqual(row('Deployment/legacy'), ['ops', 'Deployment/legacy', '1', '0', '0', '0', '0', '1'], run.stdout);
  assert.match(run.stdout, new RegExp(`envoy: outdated in 2 pods \\(pod has ${HASH_A}, configured now ${HASH_B}\\)`));
  assert.match(run.stdout, /metrics: no longer configured, still in 2 pods/);
  assert.match(run.stdout, /envoy: missing from 1 pod /);
  assert.match(run.stdout, /ops Pod\/debug \(a bare pod: rollout does not restart it\)/);
  assert.match(run.stdout, /6 pods: 1 up to date, 3 outdated, 1 missing an injection, 2 with one no longer configured, 1 version unknown, 0 without injections/);
});

test('status --output json names each finding with its hashes and pods', () => {
  const run = runCliProcess(['status', '--config', configB, '--stdin', '-o', 'json'], { stdin: list(...outdated, current, missing) });
  assert.equal(run.status, 4, describeRun(run));
  const report = JSON.parse(run.stdout);
  assert.deepEqual(report.injections, [{ name: 'envoy', hash: HASH_B }]);
  const web = report.workloads.find((workload: any) => workload.name === 'web');
  assert.equal(web.via, 'inferred', 'no ReplicaSet in the input: the Deployment is read from its name');
  assert.deepEqual(web.findings, [
    { injection: 'envoy', state: 'outdated', podHash: HASH_A, configuredHash: HASH_B, pods: ['web-7c9d8f-a1', 'web-7c9d8f-a2'] },
    { injection: 'metrics', state: 'no-longer-configured', podHash: injectionHash(CONFIG_A.injections[1]), configuredHash: null, pods: ['web-7c9d8f-a1', 'web-7c9d8f-a2'] },
  ]);
  assert.deepEqual(report.summary, { pods: 4, podsWithoutInjections: 0, upToDate: 1, outdated: 2, missing: 1, noLongerConfigured: 2, versionUnknown: 0 });
  assert.equal(report.exitCode, 4);
  assert.deepEqual(
    report.pods.map((pod: any) => [pod.name, pod.state, pod.injections.map((entry: any) => entry.state).join(',')]),
    [['web-7c9d8f-a1', 'stale', 'outdated,no-longer-configured'], ['web-7c9d8f-a2', 'stale', 'outdated,no-longer-configured'], ['api-7c9d8f-b1', 'up-to-date', 'up-to-date'], ['cart-7c9d8f-c1', 'stale', 'missing']],
  );
});

test('status exits 3 for outdated pods alone, 5 for unknown versions alone, 0 when every pod is up to date', () => {
  const cases: [string, any[], number][] = [
    ['outdated', outdated, 3],
    ['version unknown', [unknown], 5],
    ['up to date', [current], 0],
    ['nothing injected and nothing owed', [{ ...bare, metadata: { name: 'x', namespace: 'ops', annotations: { 'sidecar-injector.io/inject': 'false' } } }], 0],
  ];
  for (const [what, pods, expected] of cases) {
    const run = runCliProcess(['status', '--config', configB, '-f', '-'], { stdin: list(...pods) });
    assert.equal(run.status, expected, `${what}: ${describeRun(run)}`);
  }
});

test('status selects pods by namespace and label selector, as kubectl does', () => {
  const run = runCliProcess(['status', '--config', configB, '--stdin', '-n', 'shop', '-l', 'app in (api, web),metrics', '-o', 'json'], { stdin: list(...outdated, current, missing, bare) });
  const report = JSON.parse(run.stdout);
  assert.deepEqual(report.workloads.map((workload: any) => `${workload.namespace}/${workload.name}`), ['shop/web'], describeRun(run));
});

test('a Deployment that owns the ReplicaSet in the input is found through ownerReferences', () => {
  const replicaSet = { apiVersion: 'apps/v1', kind: 'ReplicaSet', metadata: { name: 'web-7c9d8f', namespace: 'shop', ownerReferences: [{ apiVersion: 'apps/v1', kind: 'Deployment', name: 'storefront', uid: 'd', controller: true }] } };
  const run = runCliProcess(['status', '--config', configB, '--stdin', '-o', 'json'], { stdin: list(replicaSet, ...outdated) });
  const report = JSON.parse(run.stdout);
  assert.deepEqual(report.workloads.map((workload: any) => [workload.kind, workload.name, workload.via]), [['Deployment', 'storefront', 'ownerReferences']], describeRun(run));
});

test('rollout --dry-run plans the restarts of the stale workloads, lists bare pods as not touched, and changes nothing', () => {
  const run = runCliProcess(['rollout', '--config', configB, '--stdin', '--dry-run', '--max-concurrent', '2'], { stdin: list(...outdated, current, missing, bare, unknown) });
  assert.equal(run.status, 0, describeRun(run));
  assert.match(run.stdout, /plan: restart 2 workloads, 2 at a time\n  Deployment shop\/cart: 1 pod \(envoy missing\).*\n  Deployment shop\/web: 2 pods \(envoy outdated, metrics no-longer-configured\)/);
  assert.match(run.stdout, /not touched: 1\n  Pod ops\/debug: 1 pod \(envoy outdated\): a bare pod: delete it and create it again/);
  assert.doesNotMatch(run.stdout, /legacy|api/, 'up-to-date and version-unknown workloads are not restarted');
  assert.match(run.stdout, /dry run: nothing changed/);
  const withUnknown = runCliProcess(['rollout', '--config', configB, '--stdin', '--dry-run', '--include-unknown'], { stdin: list(unknown) });
  assert.match(withUnknown.stdout, /Deployment ops\/legacy: 1 pod \(envoy version-unknown\)/, describeRun(withUnknown));
});

test('usage errors exit 2; an unreachable cluster exits 6', () => {
  const usage: string[][] = [
    ['status', '--config', configB, '--stdin', '-n', 'shop', '-A'],
    ['status', '--stdin'],
    ['status', '--config', configB, '--stdin', '-l', 'a in b'],
    ['rollout', '--config', configB, '--stdin'],
    ['rollout', '--config', configB, '--stdin', '--dry-run', '--max-concurrent', '0'],
  ];
  for (const args of usage) {
    const run = runCliProcess(args, { stdin: list(current) });
    assert.equal(run.status, 2, `${args.join(' ')}: ${describeRun(run)}`);
    assert.match(run.stderr, /error: /);
  }
  const kubeconfig = path.join(dir, 'kubeconfig');
  // A port nothing listens on: 127.0.0.1:1.
  fs.writeFileSync(kubeconfig, 'apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}}]\nusers: [{name: u, user: {token: t}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n');
  const run = runCliProcess(['status', '--config', configB, '--kubeconfig', kubeconfig]);
  assert.equal(run.status, 6, describeRun(run));
  // The first request status makes: the selected namespace's labels, which judging its pods needs first.
  assert.match(run.stderr, /error: reading namespace default: .*ECONNREFUSED/);
});

test('parseSelector reads kubectl label selectors', () => {
  assert.deepEqual(parseSelector('a=b,c==d,e!=f,g in (x, y),h notin (z),i,!j'), {
    matchLabels: { a: 'b', c: 'd' },
    matchExpressions: [
      { key: 'e', operator: 'NotIn', values: ['f'] },
      { key: 'g', operator: 'In', values: ['x', 'y'] },
      { key: 'h', operator: 'NotIn', values: ['z'] },
      { key: 'i', operator: 'Exists' },
      { key: 'j', operator: 'DoesNotExist' },
    ],
  });
});

test('status --from a policy backend\'s output reads the config from the policies and the scope from their bindings, and finds what it finds in the webhook\'s output', () => {
  // Scope: namespaces labelled team=shop (kube-system is excluded by name however labelled), and
  // not the injector's own pods (its exclusion label).
  const props = { injections: CONFIG_B.injections.map(({ targetKinds: _, ...injection }) => injection), podSecurity: 'privileged' as const, namespaceSelector: { matchLabels: { team: 'shop' } } };
  const outOfScope = [admitted(deploymentPod('kube-system', 'dns', 'k1'), undefined), admitted(deploymentPod('shop', 'injector', 'x1', { 'sidecar-injector.io/webhook': 'x' }), undefined)];
  const pods = list(...outdated, current, missing, bare, unknown, ...outOfScope);
  const reports = new Map<string, any>();
  for (const backend of ['webhook', 'admissionPolicy', 'both-where-possible'] as const) {
    const dist = path.join(dir, `dist-${backend}`);
    fs.mkdirSync(dist);
    const { manifests, yamlText } = synthChart({ ...props, backend });
    assert.equal(manifests.some((object) => object.kind === 'ConfigMap'), backend === 'webhook', `${backend}: a ConfigMap only with the webhook`);
    fs.writeFileSync(path.join(dist, 'injector.k8s.yaml'), yamlText);
    const run = runCliProcess(['status', '--from', dist, '--stdin', '-o', 'json'], { stdin: pods });
    assert.equal(run.status, 4, `${backend}: ${describeRun(run)}`);
    const { config, ...report } = JSON.parse(run.stdout);
    assert.match(config, backend === 'webhook' ? /^ConfigMap sidecar-injector\/sidecar-injector-config / : /^MutatingAdmissionPolicy sidecar-injector\.sidecar-injector\.pods .*, MutatingAdmissionPolicyBinding sidecar-injector\.sidecar-injector\.pods /, backend);
    reports.set(backend, report);
  }
  const findings = (report: any) => report.workloads.map((w: any) => `${w.namespace} ${w.name}: ${w.findings.map((f: any) => `${f.injection} ${f.state}`).join(', ')}`);
  assert.deepEqual(findings(reports.get('webhook')), [
    'ops legacy: envoy version-unknown',
    'ops debug: envoy outdated',
    'shop api: ',
    'shop cart: envoy missing',
    'shop web: envoy outdated, metrics no-longer-configured',
  ]);
  assert.deepEqual(reports.get('admissionPolicy'), reports.get('webhook'));
  assert.deepEqual(reports.get('both-where-possible'), reports.get('webhook'));
  // Without the bindings' scope the out-of-scope pods would be owed the injection too.
  const unscoped = runCliProcess(['status', '--config', configB, '--stdin', '-o', 'json'], { stdin: pods });
  assert.deepEqual(findings(JSON.parse(unscoped.stdout)).filter((line: string) => /dns|injector/.test(line)), ['kube-system dns: envoy missing', 'shop injector: envoy missing']);
});

test('status --from refuses policies synthesized without the config annotation, and names --config', () => {
  const dist = path.join(dir, 'dist-old-policies');
  fs.mkdirSync(dist);
  const { yamlText } = synthChart({ backend: 'admissionPolicy', injections: CONFIG_B.injections.map(({ targetKinds: _, ...injection }) => injection), podSecurity: 'privileged' });
  fs.writeFileSync(path.join(dist, 'injector.k8s.yaml'), yamlText.replace(/^ {4}sidecar-injector\.io\/config\.json: .*\n/m, '').replace(/^ {2}annotations:\n(?= {2}\S)/m, ''));
  const run = runCliProcess(['status', '--from', dist, '--stdin'], { stdin: list(current) });
  assert.equal(run.status, 1, describeRun(run));
  assert.match(run.stderr, /holds MutatingAdmissionPolicies \(MutatingAdmissionPolicy sidecar-injector\.sidecar-injector\.pods\) without the sidecar-injector\.io\/config\.json annotation .*give --config/);
});

test('an injection that targets Deployments is owed by pods of Deployments, not by bare pods', () => {
  const templateOnly = resolveInjectorConfig({ injections: [{ name: 'wait', trigger: { type: 'always' }, targetKinds: ['Deployment'], initContainers: [{ name: 'wait', image: 'busybox:1.36' }] }] });
  const config = path.join(dir, 'config-template.json');
  fs.writeFileSync(config, JSON.stringify(templateOnly));
  const bareOne = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'solo', namespace: 'shop' }, spec: { containers: [{ name: 'sh', image: 'busybox' }] } };
  const run = runCliProcess(['status', '--config', config, '--stdin', '-o', 'json'], { stdin: list(deploymentPod('shop', 'cart', 'c1'), bareOne) });
  assert.equal(run.status, 4, describeRun(run));
  const report = JSON.parse(run.stdout);
  assert.deepEqual(report.pods.map((pod: any) => [pod.name, pod.state]), [['cart-7c9d8f-c1', 'stale'], ['solo', 'none']]);
  assert.deepEqual(report.workloads.map((w: any) => [w.name, w.findings.map((f: any) => `${f.injection} ${f.state}`)]), [['cart', ['wait missing']]]);
});
