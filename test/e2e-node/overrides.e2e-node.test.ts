// npm run e2e:node, overrides (issue 39): on its own one-node cluster (support/node-suite.ts), the default
// app with Envoy offering its cpu and memory requests: a workload's annotation and its namespace's
// default reach the running Envoy, bad values run with the defaults and kubectl prints the warning, a
// ResourceQuota on limits admits the pod, and status names the ignored values.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { NodeCluster } from './support/node-cluster';
import { cli, containerStatus, describePod, describeRun, isReady, kubectl, listPods, waitForPod } from './support/node-checks';
import { BACKEND, ENABLED, ENVOY_FIRST, WEBHOOK, app, apply, applyConfig, cleanUp, namespace, progress, shown, skip, startSuite, stopSuite, variant } from './support/node-suite';

let cluster: NodeCluster;
before(async () => {
  if (!skip) cluster = await startSuite();
});
after(stopSuite);

describe(`overrides on a node (${BACKEND})`, { skip }, () => {
  test("overrides: the Deployment's cpu request and the namespace's memory request reach the running Envoy; bad values run with the defaults and kubectl prints the warning; a ResourceQuota on limits admits the pod; status exits 0", async () => {
    const overridden = variant(ENVOY_FIRST, { overrides: true });
    await applyConfig(overridden);
    namespace('tuned', ENABLED);
    kubectl(cluster, ['annotate', 'namespace', 'tuned', 'envoy.example.com/memory-request=256Mi', '--overwrite']);
    if (WEBHOOK) {
      // The webhook learns the annotation from its namespace watch: a dry run shows when it has.
      const probe = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'probe', namespace: 'tuned' }, spec: { containers: [app('app')] } };
      await cluster.until('the namespace default seen by the webhook', async () => {
        const made = await cluster.plane.ok('POST', '/api/v1/namespaces/tuned/pods?dryRun=All', probe);
        return made.spec.containers.find((c: any) => c.name === 'envoy')?.resources?.requests?.memory === '256Mi';
      }, 60_000);
    }
    const deployment = (name: string, ns: string, annotations: Record<string, string>, appResources?: object) => ({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name, namespace: ns },
      spec: {
        replicas: 1,
        selector: { matchLabels: { app: name } },
        template: { metadata: { labels: { app: name }, annotations }, spec: { containers: [app('app', appResources ? { resources: appResources } : {})] } },
      },
    });
    const envoyOf = async (ns: string, name: string) => {
      kubectl(cluster, ['-n', ns, 'rollout', 'status', `deploy/${name}`, '--timeout=180s']);
      const [pod] = (await listPods(cluster, ns, `app=${name}`)).filter((candidate) => !candidate.metadata.deletionTimestamp);
      const ready = await waitForPod(cluster, ns, pod.metadata.name, 'Ready', isReady);
      return { pod: ready, envoy: ready.spec.containers.find((c: any) => c.name === 'envoy'), running: containerStatus(ready, 'envoy') };
    };

    apply(deployment('plain', 'tuned', {}));
    apply(deployment('api', 'tuned', { 'envoy.example.com/cpu-request': '250m' }));
    const plain = await envoyOf('tuned', 'plain');
    const api = await envoyOf('tuned', 'api');
    assert.deepEqual(api.envoy.resources, { requests: { cpu: '250m', memory: '256Mi' }, limits: { cpu: '1', memory: '256Mi' } }, describePod(api.pod));
    assert.ok(api.running?.state?.running, describePod(api.pod));
    assert.equal(api.pod.status.qosClass, plain.pod.status.qosClass, 'the QoS class as without the override');
    progress(`overrides: api's Envoy runs with ${JSON.stringify(api.envoy.resources)} (QoS ${api.pod.status.qosClass}); plain's with ${JSON.stringify(plain.envoy.resources)}`);

    // Out of bounds and unparsable: admitted with the defaults, and kubectl prints the apiserver's warning,
    // for the Deployment (where the app team typed the value) and for a bare pod, on both backends. The
    // policies' warning comes from a ValidatingAdmissionPolicy, which the apiserver names in front of it.
    const warned = (reason: RegExp) =>
      new RegExp(`Warning: (Validation failed for ValidatingAdmissionPolicy '[^']+' with binding '[^']+': )?annotation envoy\\.example\\.com/cpu-request ignored \\(injection "envoy"\\): ${reason.source}; envoy keeps resources\\.requests\\.cpu 100m as configured`);
    const barePod = (name: string, value: string) => ({ apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: 'tuned', annotations: { 'envoy.example.com/cpu-request': value } }, spec: { containers: [app('app')] } });
    if (!WEBHOOK) {
      // The apiserver loads a new ValidatingAdmissionPolicy asynchronously, as it does the mutating ones.
      await cluster.until('the override warnings of the policies in force', async () => warned(/"5" is above the maximum 1/).test(cluster.kubectl(['apply', '--dry-run=server', '-f', '-'], JSON.stringify(barePod('probe', '5'))).stderr), 120_000);
    }
    for (const [name, value, reason] of [['big', '5', /"5" is above the maximum 1/], ['garbled', 'lots', /"lots" is not a quantity \(like "250m", "1", "512Mi"\)/]] as const) {
      const applied = cluster.kubectl(['apply', '-f', '-'], JSON.stringify(deployment(name, 'tuned', { 'envoy.example.com/cpu-request': value })));
      assert.equal(applied.status, 0, applied.stderr);
      assert.match(applied.stderr, warned(reason), applied.stderr);
      const bare = cluster.kubectl(['apply', '-f', '-'], JSON.stringify(barePod(`${name}-bare`, value)));
      assert.equal(bare.status, 0, bare.stderr);
      assert.match(bare.stderr, warned(reason), bare.stderr);
      const { envoy, pod } = await envoyOf('tuned', name);
      assert.equal(envoy.resources.requests.cpu, '100m', describePod(pod));
      progress(`overrides: ${name} (${value}): kubectl apply of the Deployment printed ${JSON.stringify(applied.stderr.trim())}; of a bare pod ${JSON.stringify(bare.stderr.trim())}; Envoy runs with requests.cpu ${envoy.resources.requests.cpu}`);
      kubectl(cluster, ['-n', 'tuned', 'delete', 'pod', `${name}-bare`, '--timeout=120s']);
    }

    // A namespace whose ResourceQuota covers limits: every container needs them, Envoy's included.
    namespace('quota', ENABLED);
    apply({ apiVersion: 'v1', kind: 'ResourceQuota', metadata: { name: 'limits', namespace: 'quota' }, spec: { hard: { 'limits.cpu': '4', 'limits.memory': '4Gi' } } });
    apply(deployment('api', 'quota', { 'envoy.example.com/cpu-request': '250m' }, { requests: { cpu: '50m', memory: '32Mi' }, limits: { cpu: '100m', memory: '64Mi' } }));
    const quota = await envoyOf('quota', 'api');
    assert.equal(quota.envoy.resources.requests.cpu, '250m', describePod(quota.pod));

    const status = await cli(cluster, ['status', '--from', overridden, '-n', 'tuned']);
    shown('status --from dist-overrides/ -n tuned', status);
    assert.equal(status.status, 0, describeRun(status));
    assert.match(status.stdout, /override ignored in 1 pod: annotation envoy\.example\.com\/cpu-request ignored/, 'the ignored values are named');
    cleanUp('tuned', 'quota');
  });
});
