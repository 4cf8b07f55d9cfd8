// `rollout --in-place` on pods that set pod-level resources (`spec.resources`): Kubernetes lets a running
// pod's images change and nothing else of its containers, so an upgrade that would change a sidecar's
// requests or limits (and with them the pod-level sums the apiserver checks) is refused with its
// reason and left to a restart of the workload (a bare pod is left untouched), never attempted; an image bump is upgraded in place, its patch touching
// images and annotations only, under `podResources` 'add' and 'share' alike.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { applyPatch, type Operation } from 'fast-json-patch';
import { type Injection, type ResolvedInjectorConfig, resolveInjectorConfig } from '../../webhook/config';
import { evaluate } from '../../webhook/engine';
import type { ClusterObjects } from '../../webhook/fleet/injection-status';
import { type InPlaceOptions, inPlacePatch, inPlacePlan } from '../../webhook/fleet/in-place-plan';
import { createRequestFor } from '../../webhook/fleet/admission-request';
import type { InjectorSource } from '../../webhook/fleet/synthesized-injectors';
import { podLevelViolations, withContainerDefaults } from '../support/pod-level-resources';
import { applyResponse } from '../support/recorded-reviews';

const PREFIX = 'sidecar-injector.io';
const OPTIONS: InPlaceOptions = { nativeSidecars: 'in-place', includeUnknown: false, requireReadinessGate: false };

const envoy = (image: string, requests: Record<string, string>, extra: Partial<Injection> = {}): Injection => ({
  name: 'envoy',
  trigger: { type: 'always' },
  containers: [{ name: 'envoy', image, resources: { requests, limits: { memory: '256Mi' } } }],
  ...extra,
});
const config = (injection: Injection): ResolvedInjectorConfig => resolveInjectorConfig({ annotationPrefix: PREFIX, injections: [injection] });
const source = (resolved: ResolvedInjectorConfig): InjectorSource => ({ config: resolved, description: 'test config' });
const objects = (...pods: any[]): ClusterObjects => ({ pods, namespaceLabels: new Map(), owners: new Map() });
const REQUESTS = { cpu: '100m', memory: '128Mi' };

/** The website's pod-level-resources pod, bare, as stored once the webhook answered its CREATE under `resolved`. */
function admitted(resolved: ResolvedInjectorConfig): any {
  const pod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'pod-resources-demo', namespace: 'shop' },
    spec: {
      resources: { limits: { cpu: '1', memory: '200Mi' }, requests: { cpu: '1', memory: '100Mi' } },
      containers: [{ name: 'app', image: 'nginx', resources: { limits: { cpu: '500m', memory: '100Mi' }, requests: { cpu: '500m', memory: '50Mi' } } }],
    },
  };
  const injected: any = applyResponse(pod, evaluate(createRequestFor(pod, 'shop', 'u'), resolved).response);
  injected.spec = withContainerDefaults(injected.spec);
  assert.deepEqual(podLevelViolations(injected.spec), [], 'the injected pod is valid');
  return { ...injected, metadata: { ...injected.metadata, uid: 'uid-1', resourceVersion: '4242' }, status: { phase: 'Running' } };
}

for (const podResources of ['add', 'share'] as const) {
  test(`podResources ${podResources}: an image bump is upgraded in place, its patch changing images and annotations only, and the pod stays valid`, () => {
    const pod = admitted(config(envoy('envoyproxy/envoy:v1.31.0', REQUESTS, { podResources })));
    const plan = inPlacePlan(objects(pod), source(config(envoy('envoyproxy/envoy:v1.31.1', REQUESTS, { podResources }))), OPTIONS);
    const [workload] = plan.workloads;
    assert.equal(workload?.action, 'in-place', JSON.stringify(plan.workloads, null, 2));
    const operations = inPlacePatch(pod, workload.inPlace[0], PREFIX);
    const changed = operations.filter((operation) => operation.op !== 'test').map((operation) => operation.path);
    assert.deepEqual(changed.filter((path) => !path.startsWith('/metadata/annotations/')), ['/spec/containers/1/image'], JSON.stringify(operations));
    const upgraded = applyPatch(structuredClone(pod), structuredClone(operations) as Operation[], true, false).newDocument;
    assert.deepEqual(upgraded.spec.resources, pod.spec.resources);
    assert.deepEqual(podLevelViolations(upgraded.spec), []);
  });

  test(`podResources ${podResources}: an upgrade that changes the sidecar's requests is refused in place, with the reason, and left to a restart`, () => {
    const pod = admitted(config(envoy('envoyproxy/envoy:v1.31.0', REQUESTS, { podResources })));
    const plan = inPlacePlan(objects(pod), source(config(envoy('envoyproxy/envoy:v1.31.1', { cpu: '200m', memory: '192Mi' }, { podResources }))), OPTIONS);
    const [workload] = plan.workloads;
    // A bare pod is left untouched (nothing restarts it); a workload's would be restarted.
    assert.equal(workload?.action, 'untouched', JSON.stringify(plan.workloads, null, 2));
    assert.deepEqual([workload.fallBack[0].action, workload.inPlace], ['restart', []], 'nothing is patched in place');
    assert.match(workload.fallBack[0].reasons.join('; '), /^envoy changed more than its images/);
  });
}

test('switching podResources is a change of the injection (its hash), so it restarts, never patches in place', () => {
  const pod = admitted(config(envoy('envoyproxy/envoy:v1.31.0', REQUESTS)));
  const plan = inPlacePlan(objects(pod), source(config(envoy('envoyproxy/envoy:v1.31.1', REQUESTS, { podResources: 'share' }))), OPTIONS);
  assert.deepEqual([plan.workloads[0]?.action, plan.workloads[0]?.inPlace], ['untouched', []], JSON.stringify(plan.workloads, null, 2));
  assert.match(plan.workloads[0].fallBack[0].reasons.join('; '), /^envoy changed more than its images/);
});
