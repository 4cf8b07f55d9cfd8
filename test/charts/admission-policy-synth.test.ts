// The MutatingAdmissionPolicy backend as cdk8s synthesizes it: every policy and binding validates against
// the OpenAPI schema of the API version emitted (v1alpha1, v1beta1, v1), and each trigger's CEL is the
// expected text with the expected structure (parsed and type-checked by a JavaScript CEL implementation
// that, like the kube-apiserver, requires homogeneous aggregate literals).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as os from 'node:os';
import * as path from 'node:path';
import { App, Chart, Testing } from 'cdk8s';
import { Environment, parse } from '@marcbachmann/cel-js';
import { Injection, JsonValue, resolveInjectorConfig } from '../../webhook/config';
import {
  ADMISSION_POLICY_API_VERSIONS,
  AdmissionPolicyApiVersion,
  InjectionAdmissionPolicies,
  configPolicyLimitations,
} from '../../charts/admission-policy';
import { admissionPolicyViolations } from '../support/admission-policy-schemas';
import { assertValidManifest } from '../support/openapi-validator';
import { celValue, isCelFieldName } from '../../charts/admission-policy/cel-text';
import { admitWithPolicies, kubernetesCelEnvironment, patchDataExpressions } from '../support/admission-policy-simulator';
import { podGuaranteedExpression } from '../../charts/admission-policy/qos-cel';
import { FOLDED_TAIL, TO_JSON_PATCH, bindInOrder, foldedConditions, mutationGuard, mutationGuards, patchData } from '../../charts/admission-policy/mutation-text';
import { POLICY_TEST_INJECTIONS, injectionPoliciesOf, injectionsOfPolicy } from '../support/admission-policy-config';

const PREFIX = 'sidecar-injector.io';

function synth(injections: Injection[], apiVersion?: AdmissionPolicyApiVersion): any[] {
  // Not Testing.app(): it makes a temp outdir per call that nothing removes; toJson() writes nothing.
  const app = new App({ outdir: path.join(os.tmpdir(), 'sidecar-injector-never-written') });
  const chart = new Chart(app, 'test');
  const config = resolveInjectorConfig({ annotationPrefix: PREFIX, injections });
  const policies = new InjectionAdmissionPolicies(chart, 'policies', {
    apiVersion,
    namePrefix: 'sidecar-injector',
    config: () => config,
    namespaceSelector: { matchLabels: { injection: 'enabled' }, matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'NotIn', values: ['kube-system'] }] },
    objectSelector: { matchExpressions: [{ key: `${PREFIX}/webhook`, operator: 'DoesNotExist' }] },
  });
  for (const injection of config.injections) policies.addInjection(injection);
  return Testing.synth(chart);
}

const policyOf = (objects: any[], name: string) => {
  const found = objects.find((object) => object.kind === 'MutatingAdmissionPolicy' && object.metadata.name === name);
  assert.ok(found, `no MutatingAdmissionPolicy ${name}; synthesized: ${objects.map((o) => `${o.kind}/${o.metadata.name}`).join(', ')}`);
  return found;
};
const conditionOf = (policy: any, name: string): string | undefined => policy.spec.matchConditions.find((c: any) => c.name === name)?.expression;
/** The guard of the mutation of `injection` in `policy`: its named conditions, read from the CEL text. */
const guardOf = (policy: any, injection: string) => {
  const index = injectionsOfPolicy(policy).indexOf(injection);
  assert.ok(index >= 0, `${policy.metadata.name} has no mutation for ${injection}; it has ${injectionsOfPolicy(policy).join(', ')}`);
  // Each mutation's injections' guards, in order: the same order as injectionsOfPolicy's.
  return policy.spec.mutations.flatMap((mutation: any) => mutationGuards(mutation.jsonPatch.expression))[index] as ReturnType<typeof mutationGuard>;
};
/** The index of the mutation that applies `injection`. */
const mutationIndexOf = (policy: any, injection: string) =>
  policy.spec.mutations.findIndex((mutation: any) => injectionsOfPolicy({ spec: { mutations: [mutation] } }).includes(injection));
