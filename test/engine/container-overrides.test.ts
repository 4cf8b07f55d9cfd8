// Per-workload overrides (issue 39): annotation values merged into an injection's containers field by
// field, bounded, with every ignored value named in a warning. Every patch is applied to the object it
// came from and the result checked against the Kubernetes schema; a second call on the output changes
// nothing. The cases at the end are the bugs other injectors shipped (istio/istio #21240, #35905,
// #34822, #51187): an override of one field that wiped the others.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { type Injection, InjectorConfigError, resolveInjectorConfig } from '../../webhook/config';
import { evaluate } from '../../webhook/engine';
import { createRequestFor } from '../../webhook/fleet/admission-request';
import { qosClassOf } from '../../webhook/engine/qos';
import { assertValidManifest } from '../support/openapi-validator';
import { ENVOY_RESOURCES, envoyWithOverrides } from '../support/override-fixtures';
import { applyResponse } from '../support/recorded-reviews';

const envoy = envoyWithOverrides;
const CONFIG = resolveInjectorConfig({ injections: [envoy()] });

function pod(annotations: Record<string, string> = {}, appResources?: object): any {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'web', namespace: 'shop', annotations },
    spec: { containers: [{ name: 'app', image: 'registry.example/app:1', ...(appResources ? { resources: appResources } : {}) }] },
  };
}

function admit(object: any, namespaceAnnotations?: Record<string, string>, config = CONFIG) {
  const result = evaluate(createRequestFor(object, 'shop', 'u1'), config, { namespaceAnnotations });
  const out = applyResponse(structuredClone(object), result.response);
  assertValidManifest(out);
  // Idempotent: the output admitted again changes nothing.
  const again = evaluate(createRequestFor(out, 'shop', 'u2'), config, { namespaceAnnotations });
  assert.equal(again.response.patch, undefined, 'a second call changes nothing');
  const container = (name: string) => [...(out.spec.containers ?? []), ...(out.spec.initContainers ?? [])].find((c: any) => c.name === name);
  return { result, out, envoy: container('envoy'), warnings: result.response.warnings ?? [] };
}

describe('overrides merged field by field', () => {
  test('no annotation: the container as configured, no warning, each offered field from the config', () => {
    const { envoy: injected, warnings, result } = admit(pod());
    assert.deepEqual(injected.resources, ENVOY_RESOURCES);
    assert.deepEqual(warnings, []);
    assert.deepEqual(result.overrides.map((o) => `${o.field}=${o.value} (${o.source})`), ['resources.requests.cpu=100m (config)', 'resources.requests.memory=128Mi (config)', 'resources.limits.cpu=1 (config)', 'env.ENVOY_LOG_LEVEL=info (config)']);
  });

  test("the pod's cpu request and the namespace's memory request: both set, every other request and limit as configured, QoS class as before", () => {
    const before = admit(pod());
    const { envoy: injected, warnings, result, out } = admit(pod({ 'envoy.example.com/cpu-request': '250m' }), { 'envoy.example.com/memory-request': '256Mi' });
    assert.deepEqual(injected.resources, { requests: { cpu: '250m', memory: '256Mi' }, limits: { cpu: '1', memory: '512Mi' } });
    assert.deepEqual(warnings, []);
    assert.equal(qosClassOf(out.spec.containers, undefined), qosClassOf(before.out.spec.containers, undefined));
    const sources = Object.fromEntries(result.overrides.map((o) => [o.field, `${o.value} from ${o.source} (${o.annotation})`]));
    assert.equal(sources['resources.requests.cpu'], '250m from pod (envoy.example.com/cpu-request)');
    assert.equal(sources['resources.requests.memory'], '256Mi from namespace (envoy.example.com/memory-request)');
  });

  test("the workload's own annotation beats the namespace's", () => {
    const { envoy: injected } = admit(pod({ 'envoy.example.com/memory-request': '200Mi', 'envoy.example.com/log-level': 'debug' }), { 'envoy.example.com/memory-request': '256Mi', 'envoy.example.com/log-level': 'warn' });
    assert.equal(injected.resources.requests.memory, '200Mi');
    assert.deepEqual(injected.env, [{ name: 'ENVOY_LOG_LEVEL', value: 'debug' }, { name: 'OTHER', value: 'x' }]);
  });

  test('a namespace value is read only for overrides with fromNamespace', () => {
    const { envoy: injected } = admit(pod(), { 'envoy.example.com/cpu-request': '300m' });
    assert.equal(injected.resources.requests.cpu, '100m');
  });

  test("a Deployment's pod template annotation overrides its template's container", () => {
    const config = resolveInjectorConfig({ injections: [envoy({ targetKinds: ['Deployment'] })] });
    const deployment = {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'web', namespace: 'shop' },
      spec: { selector: { matchLabels: { app: 'web' } }, template: { metadata: { labels: { app: 'web' }, annotations: { 'envoy.example.com/cpu-request': '750m' } }, spec: { containers: [{ name: 'app', image: 'registry.example/app:1' }] } } },
    };
    const { out } = admit(deployment, undefined, config);
    assert.equal(out.spec.template.spec.containers.find((c: any) => c.name === 'envoy').resources.requests.cpu, '750m');
  });
});

