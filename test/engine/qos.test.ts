// QoS classes: computed as Kubernetes computes them, a warning (with a countable reason) when an
// injection changes a pod's class, and `qos: 'preserve-guaranteed'` keeping a Guaranteed pod Guaranteed.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { DEFAULT_INJECTIONS } from '../../app/default-injections';
import { Injection, ResolvedInjectorConfig, SidecarInjectorPropsError, resolveInjectorConfig } from '../../charts/engine';
import { evaluate } from '../../webhook/engine';
import { qosClassOf } from '../../webhook/engine/qos';
import { assertValidManifest } from '../support/openapi-validator';
import { applyResponse, loadReview, names, podOf } from '../support/recorded-reviews';
import { buildChart } from '../support/synth-helpers';

const guaranteed = (cpu: string, memory: string) => ({ requests: { cpu, memory }, limits: { cpu, memory } });
const container = (name: string, resources?: object) => ({ name, image: 'busybox:1.36', ...(resources ? { resources } : {}) });

describe('the QoS class, as Kubernetes computes it', () => {
  const cases: [what: string, containers: object[], expected: string, podResources?: object][] = [
    ['no requests or limits anywhere', [container('a'), container('b')], 'BestEffort'],
    ['requests only', [container('a', { requests: { cpu: '100m' } })], 'Burstable'],
    ['cpu and memory limits equal to requests in every container', [container('a', guaranteed('1', '1Gi')), container('b', guaranteed('250m', '64Mi'))], 'Guaranteed'],
    ['limits only (requests default to limits)', [container('a', { limits: { cpu: '500m', memory: '128Mi' } })], 'Guaranteed'],
    ['equal quantities written differently', [container('a', { requests: { cpu: '1', memory: '1Gi' }, limits: { cpu: '1000m', memory: '1024Mi' } })], 'Guaranteed'],
    ['a limit above its request', [container('a', { requests: { cpu: '1', memory: '1Gi' }, limits: { cpu: '2', memory: '1Gi' } })], 'Burstable'],
    ['one container without resources next to Guaranteed ones', [container('a', guaranteed('1', '1Gi')), container('b')], 'Burstable'],
    ['only memory limited', [container('a', { limits: { memory: '1Gi' } })], 'Burstable'],
    ['zero requests and limits are ignored', [container('a', { requests: { cpu: '0' }, limits: { cpu: '0' } })], 'BestEffort'],
    ['other resources do not count', [container('a', { limits: { 'ephemeral-storage': '1Gi' } })], 'BestEffort'],
    ['pod-level resources decide when set', [container('a')], 'Guaranteed', guaranteed('1', '1Gi')],
  ];
  for (const [what, containers, expected, podResources] of cases) {
    test(`${expected}: ${what}`, () => {
      assert.equal(qosClassOf(containers, podResources), expected, JSON.stringify(containers));
    });
  }

  test('an unreadable quantity gives no class instead of a wrong one', () => {
    assert.equal(qosClassOf([container('a', { limits: { cpu: 'lots' } })]), undefined);
  });
});

/** The recorded pod `sleep`, every container (init containers too) Guaranteed with 1 cpu and 1Gi. */
function guaranteedPod() {
  const review = loadReview('pod-create-sleep');
  const spec = review.request.object.spec;
  for (const item of [...spec.containers, ...(spec.initContainers ?? [])]) item.resources = guaranteed('1', '1Gi');
  return review.request;
}

function run(request: any, config: ResolvedInjectorConfig) {
  const result = evaluate(request, config);
  const object = applyResponse(request.object, result.response);
  assertValidManifest(object);
  const again = evaluate({ ...request, object }, config);
  assert.deepEqual(again.patch, [], `reinvocation patched again: ${JSON.stringify(again.patch)}`);
  return { ...result, pod: podOf(object), warnings: result.response.warnings ?? [] };
}

const sidecar = (overrides: Partial<Injection> = {}): Injection => ({
  name: 'proxy',
  trigger: { type: 'always' },
  containers: [{ name: 'proxy', image: 'example.com/proxy:1.0', resources: { requests: { cpu: '100m', memory: '64Mi' }, limits: { memory: '128Mi' } } }],
  ...overrides,
});

