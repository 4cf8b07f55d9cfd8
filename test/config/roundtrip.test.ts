import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  CONFIG_FILE_NAME,
  Injection,
  InjectorConfigError,
  SidecarInjectorProps,
  loadInjectorConfig,
  resolveInjectorConfig,
} from '../../charts/engine';
import { DEFAULT_INJECTIONS } from '../../app/default-injections';
import { buildChart, findManifest, synthesize } from '../support/synth-helpers';

/** What the construct writes into the ConfigMap, and what it resolved before writing it. */
function configMapOf(props: SidecarInjectorProps): { text: string; resolved: ReturnType<typeof resolveInjectorConfig>; configJson: string } {
  const { app, injector } = buildChart(props);
  const configMap = findManifest(synthesize(app).manifests, 'ConfigMap');
  assert.deepEqual(Object.keys(configMap.data), [CONFIG_FILE_NAME], 'the ConfigMap holds exactly config.json');
  return { text: configMap.data[CONFIG_FILE_NAME], resolved: injector.config, configJson: injector.configJson() };
}

function loadErrorOf(text: string): InjectorConfigError {
  try {
    loadInjectorConfig(text);
  } catch (error) {
    if (error instanceof InjectorConfigError) return error;
    assert.fail(`expected an InjectorConfigError, got ${String(error)}`);
  }
  assert.fail(`expected ${JSON.stringify(text)} to be rejected, but it loaded`);
}

/** Injected objects written with fields this library does not know: some real (newer Kubernetes), some invented. */
const withUnknownFields: Injection = {
  name: 'future-proxy',
  trigger: { type: 'annotation', key: 'example.com/proxy', valuePattern: '^(true|v[0-9]+)$' },
  targetKinds: ['Pod', 'StatefulSet'],
  containers: [
    {
      name: 'proxy',
      image: 'example.com/proxy:{{annotation}}',
      futureField: { x: 1, nested: [true, null, 'y', { z: 2.5 }] },
      resizePolicy: [{ resourceName: 'cpu', restartPolicy: 'NotRequired' }],
      resources: { requests: { cpu: '10m', memory: '16Mi' }, limits: { memory: '32Mi' } },
      ports: [{ name: 'admin', containerPort: 15000, protocol: 'TCP' }],
      env: [{ name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } }],
    },
  ],
  initContainers: [
    {
      name: 'log-shipper',
      image: 'example.com/shipper:2',
      restartPolicy: 'Always',
      startupProbe: { exec: { command: ['true'] }, periodSeconds: 1 },
      lifecycle: { stopSignal: 'SIGUSR1' },
    },
  ],
  volumes: [
    { name: 'proxy-image', image: { reference: 'example.com/proxy-config:1', pullPolicy: 'IfNotPresent' } },
    { name: 'future-source', futureVolumeSource: { anything: ['goes'] } },
  ],
  volumeMounts: [{ name: 'proxy-image', mountPath: '/etc/proxy', readOnly: true, recursiveReadOnly: 'IfPossible' }],
  env: [{ name: 'PROXY_NAMESPACE', value: '{{namespace}}' }],
  imagePullSecrets: [{ name: 'registry.example.com' }],
  labels: { 'proxy.example.com/injected': 'true' },
  annotations: { 'proxy.example.com/for': '{{name}}' },
  merges: [{ containerNames: ['app'], fields: { readinessProbe: { initialDelaySeconds: 10 }, futureProbeField: { a: 1 } }, whenMissing: 'create' }],
};