describe('bad values never break a pod: ignored, the default applies, the warning names the annotation and why', () => {
  const cases: [what: string, annotations: Record<string, string>, warning: RegExp, reason: string][] = [
    ['unparsable', { 'envoy.example.com/cpu-request': 'lots' }, /^annotation envoy\.example\.com\/cpu-request ignored \(injection "envoy"\): "lots" is not a quantity \(like "250m", "1", "512Mi"\); envoy keeps resources\.requests\.cpu 100m as configured$/, 'unparsable'],
    ['above the maximum', { 'envoy.example.com/cpu-request': '3' }, /"3" is above the maximum 2; envoy keeps resources\.requests\.cpu 100m as configured$/, 'out-of-bounds'],
    ['below the minimum', { 'envoy.example.com/memory-request': '1Mi' }, /"1Mi" is below the minimum 64Mi/, 'out-of-bounds'],
    ['zero', { 'envoy.example.com/cpu-request': '0' }, /"0" must be above zero/, 'out-of-bounds'],
    ['a negative or exponent form the apiserver would read differently', { 'envoy.example.com/cpu-request': '-1' }, /"-1" is not a quantity/, 'unparsable'],
    ['a request above the limit', { 'envoy.example.com/cpu-request': '1500m' }, /"1500m" is above the cpu limit 1; envoy keeps resources\.requests\.cpu 100m as configured$/, 'request-above-limit'],
    ['a limit below the request', { 'envoy.example.com/cpu-limit': '50m' }, /"50m" is below the cpu request 100m; envoy keeps resources\.limits\.cpu 1 as configured$/, 'request-above-limit'],
    ['an env value not allowed', { 'envoy.example.com/log-level': 'trace' }, /"trace" is not one of the allowed values \("debug", "info", "warn"\); envoy keeps env\.ENVOY_LOG_LEVEL info as configured$/, 'not-allowed'],
    ['a field not offered', { 'envoy.example.com/memory-limit': '1Gi' }, /^annotation envoy\.example\.com\/memory-limit ignored: no injection offers it as an override \(offered: envoy\.example\.com\/cpu-request, envoy\.example\.com\/memory-request, envoy\.example\.com\/cpu-limit, envoy\.example\.com\/log-level\)$/, 'not-offered'],
  ];
  for (const [what, annotations, warning, reason] of cases) {
    test(what, () => {
      const { envoy: injected, warnings, result } = admit(pod(annotations));
      assert.deepEqual(injected.resources, ENVOY_RESOURCES, 'resources as configured');
      assert.equal(injected.env[0].value, 'info');
      assert.equal(warnings.length, 1, warnings.join('\n'));
      assert.match(warnings[0], warning);
      assert.deepEqual(result.podWarnings.filter((w) => w.reason === 'override-ignored').map((w) => w.override?.reason), [reason]);
      assert.equal(result.response.allowed, true);
    });
  }

  test('a bad pod value falls back to a good namespace value, and says so', () => {
    const { envoy: injected, warnings } = admit(pod({ 'envoy.example.com/memory-request': 'big' }), { 'envoy.example.com/memory-request': '256Mi' });
    assert.equal(injected.resources.requests.memory, '256Mi');
    assert.match(warnings[0], /^annotation envoy\.example\.com\/memory-request ignored \(injection "envoy"\): "big" is not a quantity .*; envoy keeps resources\.requests\.memory 256Mi from the namespace$/);
  });

  test('a bad namespace value is named with its namespace', () => {
    const { warnings } = admit(pod(), { 'envoy.example.com/memory-request': '9Gi' });
    assert.match(warnings[0], /^namespace shop annotation envoy\.example\.com\/memory-request ignored \(injection "envoy"\): "9Gi" is above the maximum 512Mi/);
  });

  test('a long value is cut in the warning, never echoed whole', () => {
    const { warnings } = admit(pod({ 'envoy.example.com/cpu-request': '1'.repeat(10_000) }));
    assert.ok(warnings[0].length <= 256, warnings[0]);
  });

  test('a request and a limit both overridden, the request above the limit: both go back to the configured values', () => {
    const { envoy: injected, warnings } = admit(pod({ 'envoy.example.com/cpu-request': '2', 'envoy.example.com/cpu-limit': '500m' }));
    assert.deepEqual(injected.resources, ENVOY_RESOURCES);
    assert.equal(warnings.length, 2, warnings.join('\n'));
  });

  test('a request raised together with its limit is used', () => {
    const { envoy: injected, warnings } = admit(pod({ 'envoy.example.com/cpu-request': '2', 'envoy.example.com/cpu-limit': '3' }));
    assert.deepEqual(injected.resources, { requests: { cpu: '2', memory: '128Mi' }, limits: { cpu: '3', memory: '512Mi' } });
    assert.deepEqual(warnings, []);
  });
});

