import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Injection, SidecarInjectorProps, SidecarInjectorPropsError, loadInjectorConfig } from '../../charts/engine';
import { buildChart, findManifest, synthesize } from '../support/synth-helpers';

const envoy: Injection = { name: 'envoy', trigger: { type: 'always' }, containers: [{ name: 'envoy', image: 'envoyproxy/envoy:v1.30.1' }] };

/** A valid injection called `name` that adds one container, `container`, unless `overrides` say otherwise. */
function injection(name: string, overrides: Partial<Injection> = {}): Injection {
  return { name, trigger: { type: 'always' }, containers: [{ name, image: `example.com/${name}:1.0` }], ...overrides };
}

/** Lets a test write what the TypeScript types forbid, as a hand-written or untyped caller could. */
function untyped(value: unknown): Injection {
  return value as Injection;
}

function propsErrorOf(build: () => unknown): SidecarInjectorPropsError {
  try {
    build();
  } catch (error) {
    if (error instanceof SidecarInjectorPropsError) return error;
    assert.fail(`expected a SidecarInjectorPropsError, got ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}`);
  }
  assert.fail('expected the props to be rejected, but the SidecarInjector was built');
}

/** Asserts that building rejects the props with exactly one issue, at `path`, for `reason`. */
function assertRejected(build: () => unknown, path: string, reason: RegExp): void {
  const error = propsErrorOf(build);
  assert.deepEqual(error.issues.map((issue) => issue.path), [path], `the issues reported:\n${error.message}`);
  assert.match(error.issues[0].message, reason);
  assert.ok(error.message.includes(`  ${path}: ${error.issues[0].message}`), `the message names the path:\n${error.message}`);
}

function assertPropsRejected(props: SidecarInjectorProps, path: string, reason: RegExp): void {
  assertRejected(() => buildChart(props), path, reason);
}

function assertInjectionsRejected(injections: Injection[], path: string, reason: RegExp): void {
  assertPropsRejected({ injections }, path, reason);
}

