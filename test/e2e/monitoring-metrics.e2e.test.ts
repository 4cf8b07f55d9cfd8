// npm run e2e: the apiserver's series the monitoring reads (charts/monitoring/apiserver-metrics.ts), seen
// in a real kube-apiserver's /metrics with the labels and values the rules select on. Made to appear as
// they do in a cluster in trouble: a webhook with failurePolicy Ignore that nothing answers (fail-open),
// one with Fail (refused, calling_webhook_error), and a MutatingAdmissionPolicy whose CEL fails at runtime,
// under Ignore and under Fail, beside one that succeeds (the SLO's good evaluations). Pods are created with dryRun=All: admission runs, nothing is stored.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import * as net from 'node:net';
import { APISERVER_METRICS, APISERVER_WEBHOOK_LATENCY_BOUNDS, apiserverSeriesNames } from '../../charts/monitoring/apiserver-metrics';
import type { AdmissionPolicyApiVersion } from '../../charts/admission-policy';
import { ControlPlane, binaryVersion, findBinaries, policyApiVersionFor, policyApiserverFlags } from './support/control-plane';
import { podCreatePolicy } from './support/policy-plane';

const binaries = findBinaries();
const skip = typeof binaries === 'string' ? binaries : false;
if (skip) console.log(`npm run e2e ${skip}`);

const LABEL = 'e2e.sidecar-injector.io/monitoring';
const NAMESPACES = ['fail-open', 'refused', 'policy-ignore', 'policy-fail', 'policy-ok'] as const;
let plane: ControlPlane | undefined;
let minor = 0;
let apiVersion: AdmissionPolicyApiVersion = 'v1alpha1';
let metrics = '';

/** A port nothing listens on: every call to it fails at once (connection refused). */
async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

function deadWebhook(name: string, namespace: string, failurePolicy: 'Ignore' | 'Fail', port: number) {
  return {
    name,
    clientConfig: { url: `https://127.0.0.1:${port}/mutate`, caBundle: Buffer.from(plane!.pki.caCertificate).toString('base64') },
    rules: [{ apiGroups: [''], apiVersions: ['v1'], resources: ['pods'], operations: ['CREATE'], scope: 'Namespaced' }],
    namespaceSelector: { matchLabels: { [LABEL]: namespace } },
    sideEffects: 'None',
    admissionReviewVersions: ['v1'],
    timeoutSeconds: 2,
    failurePolicy,
  };
}

/** A policy whose mutation fails at runtime: it reads a label no pod has ("no such key"). */
function failingPolicy(namespace: string, failurePolicy: 'Ignore' | 'Fail'): any[] {
  const expression = '[JSONPatch{op: "add", path: "/metadata/annotations", value: {"copied": object.metadata.labels["e2e-absent"]}}]';
  return podCreatePolicy(`e2e-monitoring-${namespace}`, apiVersion, expression, failurePolicy, { namespaceSelector: { matchLabels: { [LABEL]: namespace } } });
}

/** A policy whose mutation succeeds: the evaluations the policies' SLO counts as good. */
function workingPolicy(namespace: string): any[] {
  const expression = '[JSONPatch{op: "add", path: "/metadata/annotations", value: {"e2e-monitoring": "ok"}}]';
  return podCreatePolicy(`e2e-monitoring-${namespace}`, apiVersion, expression, 'Fail', { namespaceSelector: { matchLabels: { [LABEL]: namespace } } });
}

const pod = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'probe', labels: { app: 'probe' } }, spec: { containers: [{ name: 'app', image: 'busybox:1.36' }] } };
const create = (namespace: string) => plane!.request('POST', `/api/v1/namespaces/${namespace}/pods?dryRun=All`, pod);