describe('what other injectors got wrong: an override of one field must not wipe the others', () => {
  test('istio/istio #21240 and #51187: overriding the cpu request keeps the memory request and both limits', () => {
    const { envoy: injected } = admit(pod({ 'envoy.example.com/cpu-request': '300m' }));
    assert.deepEqual(injected.resources, { requests: { cpu: '300m', memory: '128Mi' }, limits: { cpu: '1', memory: '512Mi' } });
  });

  test('istio/istio #35905: overriding a limit keeps the requests (no request silently raised to the limit, none dropped)', () => {
    const { envoy: injected } = admit(pod({ 'envoy.example.com/cpu-limit': '2' }));
    assert.deepEqual(injected.resources, { requests: { cpu: '100m', memory: '128Mi' }, limits: { cpu: '2', memory: '512Mi' } });
  });

  test('istio/istio #34822: overriding one env var keeps the container\'s other env vars, in order', () => {
    const { envoy: injected } = admit(pod({ 'envoy.example.com/log-level': 'warn' }));
    assert.deepEqual(injected.env, [{ name: 'ENVOY_LOG_LEVEL', value: 'warn' }, { name: 'OTHER', value: 'x' }]);
  });

  test('preserve-guaranteed in a Guaranteed pod: the overridden request becomes the limit too, and the pod stays Guaranteed', () => {
    const config = resolveInjectorConfig({ injections: [envoy({ qos: 'preserve-guaranteed' })] });
    const app = { requests: { cpu: '1', memory: '1Gi' }, limits: { cpu: '1', memory: '1Gi' } };
    const { envoy: injected, out } = admit(pod({ 'envoy.example.com/cpu-request': '250m' }, app), undefined, config);
    assert.deepEqual(injected.resources, { requests: { cpu: '250m', memory: '128Mi' }, limits: { cpu: '250m', memory: '128Mi' } });
    assert.equal(qosClassOf(out.spec.containers, undefined), 'Guaranteed');
  });
});