describe('injections are rejected, naming the path and the reason, when', () => {
  test('two injections have the same name', () => {
    assertInjectionsRejected([envoy, injection('envoy', { containers: [{ name: 'other', image: 'other:1' }] })], 'injections[1].name', /duplicate injection name "envoy" \(also injections\[0\]\)/);
  });

  test('two injections add a container of the same name', () => {
    assertInjectionsRejected([envoy, injection('proxy', { containers: [{ name: 'envoy', image: 'envoyproxy/envoy:v1.31.0' }] })], 'injections[1].containers[0].name', /container name "envoy" is already injected by injections\[0\]\.containers\[0\]/);
  });

  test('one injection adds an init container named like another injection\'s container', () => {
    assertInjectionsRejected([envoy, injection('init', { containers: undefined, initContainers: [{ name: 'envoy', image: 'busybox:1.36' }] })], 'injections[1].initContainers[0].name', /container name "envoy" is already injected by injections\[0\]\.containers\[0\]/);
  });

  test('two injections add a volume of the same name', () => {
    const volume = { name: 'shared', emptyDir: {} };
    assertInjectionsRejected([injection('a', { volumes: [volume] }), injection('b', { volumes: [volume] })], 'injections[1].volumes[0].name', /volume name "shared" is already injected by injections\[0\]\.volumes\[0\]/);
  });

  test('a container name is not a DNS-1123 label', () => {
    assertInjectionsRejected([injection('proxy', { containers: [{ name: 'Envoy_Proxy', image: 'envoyproxy/envoy:v1.30.1' }] })], 'injections[0].containers[0].name', /"Envoy_Proxy" must consist of lower case alphanumeric characters/);
  });

  test('a label key of an injection is invalid', () => {
    assertInjectionsRejected([injection('proxy', { labels: { 'bad key!': 'x' } })], 'injections[0].labels["bad key!"]', /is not a valid label key/);
  });

  test('the annotation key of a trigger is invalid', () => {
    assertInjectionsRejected([injection('proxy', { trigger: { type: 'annotation', key: 'example.com/-inject-' } })], 'injections[0].trigger.key', /"example\.com\/-inject-" is not a valid annotation key/);
  });

  test('a placeholder refers to nothing', () => {
    assertInjectionsRejected([injection('proxy', { containers: [{ name: 'proxy', image: 'proxy:1', args: ['--host={{foo}}'] }] })], 'injections[0].containers[0].args[0]', /placeholder \{\{foo\}\} refers to nothing/);
  });

  test('{{annotation}} is used without an annotation trigger', () => {
    assertInjectionsRejected([injection('proxy', { trigger: { type: 'requested' }, containers: [{ name: 'proxy', image: 'proxy:1', args: ['{{annotation}}'] }] })], 'injections[0].containers[0].args[0]', /\{\{annotation\}\} refers to nothing: only an annotation trigger has an annotation value/);
  });

  test('a merge has no fields', () => {
    assertInjectionsRejected([injection('probes', { containers: undefined, merges: [{ containerNames: ['app'], fields: {} }] })], 'injections[0].merges[0].fields', /has nothing to merge/);
  });

  test('a merge names no container', () => {
    assertInjectionsRejected([injection('probes', { containers: undefined, merges: [{ containerNames: [], fields: { readinessProbe: { initialDelaySeconds: 10 } } }] })], 'injections[0].merges[0].containerNames', /must name at least one container/);
  });

  test('an injection adds nothing', () => {
    assertInjectionsRejected([injection('empty', { containers: [] })], 'injections[0]', /adds nothing/);
  });

  test('a trigger type is unknown', () => {
    assertInjectionsRejected([untyped({ ...envoy, trigger: { type: 'sometimes' } })], 'injections[0].trigger.type', /"sometimes" is not one of (?=.*\balways\b)(?=.*\bannotation\b)(?=.*\blabelSelector\b)(?=.*\brequested\b)/);
  });

  test('a trigger has no type, or a match expression no operator: the reason says the field is missing, never "undefined"', () => {
    const { trigger: _trigger, ...noTrigger } = envoy as unknown as Record<string, unknown>;
    assertInjectionsRejected([untyped({ ...noTrigger, trigger: { key: 'example.com/logs' } })], 'injections[0].trigger.type', /^is missing: must be one of (?=.*\balways\b)(?=.*\bannotation\b)/);
    assertInjectionsRejected([untyped({ ...noTrigger, trigger: { type: 'labelSelector', matchExpressions: [{ key: 'tier' }] } })], 'injections[0].trigger.matchExpressions[0].operator', /^is missing: must be one of In, NotIn, Exists, DoesNotExist$/);
    assertInjectionsRejected([untyped({ ...noTrigger })], 'injections[0].trigger', /got nothing \(the field is missing\)$/);
  });

  test('a target kind is not one the injector can change', () => {
    assertInjectionsRejected([untyped({ ...envoy, targetKinds: ['Pod', 'Service'] })], 'injections[0].targetKinds[1]', /"Service" is not one of Pod, Deployment/);
  });

  test('the target kinds are an empty list', () => {
    assertInjectionsRejected([{ ...envoy, targetKinds: [] }], 'injections[0].targetKinds', /must be a non-empty list/);
  });

  test('an init container has a restartPolicy other than Always', () => {
    assertInjectionsRejected([injection('init', { containers: undefined, initContainers: [{ name: 'init', image: 'busybox:1.36', restartPolicy: 'OnFailure' }] })], 'injections[0].initContainers[0].restartPolicy', /must be "Always" \(a native sidecar\) or left out, got string "OnFailure"/);
  });

  test('a regular container has a restartPolicy', () => {
    assertInjectionsRejected([injection('proxy', { containers: [{ name: 'proxy', image: 'proxy:1', restartPolicy: 'Always' }] })], 'injections[0].containers[0].restartPolicy', /only init containers take a restartPolicy/);
  });

  test('the valuePattern of an annotation trigger is not a regular expression', () => {
    assertInjectionsRejected([injection('proxy', { trigger: { type: 'annotation', key: 'example.com/proxy', valuePattern: '(unclosed' } })], 'injections[0].trigger.valuePattern', /is not a valid regular expression/);
  });

  test('a labelSelector requirement with operator In has no values', () => {
    assertInjectionsRejected([injection('proxy', { trigger: { type: 'labelSelector', matchExpressions: [{ key: 'app', operator: 'In' }] } })], 'injections[0].trigger.matchExpressions[0].values', /must be a non-empty list for operator In/);
  });

  test('an environment variable name is invalid', () => {
    assertInjectionsRejected([injection('env', { containers: undefined, env: [{ name: '1PROXY', value: 'x' }] })], 'injections[0].env[0].name', /"1PROXY" must consist of .* must not start with a digit/);
  });

  test('two volume mounts share a mountPath', () => {
    const volumeMounts = [{ name: 'a', mountPath: '/data' }, { name: 'b', mountPath: '/data' }];
    assertInjectionsRejected([injection('mounts', { containers: undefined, volumeMounts })], 'injections[0].volumeMounts[1].mountPath', /duplicate volume mount mountPath "\/data" \(also injections\[0\]\.volumeMounts\[0\]\)/);
  });

  test('an injection sets the status annotation the injector itself writes', () => {
    assertInjectionsRejected([injection('proxy', { annotations: { 'sidecar-injector.io/status': 'faked' } })], 'injections[0].annotations["sidecar-injector.io/status"]', /is reserved for the injector itself/);
  });

  test('an injection sets the status annotation of a custom annotationPrefix', () => {
    assertPropsRejected({ annotationPrefix: 'mesh.example.com', injections: [injection('proxy', { annotations: { 'mesh.example.com/status': 'faked' } })] }, 'injections[0].annotations["mesh.example.com/status"]', /is reserved for the injector itself/);
  });
});

