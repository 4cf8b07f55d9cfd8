// Pods that set pod-level resources (`spec.resources`, on by default from Kubernetes 1.34) stay valid
// once injected: `podResources: 'add'` raises the pod's figures by the injected containers', `share`
// fits the injected containers inside them; the response says which and by how much. Judged by the
// apiserver's own rules (test/support/pod-level-resources.ts), on 1.36's and 1.37's defaulting.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { DEFAULT_INJECTIONS } from '../../app/default-injections';
import { Injection, ResolvedInjectorConfig, injectorConfigIssues, resolveInjectorConfig } from '../../webhook/config';
import { evaluate } from '../../webhook/engine';
import { qosClassOf } from '../../webhook/engine/qos';
import { formatQuantity } from '../../webhook/engine/pod-resources';
import { admittedSpec, podLevelViolations, websitePod, withContainerDefaults } from '../support/pod-level-resources';
import { applyResponse, loadReview, podOf } from '../support/recorded-reviews';

type Json = Record<string, any>;

function requestFor(pod: Json): any {
  const request = structuredClone(loadReview('pod-create-sleep').request);
  request.object = pod;
  request.name = pod.metadata.name;
  request.namespace = pod.metadata.namespace;
  return request;
}

const config = (injections: Injection[]) => resolveInjectorConfig({ injections });
const defaultApp = (overrides: Partial<Injection> = {}) =>
  config(DEFAULT_INJECTIONS.map((injection) => (injection.name === 'envoy' || injection.name === 'nginx-sidecar' ? { ...injection, ...overrides } : injection)));

/** The pod as an apiserver of `version` stores it with the webhook as its mutating admission. */
function admit(pod: Json, resolved: ResolvedInjectorConfig, version: '1.36' | '1.37', annotations: Record<string, string> = {}) {
  let warnings: string[] = [];
  const withAnnotations: Json = { ...pod, metadata: { ...pod.metadata, annotations: { ...pod.metadata.annotations, ...annotations } } };
  const result = admittedSpec(withAnnotations.spec, version, (spec) => {
    const object = { ...withAnnotations, spec };
    const response = evaluate(requestFor(object), resolved).response;
    warnings = response.warnings ?? [];
    const patched = applyResponse(object, response);
    const again = evaluate(requestFor(patched), resolved);
    assert.deepEqual(again.patch, [], `reinvocation patched again: ${JSON.stringify(again.patch)}`);
    return podOf(patched).spec;
  });
  return { ...result, warnings };
}