before(async () => {
  if (skip) return;
  const bins = binaries as Exclude<typeof binaries, string>;
  const version = binaryVersion(bins.kubeApiserver);
  minor = Number(/v1\.(\d+)/.exec(version)?.[1] ?? 0);
  apiVersion = policyApiVersionFor(version);
  plane = await ControlPlane.start(bins, { apiserverFlags: minor >= 36 ? [] : policyApiserverFlags(apiVersion) });
  console.log(`kube-apiserver ${version}; policies as admissionregistration.k8s.io/${apiVersion}`);
  for (const name of NAMESPACES) await plane.ok('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels: { [LABEL]: name } } });
  const port = await closedPort();
  await plane.ok('POST', '/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations', {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'MutatingWebhookConfiguration',
    metadata: { name: 'e2e-monitoring' },
    webhooks: [deadWebhook('fail-open.e2e.sidecar-injector.io', 'fail-open', 'Ignore', port), deadWebhook('refused.e2e.sidecar-injector.io', 'refused', 'Fail', port)],
  });
  for (const object of [...failingPolicy('policy-ignore', 'Ignore'), ...failingPolicy('policy-fail', 'Fail'), ...workingPolicy('policy-ok')]) {
    const plural = object.kind === 'MutatingAdmissionPolicy' ? 'mutatingadmissionpolicies' : 'mutatingadmissionpolicybindings';
    await plane.ok('POST', `/apis/admissionregistration.k8s.io/${apiVersion}/${plural}`, object);
  }
  // The apiserver loads webhooks and policies asynchronously: create until each namespace shows its fault.
  const deadline = Date.now() + 60_000;
  const seen: Record<string, string> = {};
  for (;;) {
    const [open, refused, policyIgnore, policyFail, policyOk] = await Promise.all(NAMESPACES.map(create));
    seen['fail-open'] = `${open.status} ${open.body?.metadata?.annotations ? JSON.stringify(open.body.metadata.annotations) : ''}`;
    seen.refused = `${refused.status}`;
    seen['policy-fail'] = `${policyFail.status}`;
    seen['policy-ignore'] = `${policyIgnore.status}`;
    const mutated = policyOk.body?.metadata?.annotations?.['e2e-monitoring'] === 'ok';
    seen['policy-ok'] = `${policyOk.status} ${mutated ? 'mutated' : 'not yet'}`;
    metrics = (await plane.bytes('/metrics')).toString('utf8');
    const failedOpen = new RegExp(`^${APISERVER_METRICS.webhookFailOpen.name}\\{name="fail-open\\.e2e`, 'm').test(metrics);
    if (failedOpen && refused.status >= 400 && policyFail.status >= 400 && mutated) break;
    if (Date.now() > deadline) throw new Error(`the faults did not show within 60 s: ${JSON.stringify(seen)}`);
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  // A few more of each, so every counter has moved more than once.
  for (let i = 0; i < 3; i++) await Promise.all(NAMESPACES.map(create));
  metrics = (await plane.bytes('/metrics')).toString('utf8');
});

after(async () => {
  await plane?.stop();
});

const series = (name: string) => metrics.split('\n').filter((line) => line.startsWith(`${name}{`) || line.startsWith(`${name} `));

test('the apiserver exports every series of ours that its version has, and not the newer ones', { skip }, () => {
  const exported = new Set(metrics.split('\n').filter((line) => line && !line.startsWith('#')).map((line) => line.split(/[{ ]/)[0]));
  const missing = apiserverSeriesNames(minor).filter((name) => !exported.has(name));
  assert.deepEqual(missing, [], `series the monitoring reads that kube-apiserver 1.${minor} does not export`);
  const newer = apiserverSeriesNames().filter((name) => !apiserverSeriesNames(minor).includes(name));
  assert.deepEqual(newer.filter((name) => exported.has(name)), [], `series listed as newer than 1.${minor} that it exports: the list's "since" is wrong`);
});

test('a failed call under Ignore is a fail-open of that webhook; under Fail, a calling_webhook_error refusal', { skip }, () => {
  assert.ok(series(APISERVER_METRICS.webhookFailOpen.name).some((line) => /name="fail-open\.e2e\.sidecar-injector\.io"/.test(line) && /type="admit"/.test(line)), series(APISERVER_METRICS.webhookFailOpen.name).join('\n'));
  const refusals = series(APISERVER_METRICS.webhookRejections.name).filter((line) => line.includes('name="refused.e2e.sidecar-injector.io"'));
  assert.ok(refusals.some((line) => /error_type="calling_webhook_error"/.test(line) && /operation="CREATE"/.test(line)), refusals.join('\n'));
  const calls = series(`${APISERVER_METRICS.webhookAdmissionDuration.name}_count`).filter((line) => line.includes('name="fail-open.e2e.sidecar-injector.io"'));
  assert.ok(calls.length > 0, 'a failed call is observed in the latency histogram too, which the SLO counts on');
});

test('the webhook latency histogram has the bounds the SLO and the latency alert choose from', { skip }, () => {
  const bounds = series(`${APISERVER_METRICS.webhookAdmissionDuration.name}_bucket`)
    .filter((line) => line.includes('name="fail-open.e2e.sidecar-injector.io"') && line.includes('operation="CREATE"'))
    .map((line) => /le="([^"]+)"/.exec(line)![1])
    .filter((le) => le !== '+Inf');
  assert.deepEqual([...new Set(bounds)].map(Number), [...APISERVER_WEBHOOK_LATENCY_BOUNDS]);
});

test('a policy whose CEL fails at runtime: per policy from 1.34 (invalid_error), as the plugin\'s refusals under Fail before', { skip }, () => {
  if (minor >= 34) {
    const checks = series(APISERVER_METRICS.mutatingPolicyChecks.name);
    for (const namespace of ['policy-ignore', 'policy-fail']) {
      assert.ok(checks.some((line) => line.includes(`policy="e2e-monitoring-${namespace}"`) && line.includes('error_type="invalid_error"') && line.includes('policy_binding=')), `${namespace}:\n${checks.join('\n')}`);
    }
  }
  const plugin = series(`${APISERVER_METRICS.controllerAdmissionDuration.name}_count`).filter((line) => line.includes('name="MutatingAdmissionPolicy"'));
  assert.ok(plugin.some((line) => line.includes('rejected="true"') && line.includes('type="admit"') && line.includes('operation="CREATE"')), plugin.join('\n'));
});

test('from 1.34 a policy\'s evaluations without an error are counted too (error_type="no_error"): the policies\' SLO divides by them; before, nothing to divide by', { skip }, () => {
  if (minor < 34) {
    assert.deepEqual(series(APISERVER_METRICS.mutatingPolicyChecks.name), [], `kube-apiserver 1.${minor} counts policy evaluations: the policies' SLO could start sooner`);
    return;
  }
  const good = series(APISERVER_METRICS.mutatingPolicyChecks.name).filter((line) => line.includes('policy="e2e-monitoring-policy-ok"'));
  const counted = good.filter((line) => line.includes('error_type="no_error"') && line.includes('policy_binding=')).map((line) => Number(line.split(' ').at(-1)));
  assert.ok(counted.length === 1 && counted[0] >= 4, `the working policy's series:\n${good.join('\n')}`);
  assert.deepEqual(good.filter((line) => !line.includes('error_type="no_error"')), [], 'a working policy counted with an error');
});