const guardConditionOf = (policy: any, injection: string, name: string) => guardOf(policy, injection).find((c) => c.name === name)?.expression;

for (const apiVersion of ADMISSION_POLICY_API_VERSIONS) {
  test(`every policy and binding validates against the admissionregistration.k8s.io/${apiVersion} OpenAPI schema`, () => {
    const objects = synth(POLICY_TEST_INJECTIONS, apiVersion);
    const policies = objects.filter((o) => o.kind === 'MutatingAdmissionPolicy');
    const bindings = objects.filter((o) => o.kind === 'MutatingAdmissionPolicyBinding');
    assert.deepEqual(policies.map((p) => p.metadata.name), ['sidecar-injector.pods', 'sidecar-injector.workloads', 'sidecar-injector.cronjobs'], 'one policy per template shape');
    const shapeCount = (kinds: readonly string[]) => [['Pod'], ['Deployment', 'StatefulSet', 'DaemonSet', 'ReplicaSet', 'Job'], ['CronJob']].filter((shape) => shape.some((k) => kinds.includes(k))).length;
    const expected = POLICY_TEST_INJECTIONS.reduce((sum, i) => sum + shapeCount(i.targetKinds ?? ['Pod']), 0);
    assert.equal(policies.reduce((sum, p) => sum + injectionsOfPolicy(p).length, 0), expected, 'each injection once in the mutations of each template shape it targets');
    assert.ok(policies.reduce((sum, p) => sum + p.spec.mutations.length, 0) < expected, 'injections that can share a mutation share one');
    assert.deepEqual(bindings.map((b) => b.spec.policyName).sort(), policies.map((p) => p.metadata.name).sort(), 'each policy has exactly one binding naming it');
    for (const object of objects) {
      // The override warnings' ValidatingAdmissionPolicies are v1 (GA since 1.30) whatever the mutating ones are.
      if (object.kind.startsWith('Validating')) {
        assert.equal(object.apiVersion, 'admissionregistration.k8s.io/v1');
        assertValidManifest(object);
        continue;
      }
      assert.equal(object.apiVersion, `admissionregistration.k8s.io/${apiVersion}`);
      assert.deepEqual(admissionPolicyViolations(object), [], `${object.kind} ${object.metadata.name} violates the ${apiVersion} schema`);
    }
  });
}

test('the schemas of the three versions differ where the API reference says: v1beta1 and v1 constrain patchType and reinvocationPolicy, v1alpha1 does not', () => {
  const [policy] = synth([POLICY_TEST_INJECTIONS[0]], 'v1alpha1').filter((o) => o.kind === 'MutatingAdmissionPolicy');
  const bogus = (version: string) => ({
    ...policy,
    apiVersion: `admissionregistration.k8s.io/${version}`,
    spec: { ...policy.spec, reinvocationPolicy: 'Sometimes', mutations: [{ ...policy.spec.mutations[0], patchType: 'StrategicMerge' }] },
  });
  assert.deepEqual(admissionPolicyViolations(bogus('v1alpha1')), []);
  for (const version of ['v1beta1', 'v1']) {
    const violations = admissionPolicyViolations(bogus(version));
    assert.ok(violations.some((v) => v.startsWith('/spec/reinvocationPolicy')), `${version}: ${violations.join('; ')}`);
    assert.ok(violations.some((v) => v.startsWith('/spec/mutations/0/patchType')), `${version}: ${violations.join('; ')}`);
  }
  const unknownField = { ...policy, spec: { ...policy.spec, sideEffects: 'None' } };
  assert.deepEqual(admissionPolicyViolations(unknownField), ['/spec: must NOT have additional properties (sideEffects)']);
});