describe('settings are rejected, naming the prop and the reason, when', () => {
  test('the namespace is not a DNS-1123 label', () => {
    // A dotted name is a valid subdomain, so only the namespace itself is wrong (not the derived webhook name).
    assertPropsRejected({ namespace: 'team.a' }, 'namespace', /"team\.a" must consist of lower case alphanumeric characters or "-"/);
  });

  test('the namespace has upper case letters, which also makes the derived webhook configuration name invalid', () => {
    const error = propsErrorOf(() => buildChart({ namespace: 'Bad_Namespace' }));
    assert.equal(error.issues[0]?.path, 'namespace', `the first issue names the namespace prop:\n${error.message}`);
    assert.match(error.issues[0].message, /"Bad_Namespace" must consist of lower case alphanumeric characters/);
    assert.match(error.message, /  namespace: "Bad_Namespace"/);
  });

  test('replicas is 0', () => {
    assertPropsRejected({ replicas: 0 }, 'replicas', /must be a whole number of at least 1, got 0/);
  });

  test('timeoutSeconds is above the apiserver\'s limit of 30', () => {
    assertPropsRejected({ timeoutSeconds: 31 }, 'timeoutSeconds', /must be a whole number from 1 to 30 .*got 31/);
  });

  test('the port is privileged', () => {
    assertPropsRejected({ port: 80 }, 'port', /must be a whole number from 1024 to 65535 .*got 80/);
  });

  // The apiserver rejects these selectors when the MutatingWebhookConfiguration is applied
  // (metav1validation.ValidateLabelSelector); the OpenAPI schema does not catch them, so synth must.
  test('a namespaceSelector requirement with operator In has no values', () => {
    const error = propsErrorOf(() => buildChart({ namespaceSelector: { matchExpressions: [{ key: 'team', operator: 'In' }] } }));
    assert.ok(
      error.issues.some((issue) => /^namespaceSelector\.matchExpressions\[0\]/.test(issue.path) && /non-empty|values/.test(issue.message)),
      `an issue at namespaceSelector.matchExpressions[0] about its values, got:\n${error.message}`,
    );
  });

  test('an objectSelector requirement has an invalid key', () => {
    const error = propsErrorOf(() => buildChart({ objectSelector: { matchExpressions: [{ key: 'bad key', operator: 'Exists' }] } }));
    assert.ok(
      error.issues.some((issue) => /^objectSelector\.matchExpressions\[0\]/.test(issue.path) && /key/.test(`${issue.path} ${issue.message}`)),
      `an issue at objectSelector.matchExpressions[0] about its key, got:\n${error.message}`,
    );
  });

  test('a label key of the labels prop is invalid', () => {
    assertPropsRejected({ labels: { 'bad key': 'x' } }, 'labels["bad key"]', /name part must consist of alphanumeric characters/);
  });
});

describe('addInjection', () => {
  test('rejects, after construction, an injection whose name is taken, naming injections[N].name', () => {
    const { app, injector } = buildChart({ injections: [envoy] });
    assertRejected(() => injector.addInjection(injection('envoy', { containers: [{ name: 'other', image: 'other:1' }] })), 'injections[1].name', /duplicate injection name "envoy"/);
    assert.deepEqual(injector.config.injections.map((added) => added.name), ['envoy'], 'the rejected injection was not added');
    const config = loadInjectorConfig(findManifest(synthesize(app).manifests, 'ConfigMap').data['config.json']);
    assert.deepEqual(config.injections.map((added) => added.name), ['envoy']);
  });

  test('adds a valid injection to the ConfigMap and its target kind to the webhook rules', () => {
    const { app, injector } = buildChart({ injections: [envoy] });
    const nightly = injection('backup-agent', { targetKinds: ['CronJob'] });
    injector.addInjection(nightly);
    const { manifests } = synthesize(app);
    const config = loadInjectorConfig(findManifest(manifests, 'ConfigMap').data['config.json']);
    assert.deepEqual(config.injections.map((added) => added.name), ['envoy', 'backup-agent']);
    assert.deepEqual(config.injections[1], { ...nightly, targetKinds: ['CronJob'] });
    assert.deepEqual(findManifest(manifests, 'MutatingWebhookConfiguration').webhooks[0].rules, [
      { apiGroups: [''], apiVersions: ['v1'], resources: ['pods'], operations: ['CREATE'], scope: 'Namespaced' },
      { apiGroups: ['batch'], apiVersions: ['v1'], resources: ['cronjobs'], operations: ['CREATE', 'UPDATE'], scope: 'Namespaced' },
    ]);
  });
});