describe('an injection that changes the QoS class', () => {
  test('Guaranteed becomes Burstable: the response warns, and the result names the reason and both classes', () => {
    const config = resolveInjectorConfig({ injections: [sidecar()] });
    const before = podOf(guaranteedPod().object);
    assert.equal(qosClassOf([...before.spec.containers, ...before.spec.initContainers]), 'Guaranteed', 'the test pod starts Guaranteed');
    const result = run(guaranteedPod(), config);
    assert.equal(qosClassOf([...result.pod.spec.containers, ...result.pod.spec.initContainers]), 'Burstable');
    assert.deepEqual(result.podWarnings.map(({ injection, reason, qosClass, shown }) => ({ injection, reason, qosClass, shown })), [
      { injection: 'proxy', reason: 'qos-class-changed', qosClass: { before: 'Guaranteed', after: 'Burstable' }, shown: true },
    ]);
    const warning = result.warnings.find((text) => text.includes('QoS'));
    assert.ok(warning, `expected a QoS warning in ${JSON.stringify(result.warnings)}`);
    assert.match(warning, /injection "proxy" changes the pod's QoS class from Guaranteed to Burstable; set qos: "preserve-guaranteed"/);
  });

  test('BestEffort becomes Burstable when the sidecar has requests: counted, not warned (a class raised needs no action)', () => {
    const config = resolveInjectorConfig({ injections: [sidecar()] });
    const result = run(loadReview('pod-create-demoapp').request, config);
    assert.deepEqual(result.podWarnings.map(({ qosClass, shown }) => ({ qosClass, shown })), [{ qosClass: { before: 'BestEffort', after: 'Burstable' }, shown: false }]);
    assert.deepEqual(result.warnings.filter((text) => text.includes('QoS')), [], `no QoS warning for the client, got ${JSON.stringify(result.warnings)}`);
  });

  test('a sidecar that keeps the class (Burstable stays Burstable) brings no warning', () => {
    const request = loadReview('pod-create-demoapp').request;
    request.object.spec.containers[0].resources = { requests: { cpu: '100m' } };
    const result = run(request, resolveInjectorConfig({ injections: [sidecar()] }));
    assert.deepEqual(result.podWarnings, []);
    assert.equal(result.warnings.filter((text) => text.includes('QoS')).length, 0, JSON.stringify(result.warnings));
  });

  test('a merge that sets resources in the user\'s container counts as well', () => {
    const config = resolveInjectorConfig({
      injections: [{ name: 'cpu-limit', trigger: { type: 'always' }, merges: [{ containerNames: ['sleep'], fields: { resources: { limits: { cpu: '2' } } } }] }],
    });
    const result = run(guaranteedPod(), config);
    assert.deepEqual(result.podWarnings.map((warning) => warning.qosClass), [{ before: 'Guaranteed', after: 'Burstable' }]);
  });
});

describe('qos: "preserve-guaranteed"', () => {
  test('keeps a Guaranteed pod Guaranteed: the injected container\'s cpu and memory limits are set to its requests', () => {
    const result = run(guaranteedPod(), resolveInjectorConfig({ injections: [sidecar({ qos: 'preserve-guaranteed' })] }));
    const proxy = result.pod.spec.containers.find((item: { name: string }) => item.name === 'proxy');
    assert.deepEqual(proxy.resources, { requests: { cpu: '100m', memory: '64Mi' }, limits: { cpu: '100m', memory: '64Mi' } });
    assert.equal(qosClassOf([...result.pod.spec.containers, ...result.pod.spec.initContainers]), 'Guaranteed');
    assert.deepEqual(result.podWarnings, []);
  });

  test('leaves the container as configured in a pod that is not Guaranteed', () => {
    const result = run(loadReview('pod-create-demoapp').request, resolveInjectorConfig({ injections: [sidecar({ qos: 'preserve-guaranteed' })] }));
    const proxy = result.pod.spec.containers.find((item: { name: string }) => item.name === 'proxy');
    assert.deepEqual(proxy.resources, { requests: { cpu: '100m', memory: '64Mi' }, limits: { memory: '128Mi' } });
  });

  test('covers injected init containers and native sidecars as well (the default app\'s envoy in a Job\'s Guaranteed pod)', () => {
    const request = guaranteedPod();
    request.object.metadata.ownerReferences = [{ apiVersion: 'batch/v1', kind: 'Job', name: 'nightly', uid: '6f1d7f7e-8d25-4c8e-9d1a-0c7d0c1e2a11', controller: true, blockOwnerDeletion: true }];
    const result = run(request, resolveInjectorConfig({ injections: DEFAULT_INJECTIONS }));
    assert.deepEqual(names(result.pod.spec.initContainers), ['setup', 'envoy', 'sidecar-nginx']);
    assert.deepEqual(result.pod.spec.initContainers[1].resources, { requests: { cpu: '100m', memory: '128Mi' }, limits: { cpu: '100m', memory: '128Mi' } });
    assert.equal(qosClassOf([...result.pod.spec.containers, ...result.pod.spec.initContainers]), 'Guaranteed');
  });

  test('fails synth when an injected container has no cpu or memory request to copy, naming the prop path', () => {
    let error: unknown;
    try {
      buildChart({ injections: [sidecar({ qos: 'preserve-guaranteed', containers: [{ name: 'proxy', image: 'example.com/proxy:1.0', resources: { requests: { cpu: '100m' } } }] })] });
    } catch (caught) {
      error = caught;
    }
    assert.ok(error instanceof SidecarInjectorPropsError, String(error));
    assert.deepEqual(error.issues.map((issue) => issue.path), ['injections[0].containers[0].resources.requests.memory'], error.message);
    assert.match(error.issues[0].message, /qos "preserve-guaranteed" needs a memory request above zero/);
  });

  test('fails synth for a quantity Kubernetes would not parse, and for a request above its limit', () => {
    let error: unknown;
    try {
      buildChart({ injections: [sidecar({ containers: [{ name: 'proxy', image: 'example.com/proxy:1.0', resources: { requests: { cpu: 'lots', memory: '2Gi' }, limits: { memory: '1Gi' } } }] })] });
    } catch (caught) {
      error = caught;
    }
    assert.ok(error instanceof SidecarInjectorPropsError, String(error));
    assert.deepEqual(error.issues.map((issue) => issue.path), ['injections[0].containers[0].resources.requests.cpu', 'injections[0].containers[0].resources.requests.memory'], error.message);
  });
});