describe('the website\'s pod-level-resources pod in a namespace the default app injects', () => {
  test('today\'s refusal, reproduced by the rules: the pod as injected without a policy is invalid', () => {
    // The rules themselves must refuse what the apiserver refused (issue 59): aggregate 178Mi against 100Mi, Envoy's 256Mi against 200Mi.
    const spec = withContainerDefaults(websitePod().spec);
    spec.containers.push({ name: 'envoy', image: 'envoy', resources: { requests: { cpu: '100m', memory: '128Mi' }, limits: { memory: '256Mi' } } });
    const violations = podLevelViolations(withContainerDefaults(spec));
    assert.equal(violations.length, 2, violations.join('\n'));
    assert.match(violations[0], new RegExp(`requests\\[memory\\].*aggregate container requests of ${178n * 1024n * 1024n * 1_000_000_000n}n`));
    assert.match(violations[1], /containers\[2\]\[memory\]\.limits/);
  });

  for (const version of ['1.36', '1.37'] as const) {
    test(`add (the default), on ${version}: Envoy's requests and limits join the pod's, and the response says by how much`, () => {
      const { spec, violations, warnings } = admit(websitePod(), defaultApp(), version);
      assert.deepEqual(violations, [], `the stored pod is invalid: ${JSON.stringify(spec.resources)}`);
      assert.deepEqual(spec.containers.map((c: Json) => c.name), ['pod-resources-demo-ctr-1', 'pod-resources-demo-ctr-2', 'envoy']);
      const injected = admit(websitePod(), defaultApp(), version);
      assert.deepEqual(injected.spec.containers[2].resources, { requests: { cpu: '100m', memory: '128Mi' }, limits: { memory: '256Mi' } }, 'Envoy keeps its own resources');
      assert.ok(
        warnings.includes(`injection "envoy" adds its containers' requests and limits to the pod's spec.resources (podResources "add"): requests cpu 1→1100m; limits cpu 1→1100m; requests memory 100Mi→228Mi; limits memory 200Mi→456Mi`),
        `warnings: ${JSON.stringify(warnings)}`,
      );
    });

    test(`add, on ${version}: with the nginx sidecar requested too, both sidecars are added`, () => {
      const { spec, violations, warnings } = admit(websitePod(), defaultApp(), version, { 'sidecar-injector-webhook.morven.me/inject': 'true' });
      assert.deepEqual(violations, [], `the stored pod is invalid: ${JSON.stringify(spec.resources)}`);
      assert.deepEqual(spec.containers.map((c: Json) => c.name), ['pod-resources-demo-ctr-1', 'pod-resources-demo-ctr-2', 'envoy', 'sidecar-nginx']);
      assert.equal(warnings.filter((warning) => warning.includes('podResources "add"')).length, 2, JSON.stringify(warnings));
    });

    test(`share, on ${version}: the pod's figures stay, Envoy's memory request is 0 and its limit the pod's`, () => {
      const { spec, violations, warnings } = admit(websitePod(), defaultApp({ podResources: 'share' }), version);
      assert.deepEqual(violations, [], `the stored pod is invalid: ${JSON.stringify(spec)}`);
      const envoy = spec.containers.find((c: Json) => c.name === 'envoy');
      assert.deepEqual(envoy.resources, { requests: { cpu: '0', memory: '0' }, limits: { memory: '200Mi' } });
      assert.ok(
        warnings.includes(`injection "envoy" fits its containers inside the pod's spec.resources (podResources "share"): container "envoy" requests cpu 100m→0, limits memory 256Mi→200Mi, requests memory 128Mi→0`),
        `warnings: ${JSON.stringify(warnings)}`,
      );
    });

    const variants: [string, Json, Json[]?][] = [
      ['requests only', { requests: { cpu: '1', memory: '100Mi' } }],
      ['limits only', { limits: { cpu: '1', memory: '200Mi' } }],
      ['memory only', { requests: { memory: '100Mi' }, limits: { memory: '200Mi' } }],
      ['with a native sidecar of its own', { requests: { cpu: '1', memory: '256Mi' }, limits: { cpu: '1', memory: '256Mi' } }, [
        { name: 'log-shipper', image: 'busybox', restartPolicy: 'Always', resources: { requests: { memory: '64Mi' }, limits: { memory: '128Mi' } } },
      ]],
      ['with a plain init container', { requests: { memory: '100Mi' }, limits: { memory: '200Mi' } }, [
        { name: 'setup', image: 'busybox', resources: { requests: { memory: '100Mi' }, limits: { memory: '200Mi' } } },
      ]],
    ];
    for (const policy of ['add', 'share'] as const) {
      for (const [what, resources, initContainers] of variants) {
        test(`${policy}, on ${version}: the website's pod with ${what} is valid once injected, Envoy as a regular container and as a native sidecar`, () => {
          for (const nativeSidecars of ['never', 'always'] as const) {
            const pod = websitePod(resources, initContainers);
            assert.deepEqual(admittedSpec(pod.spec, version, (spec) => spec).violations, [], 'the pod is valid on its own');
            const { spec, violations } = admit(pod, defaultApp({ podResources: policy, nativeSidecars }), version, { 'sidecar-injector-webhook.morven.me/inject': 'true' });
            assert.deepEqual(violations, [], `nativeSidecars ${nativeSidecars}: the stored pod is invalid: resources ${JSON.stringify(spec.resources)}, containers ${JSON.stringify(spec.containers)}, initContainers ${JSON.stringify(spec.initContainers)}`);
          }
        });
      }
    }
  }

  test('a pod-level resource the injection does not touch is left alone, and so is a pod without pod-level resources', () => {
    const proxy: Injection = { name: 'proxy', trigger: { type: 'always' }, containers: [{ name: 'proxy', image: 'proxy', resources: { requests: { cpu: '100m' } } }] };
    const result = evaluate(requestFor(websitePod({ requests: { memory: '100Mi' }, limits: { memory: '200Mi' } })), config([proxy]));
    assert.deepEqual(result.patch.filter((operation) => operation.path.includes('/resources')), [], 'memory is the pod\'s only figure, and the proxy asks for cpu only');
    const plain = websitePod();
    delete plain.spec.resources;
    const operations = evaluate(requestFor(plain), defaultApp()).patch;
    assert.deepEqual(operations.filter((operation) => operation.path.startsWith('/spec/resources')), []);
  });

  test('qos preserve-guaranteed on a pod-level Guaranteed pod: add keeps it Guaranteed (Envoy\'s limits at its requests), share leaves the figures', () => {
    const guaranteedPod = websitePod({ requests: { cpu: '1', memory: '200Mi' }, limits: { cpu: '1', memory: '200Mi' } });
    for (const podResources of ['add', 'share'] as const) {
      const { spec, violations } = admit(guaranteedPod, defaultApp({ podResources }), '1.37');
      assert.deepEqual(violations, []);
      assert.equal(qosClassOf([], spec.resources), 'Guaranteed', `${podResources}: ${JSON.stringify(spec.resources)}`);
    }
    const result = evaluate(requestFor(guaranteedPod), defaultApp({ qos: 'warn' }));
    assert.deepEqual(result.podWarnings.filter((w) => w.reason === 'qos-class-changed').map((w) => w.qosClass), [{ before: 'Guaranteed', after: 'Burstable' }], 'add without preserve-guaranteed lowers the class, and says so');
  });

  test('a workload\'s pod template with pod-level resources gets the same figures', () => {
    const review = structuredClone(loadReview('deployment-create-frontend').request);
    review.object.spec.template.spec.resources = { requests: { memory: '1Gi' }, limits: { memory: '2Gi' } };
    const result = evaluate(review, config([{ ...DEFAULT_INJECTIONS[0], targetKinds: ['Deployment'] }]));
    const patched = applyResponse(review.object, result.response) as unknown as Json;
    assert.deepEqual(patched.spec.template.spec.resources, { requests: { memory: '1152Mi' }, limits: { memory: '2304Mi' } });
  });

  test('podResources must be add or share: the validator names the field', () => {
    const issues = injectorConfigIssues({ injections: [{ ...DEFAULT_INJECTIONS[0], podResources: 'fit' as never }] });
    assert.deepEqual(issues.map((issue) => issue.path), ['injections[0].podResources'], JSON.stringify(issues));
  });

  test('quantities are written as Kubernetes writes them', () => {
    const gi = 1024n * 1024n * 1024n * 1_000_000_000n;
    assert.deepEqual(
      [formatQuantity(gi, 'memory'), formatQuantity(gi + gi / 1024n, 'memory'), formatQuantity(1_100_000_000n, 'cpu'), formatQuantity(2_000_000_000n, 'cpu'), formatQuantity(5n, 'cpu'), formatQuantity(1024n * 1_000_000_000n, 'cpu')],
      ['1Gi', '1025Mi', '1100m', '2', '1m', '1024'],
    );
  });
});