describe('the validator: what a platform team offers is checked at synth', () => {
  const issues = (overrides: unknown, extra: Partial<Injection> = {}) => {
    try {
      resolveInjectorConfig({ injections: [envoy({ overrides: overrides as Injection['overrides'], ...extra })] });
      return [];
    } catch (error) {
      assert.ok(error instanceof InjectorConfigError, String(error));
      return error.issues.map((issue) => `${issue.path}: ${issue.message}`);
    }
  };
  const cases: [what: string, overrides: unknown, expected: string][] = [
    ['a resource without max', [{ annotation: 'a.example.com/x', container: 'envoy', resource: 'requests.cpu' }], 'injections[0].overrides[0].max: is required: the largest value an app team may set (a quantity such as "2" or "1Gi")'],
    ['a max that is not a quantity', [{ annotation: 'a.example.com/x', container: 'envoy', resource: 'requests.cpu', max: 'two' }], 'injections[0].overrides[0].max: "two" is not a quantity above zero (like "250m", "1", "512Mi")'],
    ['min above max', [{ annotation: 'a.example.com/x', container: 'envoy', resource: 'requests.cpu', max: '500m', min: '1' }], 'injections[0].overrides[0].min: 1 is above max 500m'],
    ['a field not offered', [{ annotation: 'a.example.com/x', container: 'envoy', resource: 'requests.gpu', max: '1' }], 'injections[0].overrides[0].resource: "requests.gpu" is not one of requests.cpu, requests.memory, limits.cpu, limits.memory'],
    ['a container the injection does not add', [{ annotation: 'a.example.com/x', container: 'app', resource: 'requests.cpu', max: '1' }], 'injections[0].overrides[0].container: must name a container this injection adds ("envoy"), got "app"'],
    ['an env var the container does not list', [{ annotation: 'a.example.com/x', container: 'envoy', env: 'NOPE', allowedValues: ['a'] }], 'injections[0].overrides[0].env: "NOPE" is not in container "envoy"\'s env: list it there with its default value'],
    ['an env override without allowed values', [{ annotation: 'a.example.com/x', container: 'envoy', env: 'OTHER', allowedValues: [] }], 'injections[0].overrides[0].allowedValues: must be a non-empty list of strings: the values an app team may choose'],
    ['both resource and env', [{ annotation: 'a.example.com/x', container: 'envoy', env: 'OTHER', resource: 'requests.cpu', max: '1' }], 'injections[0].overrides[0]: sets both resource and env: an override sets one field'],
    ['an annotation key without a prefix', [{ annotation: 'cpu', container: 'envoy', resource: 'requests.cpu', max: '1' }], 'injections[0].overrides[0].annotation: "cpu" needs a prefix, such as "envoy.example.com/cpu-request": keys under it that no override offers are warned about'],
    ['the injector\'s own annotation', [{ annotation: 'sidecar-injector.io/inject', container: 'envoy', resource: 'requests.cpu', max: '1' }], 'injections[0].overrides[0].annotation: "sidecar-injector.io/inject" is an annotation the injector itself reads or writes'],
    ['one annotation for two fields', [{ annotation: 'a.example.com/x', container: 'envoy', resource: 'requests.cpu', max: '1' }, { annotation: 'a.example.com/x', container: 'envoy', resource: 'limits.cpu', max: '1' }], 'injections[0].overrides[1].annotation: "a.example.com/x" is already read by injections[0].overrides[0]: one annotation sets one field'],
    ['one field offered twice', [{ annotation: 'a.example.com/x', container: 'envoy', resource: 'requests.cpu', max: '1' }, { annotation: 'a.example.com/y', container: 'envoy', resource: 'requests.cpu', max: '1' }], 'injections[0].overrides[1]: resources.requests.cpu of container "envoy" is already offered by injections[0].overrides[0]'],
    ['a request max above a limit no override raises', [{ annotation: 'a.example.com/x', container: 'envoy', resource: 'requests.memory', max: '1Gi' }], 'injections[0].overrides[0].max: 1Gi is above the container\'s memory limit 512Mi, which no override raises: a request above it could never be used'],
    ['an unknown field', [{ annotation: 'a.example.com/x', container: 'envoy', resource: 'requests.cpu', max: '1', maximum: '2' }], 'injections[0].overrides[0].maximum: unknown field (known: annotation, container, fromNamespace, resource, max, min)'],
  ];
  for (const [what, overrides, expected] of cases) {
    test(what, () => assert.deepEqual(issues(overrides), [expected]));
  }
  test('the offers above are valid as written', () => assert.deepEqual(issues(envoy().overrides), []));
  test('a resource the container does not configure: the configured value is the default, so one is needed', () => {
    const bare = { containers: [{ name: 'envoy', image: 'envoyproxy/envoy:v1.31.0', env: [{ name: 'ENVOY_LOG_LEVEL', value: 'info' }] }] };
    assert.deepEqual(issues([{ annotation: 'a.example.com/x', container: 'envoy', resource: 'requests.cpu', max: '1' }], bare), [
      'injections[0].overrides[0].resource: container "envoy" sets no resources.requests.cpu: give it the default value there',
    ]);
  });
  test('the injection hash does not cover overrides: offering one restarts nothing', async () => {
    const { injectionHash } = await import('../../webhook/config');
    assert.equal(injectionHash(envoy()), injectionHash(envoy({ overrides: undefined })));
  });
});