describe('the config the construct writes into the ConfigMap', () => {
  test('is loaded by the webhook to exactly what the construct resolved', () => {
    const { text, resolved, configJson } = configMapOf({ injections: DEFAULT_INJECTIONS });
    assert.equal(text, configJson, 'config.json is the construct\'s configJson()');
    const loaded = loadInjectorConfig(text);
    assert.deepEqual(loaded, resolved);
    assert.deepEqual(loaded, JSON.parse(text), 'loading adds nothing: every default is already written out');
  });

  test('serializes back, from what the webhook loaded, to the same bytes', () => {
    const { text } = configMapOf({ injections: DEFAULT_INJECTIONS });
    assert.equal(JSON.stringify(loadInjectorConfig(text), null, 2) + '\n', text);
  });

  test('writes out every default: annotationPrefix, enabled, and each injection\'s targetKinds', () => {
    const { text } = configMapOf({ injections: [{ name: 'envoy', trigger: { type: 'always' }, containers: [{ name: 'envoy', image: 'envoy:1' }] }] });
    assert.deepEqual(JSON.parse(text), {
      annotationPrefix: 'sidecar-injector.io',
      enabled: true,
      injections: [{ name: 'envoy', trigger: { type: 'always' }, containers: [{ name: 'envoy', image: 'envoy:1' }], targetKinds: ['Pod'] }],
    });
  });

  test('carries the kill switch and a custom annotation prefix', () => {
    const loaded = loadInjectorConfig(configMapOf({ enabled: false, annotationPrefix: 'mesh.example.com', injections: DEFAULT_INJECTIONS }).text);
    assert.equal(loaded.enabled, false);
    assert.equal(loaded.annotationPrefix, 'mesh.example.com');
  });

  test('keeps Kubernetes fields the library does not know, inside injected objects, untouched (with the schema check off)', () => {
    // Fields newer than the shipped 1.32 schema (or invented) fail synth by default; checkKubernetesSchema: false is
    // the documented way to inject them, and then nothing is dropped or changed.
    assert.throws(() => configMapOf({ injections: [withUnknownFields] }), /injections\[0\]\.containers\[0\]\.futureField: unknown field/);
    const loaded = loadInjectorConfig(configMapOf({ checkKubernetesSchema: false, injections: [withUnknownFields] }).text);
    assert.deepEqual(loaded.injections, [withUnknownFields]);
    const proxy = loaded.injections[0].containers?.[0];
    assert.deepEqual(proxy?.futureField, { x: 1, nested: [true, null, 'y', { z: 2.5 }] });
    assert.deepEqual(proxy?.resizePolicy, [{ resourceName: 'cpu', restartPolicy: 'NotRequired' }]);
  });

  test('keeps a key named "__proto__" inside an unknown container field (the property test\'s counterexample)', () => {
    // JSON.parse makes "__proto__" an ordinary key; a key-by-key copy with plain assignment drops it.
    const value = JSON.parse('{"":{"__proto__":0},"constructor":{"__proto__":{"x":1}}}');
    const injection: Injection = { name: 'proxy', trigger: { type: 'always' }, containers: [{ name: 'proxy', image: 'proxy:1', futureField: value }] };
    const { text } = configMapOf({ checkKubernetesSchema: false, injections: [injection] });
    const loaded = loadInjectorConfig(text);
    assert.equal(JSON.stringify(loaded.injections[0].containers?.[0].futureField), '{"":{"__proto__":0},"constructor":{"__proto__":{"x":1}}}');
  });

  test('keeps any JSON value of an unknown container field untouched (property)', () => {
    const futureValue = fc.jsonValue({ maxDepth: 3 }).filter((value) => !JSON.stringify(value).includes('{{'));
    fc.assert(
      fc.property(futureValue, (value: unknown) => {
        const injection: Injection = {
          name: 'proxy',
          trigger: { type: 'always' },
          containers: [{ name: 'proxy', image: 'proxy:1', futureField: value }],
        };
        const loaded = loadInjectorConfig(configMapOf({ checkKubernetesSchema: false, injections: [injection] }).text);
        assert.deepEqual(loaded.injections[0].containers?.[0].futureField, JSON.parse(JSON.stringify(value)));
      }),
      { numRuns: 40 },
    );
  });
});

describe('resolveInjectorConfig', () => {
  const inputs: Record<string, unknown> = {
    'the default injections': { injections: DEFAULT_INJECTIONS },
    'a config that leaves every default out': { injections: [{ name: 'a', trigger: { type: 'requested' }, env: [{ name: 'A', value: '1' }] }] },
    'injections with unknown Kubernetes fields': { annotationPrefix: 'mesh.example.com', enabled: false, injections: [withUnknownFields] },
    'no injections': { injections: [] },
  };
  for (const [description, input] of Object.entries(inputs)) {
    test(`is idempotent for ${description}`, () => {
      const once = resolveInjectorConfig(input);
      const twice = resolveInjectorConfig(once);
      assert.deepEqual(twice, once);
      assert.equal(JSON.stringify(twice), JSON.stringify(once), 'including the order of the keys (the ConfigMap text does not change)');
    });
  }
});

describe('loadInjectorConfig', () => {
  test('rejects text that is not JSON with an InjectorConfigError at (file)', () => {
    const error = loadErrorOf('injections:\n  - name: envoy\n');
    assert.equal(error.issues.length, 1);
    assert.equal(error.issues[0].path, '(file)');
    assert.match(error.issues[0].message, /^is not JSON: /);
    assert.match(error.message, /\(file\): is not JSON/);
  });

  test('rejects an empty file', () => {
    assert.equal(loadErrorOf('').issues[0].path, '(file)');
  });

  test('rejects JSON that is not an object', () => {
    assert.deepEqual(loadErrorOf('[]').issues, [{ path: '(config)', message: 'must be an object, got an array' }]);
  });

  test('rejects an invalid config with an InjectorConfigError naming every path', () => {
    const error = loadErrorOf(JSON.stringify({ injections: [{ name: 'Bad', trigger: { type: 'always' } }], extra: 1 }));
    assert.deepEqual(error.issues.map((issue) => issue.path).sort(), ['extra', 'injections[0]', 'injections[0].name']);
    assert.match(error.message, /injections\[0\]\.name: "Bad" must consist of lower case/);
    assert.match(error.message, /injections\[0\]: adds nothing/);
    assert.match(error.message, /extra: unknown field/);
  });

  test('rejects a hand-edited ConfigMap whose injections clash, naming the second one', () => {
    const { text } = configMapOf({ injections: DEFAULT_INJECTIONS });
    const edited = JSON.parse(text) as { injections: unknown[] };
    edited.injections.push(edited.injections[0]);
    const error = loadErrorOf(JSON.stringify(edited));
    assert.ok(
      error.issues.some((issue) => issue.path === `injections[${DEFAULT_INJECTIONS.length}].name` && /duplicate injection name "envoy"/.test(issue.message)),
      error.message,
    );
  });
});