test('one policy per place the pod template sits, matching the resources and operations the webhook uses for the kinds its injections target', () => {
  const objects = synth(POLICY_TEST_INJECTIONS);
  const [pods, workloads, cronjobs] = ['pods', 'workloads', 'cronjobs'].map((shape) => policyOf(objects, `sidecar-injector.${shape}`));
  assert.deepEqual(pods.spec.matchConstraints.resourceRules, [{ apiGroups: [''], apiVersions: ['v1'], resources: ['pods'], operations: ['CREATE'], scope: 'Namespaced' }]);
  assert.deepEqual(workloads.spec.matchConstraints.resourceRules, [
    { apiGroups: ['apps'], apiVersions: ['v1'], resources: ['deployments', 'statefulsets', 'daemonsets'], operations: ['CREATE', 'UPDATE'], scope: 'Namespaced' },
    { apiGroups: ['batch'], apiVersions: ['v1'], resources: ['jobs'], operations: ['CREATE', 'UPDATE'], scope: 'Namespaced' },
  ], 'no ReplicaSet: no test injection targets it');
  assert.deepEqual(cronjobs.spec.matchConstraints.resourceRules, [{ apiGroups: ['batch'], apiVersions: ['v1'], resources: ['cronjobs'], operations: ['CREATE', 'UPDATE'], scope: 'Namespaced' }]);
  assert.deepEqual(injectionsOfPolicy(workloads), ['wait-for-it', 'debug', 'tier-limits', 'log-shipper', 'mesh-first', 'gpu-limits'], 'config order');
  assert.deepEqual(injectionsOfPolicy(cronjobs), ['debug', 'log-shipper']);
  assert.equal(conditionOf(cronjobs, 'pod-spec-present')?.includes('object.spec.jobTemplate.spec.template.spec.containers'), true);
  // An injection that targets fewer kinds than its shape's policy checks the kind in its guard.
  assert.equal(guardConditionOf(workloads, 'debug', 'target-kind'), 'request.kind.kind in ["Deployment"]');
  assert.equal(guardConditionOf(workloads, 'log-shipper', 'target-kind'), 'request.kind.kind in ["Job"]');
  assert.equal(guardConditionOf(cronjobs, 'debug', 'target-kind'), undefined);
  const binding = objects.find((o) => o.kind === 'MutatingAdmissionPolicyBinding' && o.metadata.name === 'sidecar-injector.pods');
  assert.equal(binding.spec.policyName, 'sidecar-injector.pods');
  assert.deepEqual(binding.spec.matchResources.namespaceSelector.matchLabels, { injection: 'enabled' });
  for (const policy of [pods, workloads, cronjobs]) assert.equal(policy.spec.failurePolicy, 'Ignore');
  // The pod policy's conditions lead each of its mutations, which ends in a failing test when it adds nothing.
  assert.equal(pods.spec.matchConditions, undefined);
  assert.equal(pods.spec.reinvocationPolicy, 'Never');
  for (const mutation of pods.spec.mutations) {
    assert.equal(mutation.patchType, 'JSONPatch');
    assert.deepEqual(foldedConditions(mutation.jsonPatch.expression)?.map((c) => c.name), ['pod-spec-present', 'not-opted-out'], mutation.jsonPatch.expression.slice(0, 40));
    assert.ok(mutation.jsonPatch.expression.endsWith(FOLDED_TAIL));
    assert.ok(/^\(\(\n {2}\/\/ |^\(\/\/ injections \[/.test(patchData(mutation.jsonPatch.expression)), patchData(mutation.jsonPatch.expression).slice(0, 40));
  }
  for (const policy of [workloads, cronjobs]) {
    assert.equal(policy.spec.reinvocationPolicy, 'IfNeeded');
    assert.deepEqual(policy.spec.matchConditions.map((c: any) => c.name), ['pod-spec-present', 'not-opted-out', 'an-injection-applies']);
    // The policy runs only when some injection's guard holds: the guards, or-ed, in mutation order (read
    // from the object, where a shared mutation's guards read the values it binds).
    const condition = conditionOf(policy, 'an-injection-applies')!;
    const terms = (function flatten(ast: any): any[] {
      return ast.op === '||' ? [...flatten(ast.args[0]), ...flatten(ast.args[1])] : [ast];
    })(parse(condition).ast);
    // Each term's first == compares a status entry with the injection's name (s.trim() == "<name>").
    const statusChecks = terms.map((term) => nodes(term, (n) => n.op === '==' && n.args[1]?.op === 'value')[0]?.args[1].args);
    assert.deepEqual(statusChecks, injectionsOfPolicy(policy), 'one term per injection, each with its not-already-injected');
    for (const injection of injectionsOfPolicy(policy)) {
      assert.equal(guardConditionOf(policy, injection, 'not-already-injected')?.replace(/\bshared[0-9]+\./g, ''), `!(${JSON.stringify(injection)} in statusNames)`);
    }
    for (const mutation of policy.spec.mutations) {
      assert.equal(mutation.patchType, 'JSONPatch');
      assert.ok(/^\(\(\n {2}\/\/ |^\(\/\/ injections \[/.test(mutation.jsonPatch.expression), mutation.jsonPatch.expression.slice(0, 40));
      assert.ok(mutation.jsonPatch.expression.endsWith(TO_JSON_PATCH));
    }
  }
});

/** Nodes of a cel-js AST (`{op, args}`) for which `match` holds. */
function nodes(ast: any, match: (node: any) => boolean, out: any[] = []): any[] {
  if (Array.isArray(ast)) ast.forEach((item) => nodes(item, match, out));
  else if (ast && typeof ast === 'object' && 'op' in ast) {
    if (match(ast)) out.push(ast);
    nodes(ast.args, match, out);
  }
  return out;
}
const calls = (expression: string, name: string) => nodes(parse(expression).ast, (n) => (n.op === 'rcall' || n.op === 'call') && n.args[0] === name);
const literals = (expression: string) => nodes(parse(expression).ast, (n) => n.op === 'value').map((n) => n.args);

const triggerCases: { label: string; injection: Injection; text: string; structure: (expression: string) => void }[] = [
  {
    label: 'annotation with valuePattern: the whole value must match, via CEL matches() on the anchored pattern',
    injection: { name: 'a', trigger: { type: 'annotation', key: 'example.com/port', valuePattern: '[0-9]+' }, containers: [{ name: 'x', image: 'x' }] },
    text:
      '(has(object.metadata) && has(object.metadata.annotations) && "example.com/port" in object.metadata.annotations) && ' +
      'object.metadata.annotations["example.com/port"].matches("^(?:[0-9]+)$")',
    structure: (e) => {
      assert.equal(parse(e).ast.op, '&&');
      assert.deepEqual(calls(e, 'matches').map((c) => c.args[2][0].args), ['^(?:[0-9]+)$']);
    },
  },
  {
    label: 'annotation without valuePattern: presence only',
    injection: { name: 'a', trigger: { type: 'annotation', key: 'example.com/on' }, containers: [{ name: 'x', image: 'x' }] },
    text: '(has(object.metadata) && has(object.metadata.annotations) && "example.com/on" in object.metadata.annotations)',
    structure: (e) => assert.deepEqual(calls(e, 'matches'), []),
  },
  {
    label: 'requested: <prefix>/inject lists the name, comma separated, spaces trimmed',
    injection: { name: 'debug', trigger: { type: 'requested' }, containers: [{ name: 'x', image: 'x' }] },
    text:
      `(has(object.metadata) && has(object.metadata.annotations) && "${PREFIX}/inject" in object.metadata.annotations) && ` +
      `object.metadata.annotations["${PREFIX}/inject"].split(",").exists(s, s.trim() == "debug")`,
    structure: (e) => {
      assert.deepEqual(calls(e, 'split').length, 1);
      assert.ok(literals(e).includes('debug'));
    },
  },
  {
    label: 'labelSelector: matchLabels and every operator, with Kubernetes selector semantics',
    injection: {
      name: 'l',
      trigger: {
        type: 'labelSelector',
        matchLabels: { app: 'web' },
        matchExpressions: [
          { key: 'tier', operator: 'In', values: ['a', 'b'] },
          { key: 'env', operator: 'NotIn', values: ['dev'] },
          { key: 'team', operator: 'Exists' },
          { key: 'legacy', operator: 'DoesNotExist' },
        ],
      },
      containers: [{ name: 'x', image: 'x' }],
    },
    text: [
      '((has(object.metadata) && has(object.metadata.labels) && "app" in object.metadata.labels) && object.metadata.labels["app"] == "web")',
      '((has(object.metadata) && has(object.metadata.labels) && "tier" in object.metadata.labels) && object.metadata.labels["tier"] in ["a", "b"])',
      '!((has(object.metadata) && has(object.metadata.labels) && "env" in object.metadata.labels) && object.metadata.labels["env"] in ["dev"])',
      '(has(object.metadata) && has(object.metadata.labels) && "team" in object.metadata.labels)',
      '!(has(object.metadata) && has(object.metadata.labels) && "legacy" in object.metadata.labels)',
    ].join(' && '),
    structure: (e) => assert.deepEqual(nodes(parse(e).ast, (n) => n.op === '!_').length, 2),
  },
];

for (const { label, injection, text, structure } of triggerCases) {
  test(`trigger CEL, ${label}`, () => {
    const policy = policyOf(synth([injection]), 'sidecar-injector.pods');
    const expression = guardConditionOf(policy, injection.name, 'trigger');
    assert.equal(expression, text);
    structure(expression!);
    assert.deepEqual(new Environment({ unlistedVariablesAreDyn: true }).check(expression!), { valid: true, type: 'bool' });
  });
}

test('trigger CEL for workloads: the object\'s own annotations count too, and the pod template\'s win', () => {
  const injection: Injection = { name: 'w', trigger: { type: 'annotation', key: 'k' }, targetKinds: ['Deployment'], containers: [{ name: 'x', image: 'x' }] };
  const expression = guardConditionOf(policyOf(synth([injection]), 'sidecar-injector.workloads'), 'w', 'trigger');
  assert.equal(
    expression,
    '((has(object.spec.template.metadata) && has(object.spec.template.metadata.annotations) && "k" in object.spec.template.metadata.annotations) || ' +
      '(has(object.metadata.annotations) && "k" in object.metadata.annotations))',
  );
});

test('an always trigger has no trigger condition, but the opt-out (the policy\'s) and the status annotation (the injection\'s)', () => {
  const policy = policyOf(synth([{ name: 'e', trigger: { type: 'always' }, containers: [{ name: 'x', image: 'x' }] }]), 'sidecar-injector.pods');
  const policyConditions = foldedConditions(policy.spec.mutations[0].jsonPatch.expression) ?? [];
  assert.deepEqual(policyConditions.map((c) => c.name), ['pod-spec-present', 'not-opted-out']);
  assert.deepEqual(guardOf(policy, 'e').map((c) => c.name), ['not-already-injected']);
  assert.equal(
    policyConditions.find((c) => c.name === 'not-opted-out')?.expression,
    `!((has(object.metadata) && has(object.metadata.annotations) && "${PREFIX}/inject" in object.metadata.annotations) && object.metadata.annotations["${PREFIX}/inject"].trim().lowerAscii() == "false")`,
  );
  assert.equal(
    guardConditionOf(policy, 'e', 'not-already-injected'),
    `!((has(object.metadata) && has(object.metadata.annotations) && "${PREFIX}/status" in object.metadata.annotations) && object.metadata.annotations["${PREFIX}/status"].split(",").exists(s, s.trim() == "e"))`,
  );
  const expression = policy.spec.mutations[0].jsonPatch.expression;
  assert.ok(expression.includes(`"/metadata/annotations/${PREFIX.replace('/', '~1')}~1status"`), 'the patch writes the status annotation');
});

test('workloads: the opt-out reads the object\'s and the pod template\'s annotations, the status annotation only the template\'s', () => {
  const policy = policyOf(synth([{ name: 'w', trigger: { type: 'always' }, targetKinds: ['Deployment'], containers: [{ name: 'x', image: 'x' }] }]), 'sidecar-injector.workloads');
  const template = 'object.spec.template.metadata';
  const inTemplate = (key: string) => `(has(${template}) && has(${template}.annotations) && "${key}" in ${template}.annotations)`;
  assert.equal(
    conditionOf(policy, 'not-opted-out'),
    `!((${inTemplate(`${PREFIX}/inject`)} || (has(object.metadata.annotations) && "${PREFIX}/inject" in object.metadata.annotations)) && ` +
      `(${inTemplate(`${PREFIX}/inject`)} ? ${template}.annotations["${PREFIX}/inject"] : object.metadata.annotations["${PREFIX}/inject"]).trim().lowerAscii() == "false")`,
  );
  assert.equal(
    guardConditionOf(policy, 'w', 'not-already-injected'),
    `!(${inTemplate(`${PREFIX}/status`)} && ${template}.annotations["${PREFIX}/status"].split(",").exists(s, s.trim() == "w"))`,
  );
});

test('no spec.variables (Kubernetes 1.32 cannot read them from a mutation); every bound name is a CEL identifier, no reserved word', () => {
  for (const policy of synth(POLICY_TEST_INJECTIONS).filter((o) => o.kind === 'MutatingAdmissionPolicy')) {
    assert.equal(policy.spec.variables, undefined);
    for (const [index, data] of patchDataExpressions(policy.spec).entries()) {
      const bound = nodes(parse(data).ast, (n) => n.op === 'rcall' && n.args[0] === 'map').map((n) => n.args[2][0].args);
      assert.ok(bound.includes('statusNames'), `${policy.metadata.name} mutations[${index}]: ${bound.join(', ')}`);
      for (const name of bound) assert.ok(isCelFieldName(name), `${policy.metadata.name} mutations[${index}]: bound name ${JSON.stringify(name)}`);
    }
  }
});

test('every match condition, mutation guard and mutation parses and type-checks with homogeneous literals', () => {
  // The Kubernetes functions the policies call (lists' indexOf, the quantity library) with their types.
  const env = kubernetesCelEnvironment();
  for (const policy of synth(POLICY_TEST_INJECTIONS).filter((o) => o.kind === 'MutatingAdmissionPolicy')) {
    const mutations = patchDataExpressions(policy.spec).flatMap((data, index) => [
      ...mutationGuards(policy.spec.mutations[index].jsonPatch.expression).flat().map((c) => ({ name: `mutations[${index}] guard ${c.name}`, expression: c.expression })),
      { name: `mutations[${index}]`, expression: data },
    ]);
    assert.ok(mutations.length >= 2 * injectionsOfPolicy(policy).length + policy.spec.mutations.length, 'every injection has a guard');
    const folded = policy.spec.mutations.flatMap((mutation: any, index: number) =>
      (foldedConditions(mutation.jsonPatch.expression) ?? []).map((c) => ({ name: `mutations[${index}] ${c.name}`, expression: c.expression })),
    );
    for (const { name, expression } of [...(policy.spec.matchConditions ?? []), ...folded, ...mutations]) {
      const result = env.check(expression);
      assert.equal(result.valid, true, `${policy.metadata.name} ${name}: ${(result as any).error?.message}`);
    }
  }
});

test('a merge key that is no CEL identifier (nvidia.com/gpu) is a map key: indexed, and tested with `in` instead of has()', () => {
  const injection: Injection = {
    name: 'gpu-limits',
    trigger: { type: 'always' },
    merges: [{ containerNames: ['app'], fields: { resources: { limits: { 'nvidia.com/gpu': 1 } } } }],
  };
  assert.deepEqual(configPolicyLimitations(resolveInjectorConfig({ injections: [injection] })), []);
  const policy = policyOf(synth([injection]), 'sidecar-injector.pods');
  const [data] = patchDataExpressions(policy.spec);
  assert.ok(data.includes('has(c.resources) && has(c.resources.limits) && !("nvidia.com/gpu" in c.resources.limits && c.resources.limits["nvidia.com/gpu"] == 1)'), data);
  assert.ok(data.includes('"/resources/limits/nvidia.com~1gpu"'), 'the JSON pointer escapes the slash');
  const hasArguments = nodes(parse(data).ast, (n) => n.op === 'call' && n.args[0] === 'has').map((n) => JSON.stringify(n.args[1]));
  assert.ok(hasArguments.length > 0 && hasArguments.every((text) => !text.includes('nvidia')), `has() never gets the key: ${hasArguments.join(', ')}`);
  const pod = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', namespace: 'n' }, spec: { containers: [{ name: 'app', image: 'a', resources: { limits: { cpu: '1' } } }, { name: 'other', image: 'o' }] } };
  const admitted = admitWithPolicies([policy], { kind: { group: '', version: 'v1', kind: 'Pod' }, resource: { group: '', version: 'v1', resource: 'pods' }, operation: 'CREATE', namespace: 'n', object: pod });
  assert.deepEqual(admitted.spec.containers.map((c: any) => c.resources), [{ limits: { cpu: '1', 'nvidia.com/gpu': 1 } }, undefined]);
});

test('a valuePattern that is not RE2 is refused before it reaches CEL (the validator and CEL agree on RE2)', () => {
  const injection: Injection = { name: 'lookahead', trigger: { type: 'annotation', key: 'k', valuePattern: '(?=a)a' }, containers: [{ name: 'x', image: 'x' }] };
  assert.throws(() => resolveInjectorConfig({ injections: [injection] }), /valuePattern/);
});

test('qos "preserve-guaranteed": the policy decides Guaranteed with the quantity library, and picks the injected container with limits at its requests', () => {
  const injection: Injection = {
    name: 'q',
    trigger: { type: 'always' },
    qos: 'preserve-guaranteed',
    containers: [{ name: 'proxy', image: 'x', resources: { requests: { cpu: '100m', memory: '64Mi' } } }],
  };
  assert.deepEqual(configPolicyLimitations(resolveInjectorConfig({ injections: [injection] })), []);
  const policy = policyOf(synth([injection]), 'sidecar-injector.pods');
  const [data] = patchDataExpressions(policy.spec);
  // Read once (one container), so written where it is read rather than bound.
  assert.equal(data.split(podGuaranteedExpression('object')).length - 1, 1, `the pod's class is computed once: ${data}`);
  const literal = (json: JsonValue) => celValue(json, { name: '', namespace: '', annotation: '' });
  const limited = literal({ name: 'proxy', image: 'x', resources: { requests: { cpu: '100m', memory: '64Mi' }, limits: { cpu: '100m', memory: '64Mi' } } });
  const plain = literal({ name: 'proxy', image: 'x', resources: { requests: { cpu: '100m', memory: '64Mi' } } });
  assert.ok(data.includes(`((${podGuaranteedExpression('object')}) ? dyn(${limited}) : dyn(${plain}))`), data);
  const calls = new Set(nodes(parse(podGuaranteedExpression('object')).ast, (n) => n.op === 'call' || n.op === 'rcall').map((n) => n.args[0]));
  assert.deepEqual([...calls].filter((name) => ['quantity', 'isQuantity', 'compareTo', 'isGreaterThan', 'sign'].includes(name)).sort(), ['compareTo', 'isGreaterThan', 'isQuantity', 'quantity']);
  const request = (resources: any, podResources?: any) => ({
    kind: { group: '', version: 'v1', kind: 'Pod' },
    resource: { group: '', version: 'v1', resource: 'pods' },
    operation: 'CREATE',
    namespace: 'n',
    object: { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', namespace: 'n' }, spec: { containers: [{ name: 'app', image: 'a', resources }], ...(podResources ? { resources: podResources } : {}) } },
  });
  const proxyLimits = (resources: any, podResources?: any) => admitWithPolicies([policy], request(resources, podResources)).spec.containers[1].resources.limits;
  assert.deepEqual(proxyLimits({ limits: { cpu: '1', memory: '1Gi' } }), { cpu: '100m', memory: '64Mi' }, 'Guaranteed (requests default to limits): limits set');
  assert.deepEqual(proxyLimits({ requests: { cpu: '1000m', memory: '1Gi' }, limits: { cpu: '1', memory: '1024Mi' } }), { cpu: '100m', memory: '64Mi' }, 'equal quantities written differently');
  assert.equal(proxyLimits({ requests: { cpu: '500m', memory: '1Gi' }, limits: { cpu: '1', memory: '1Gi' } }), undefined, 'Burstable: left as written');
  assert.equal(proxyLimits({ limits: { cpu: '1', memory: '0' } }), undefined, 'a zero limit is no limit: Burstable');
  assert.equal(proxyLimits({}), undefined, 'BestEffort');
  assert.deepEqual(proxyLimits({}, { limits: { cpu: '2', memory: '2Gi' } }), { cpu: '100m', memory: '64Mi' }, 'pod-level resources decide alone');
});

test('nativeSidecarPosition "first": inserted at the index after earlier first-placed injections\' sidecars, one by one in reverse', () => {
  const config = resolveInjectorConfig({ annotationPrefix: PREFIX, injections: POLICY_TEST_INJECTIONS });
  const policy = injectionPoliciesOf(config).find((p) => p.metadata.name === 'test.pods')!;
  const shared = patchDataExpressions(policy.spec)[mutationIndexOf(policy, 'mesh-first')];
  assert.equal(mutationIndexOf(policy, 'token-first'), mutationIndexOf(policy, 'mesh-first'), 'both in one mutation');
  assert.ok(shared.includes('"/spec/initContainers/" + string(0)'), 'mesh-first is the first such injection: an index, 0, not "-"');
  // token-first: after mesh-first's sidecars, those of an earlier admission (status annotation) and
  // those mesh-first inserts in this same mutation (read from its part, bound as m<i>).
  const unscoped = shared.replace(/\bshared[0-9]+\./g, '');
  const tokenPart = unscoped.slice(unscoped.indexOf('!("token-first" in statusNames)'), unscoped.indexOf('!("debug-chained" in statusNames)'));
  const tokenIndex = /"\/spec\/initContainers\/" \+ string\(\(\(has\(object\.spec\.initContainers\) \? size\(object\.spec\.initContainers\.filter\(c, c\.name in \("mesh-first" in statusNames \? \["mesh-init-proxy", "mesh-certs"\] : \[\]\)\)\) : 0\) \+ size\((m\d+)\[0\]\.filter\(p, string\(p\.path\)\.matches\("\^\/spec\/initContainers\/\[0-9\]\+\$"\)\)\)\)\)/.exec(tokenPart);
  assert.ok(tokenIndex, `token-first counts mesh-first's sidecars, earlier and in this mutation: ${tokenPart}`);
  assert.equal(tokenIndex[1], `m${injectionsOfPolicy({ spec: { mutations: [policy.spec.mutations[mutationIndexOf(policy, 'mesh-first')]] } }).indexOf('mesh-first')}`);
  // mesh-first's part: its own init container appended, then its sidecars inserted, the last first.
  const meshPart = unscoped.slice(unscoped.indexOf('!("mesh-first" in statusNames)'), unscoped.indexOf('!("token-first" in statusNames)'));
  const names = [...meshPart.matchAll(/"name": dyn\("([^"]+)"\)/g)].map((match) => match[1]);
  assert.deepEqual([...new Set(names)], ['mesh-setup', 'mesh-certs', 'mesh-init-proxy'], 'its own init container appended, then its sidecars inserted at one index, the last first; no regular container (always native)');
});

test('bindInOrder writes a value read once outside any loop, or a literal or a name, where it is read, and binds the others once', () => {
  const bind = (result: string, ...named: [string, string][]) => bindInOrder(named.map(([name, expression]) => ({ name, expression })), result);
  assert.equal(bind('b', ['a', 'object.x + 1'], ['b', 'variables.a * 2']), '((object.x + 1) * 2)', 'each read once: no comprehension');
  assert.equal(bind('object.list.map(c, c + a)', ['a', 'object.x']), '[object.x].map(a, object.list.map(c, c + a))[0]', 'read in a loop: bound, computed once');
  assert.equal(bind('a.size() + size(a)', ['a', 'object.x']), '[object.x].map(a, a.size() + size(a))[0]', 'read twice: bound');
  assert.equal(bind('object.list.map(c, c + a + a)', ['a', 'true']), 'object.list.map(c, c + true + true)', 'a literal: written where it is read');
  assert.equal(bind('[1].map(x, a + x)[0]', ['a', 'object.x']), '[1].map(x, (object.x) + x)[0]', 'a binding is no loop');
  assert.equal(bind('// a\n{"a": c.a, "b": "a"}.size() == a', ['a', 'object.x']), '// a\n{"a": c.a, "b": "a"}.size() == (object.x)', 'not in comments, strings or fields');
  assert.equal(bind('object.y', ['a', 'object.x']), 'object.y', 'read nowhere: left out');
  assert.throws(() => bind('a', ['a', '1'], ['a', '2']), /bound twice/);
});