describe("a workload's template injected before keeps the values of that moment, and says so", () => {
  const config = resolveInjectorConfig({ injections: [envoy({ targetKinds: ['Deployment'] })] });
  const deployment = (annotations: Record<string, string>) => ({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'web', namespace: 'shop' },
    spec: { selector: { matchLabels: { app: 'web' } }, template: { metadata: { labels: { app: 'web' }, annotations }, spec: { containers: [{ name: 'app', image: 'registry.example/app:1' }] } } },
  });
  const update = (object: any) => ({ ...createRequestFor(object, 'shop', 'u2'), operation: 'UPDATE' as const, oldObject: object });

  test('an UPDATE with the override changed: nothing patched, and a warning names the field, both values and why', () => {
    const { out } = admit(deployment({ 'envoy.example.com/cpu-request': '250m' }), undefined, config);
    out.spec.template.metadata.annotations['envoy.example.com/cpu-request'] = '500m';
    const result = evaluate(update(out), config);
    assert.equal(result.response.patch, undefined);
    assert.deepEqual(result.response.warnings, [
      'injection "envoy" was applied to this template before: envoy has resources.requests.cpu 250m, not 500m from envoy.example.com/cpu-request; overrides of a workload\'s template are read only when it is first injected',
    ]);
    assert.deepEqual(result.podWarnings.map((w) => w.override), [{ annotation: '(template injected before)', reason: 'template-injected-before' }]);
  });

  test('an UPDATE with the override removed: the configured value is named', () => {
    const { out } = admit(deployment({ 'envoy.example.com/cpu-request': '250m' }), undefined, config);
    delete out.spec.template.metadata.annotations['envoy.example.com/cpu-request'];
    assert.match(evaluate(update(out), config).response.warnings![0], /envoy has resources\.requests\.cpu 250m, not 100m \(configured\)/);
  });

  test('an UPDATE that changed no override: no warning (a re-apply stays quiet)', () => {
    const { out } = admit(deployment({ 'envoy.example.com/cpu-request': '250m' }), undefined, config);
    assert.equal(evaluate(update(out), config).response.warnings, undefined);
  });

  test("a pod made from such a template is not warned about: the template's values are its own", () => {
    const { out } = admit(deployment({ 'envoy.example.com/cpu-request': '250m' }), undefined, config);
    const pod = { apiVersion: 'v1', kind: 'Pod', metadata: { ...out.spec.template.metadata, name: 'web-1', namespace: 'shop' }, spec: out.spec.template.spec };
    pod.metadata.annotations = { ...pod.metadata.annotations, 'envoy.example.com/cpu-request': '500m' };
    const result = evaluate(createRequestFor(pod, 'shop', 'u3'), resolveInjectorConfig({ injections: [envoy({ targetKinds: ['Pod', 'Deployment'] })] }));
    assert.deepEqual(result.response.warnings ?? [], []);
  });
});

describe("a workload's pod template with a bad value: warned at the workload's admission, where the app team typed it", () => {
  // Envoy targets pods (the default); a second injection targets Deployments, so the webhook is called for them.
  const config = resolveInjectorConfig({ injections: [envoy(), { name: 'wait', trigger: { type: 'always' }, targetKinds: ['Deployment'], initContainers: [{ name: 'wait', image: 'busybox:1.36' }] }] });
  const template = (annotations: Record<string, string>, labels: Record<string, string> = { app: 'web' }) => ({
    metadata: { labels, annotations },
    spec: { containers: [{ name: 'app', image: 'registry.example/app:1' }] },
  });
  const workload = (kind: 'Deployment' | 'StatefulSet' | 'CronJob', annotations: Record<string, string>): any => {
    if (kind === 'CronJob') return { apiVersion: 'batch/v1', kind, metadata: { name: 'web', namespace: 'shop' }, spec: { schedule: '* * * * *', jobTemplate: { spec: { template: { ...template(annotations), spec: { ...template(annotations).spec, restartPolicy: 'Never' } } } } } };
    return { apiVersion: 'apps/v1', kind, metadata: { name: 'web', namespace: 'shop' }, spec: { selector: { matchLabels: { app: 'web' } }, template: template(annotations) } };
  };
  /** What a pod made from `object`'s template is warned about. */
  const podWarnings = (object: any, namespaceAnnotations?: Record<string, string>, cfg = config) => {
    const spec = object.kind === 'CronJob' ? object.spec.jobTemplate.spec.template : object.spec.template;
    const pod = { apiVersion: 'v1', kind: 'Pod', metadata: { ...spec.metadata, name: 'web-1', namespace: 'shop' }, spec: spec.spec };
    return evaluate(createRequestFor(pod, 'shop', 'p'), cfg, { namespaceAnnotations }).response.warnings ?? [];
  };

  for (const [what, value, reason] of [['out of bounds', '5', /"5" is above the maximum 2/], ['unparsable', 'lots', /"lots" is not a quantity/]] as const) {
    test(`${what}: the Deployment's answer carries the very warning its pods get, and changes nothing of envoy's`, () => {
      const deployment = workload('Deployment', { 'envoy.example.com/cpu-request': value });
      const result = evaluate(createRequestFor(deployment, 'shop', 'd'), config);
      const expected = podWarnings(deployment);
      assert.equal(expected.length, 1, expected.join('\n'));
      assert.match(expected[0], reason);
      assert.deepEqual(result.response.warnings, expected);
      // The template's own injection still applies (the wait container), and nothing else.
      const out = applyResponse(structuredClone(deployment), result.response);
      assertValidManifest(out);
      assert.deepEqual(out.spec.template.spec.initContainers.map((c: any) => c.name), ['wait']);
      assert.equal(out.spec.template.spec.containers.length, 1, 'envoy goes into the pods, not the template');
      // Counted once, by the pods: the workload's answer only says it.
      assert.deepEqual(result.podWarnings, []);
    });
  }

  test('an UPDATE (kubectl apply of a change) says it again', () => {
    const deployment = workload('Deployment', { 'envoy.example.com/cpu-request': '5' });
    const request = { ...createRequestFor(deployment, 'shop', 'd'), operation: 'UPDATE', oldObject: structuredClone(deployment) };
    assert.deepEqual(evaluate(request, config).response.warnings, podWarnings(deployment));
  });

  test('a kind no injection targets (a StatefulSet here) and a CronJob: the same warning, and no patch at all', () => {
    for (const kind of ['StatefulSet', 'CronJob'] as const) {
      const object = workload(kind, { 'envoy.example.com/log-level': 'trace', 'envoy.example.com/memory-limit': '1Gi' });
      const result = evaluate(createRequestFor(object, 'shop', 's'), config);
      assert.equal(result.response.patch, undefined, kind);
      assert.equal(result.response.warnings?.length, 2, `${kind}: ${result.response.warnings?.join('\n')}`);
      assert.deepEqual(result.response.warnings, podWarnings(object), kind);
      assert.ok(result.decisions.every((decision) => decision.reason === 'out-of-scope'), kind);
    }
  });

  test('a bad namespace default is said too, as the pods would say it', () => {
    const deployment = workload('Deployment', {});
    const result = evaluate(createRequestFor(deployment, 'shop', 'd'), config, { namespaceAnnotations: { 'envoy.example.com/memory-request': '9Gi' } });
    assert.match(result.response.warnings![0], /^namespace shop annotation envoy\.example\.com\/memory-request ignored/);
  });

  test('good values, a template opted out, or one the injection would not reach: no warning', () => {
    assert.equal(evaluate(createRequestFor(workload('Deployment', { 'envoy.example.com/cpu-request': '250m' }), 'shop', 'g'), config).response.warnings, undefined);
    const optedOut = workload('StatefulSet', { 'envoy.example.com/cpu-request': '5', 'sidecar-injector.io/inject': 'false' });
    assert.equal(evaluate(createRequestFor(optedOut, 'shop', 'o'), config).response.warnings, undefined);
    const bySelector = resolveInjectorConfig({ injections: [envoy({ trigger: { type: 'labelSelector', matchLabels: { mesh: 'on' } } })] });
    assert.equal(evaluate(createRequestFor(workload('StatefulSet', { 'envoy.example.com/cpu-request': '5' }), 'shop', 'n'), bySelector).response.warnings, undefined);
    const meshed = workload('StatefulSet', { 'envoy.example.com/cpu-request': '5' });
    meshed.spec.template.metadata.labels.mesh = 'on';
    assert.equal(evaluate(createRequestFor(meshed, 'shop', 'm'), bySelector).response.warnings?.length, 1);
  });

  test('an injection in audit mode, or one that targets the workload itself, is not previewed', () => {
    const audited = resolveInjectorConfig({ injections: [envoy({ mode: 'audit' })] });
    assert.equal(evaluate(createRequestFor(workload('StatefulSet', { 'envoy.example.com/cpu-request': '5' }), 'shop', 'a'), audited).response.warnings, undefined);
    // Targeting both: the template is injected now and warns once (its pods find it injected).
    const both = resolveInjectorConfig({ injections: [envoy({ targetKinds: ['Pod', 'Deployment'] })] });
    const warnings = evaluate(createRequestFor(workload('Deployment', { 'envoy.example.com/cpu-request': '5' }), 'shop', 'b'), both).response.warnings!;
    assert.equal(warnings.length, 1, warnings.join('\n'));
  });
});
