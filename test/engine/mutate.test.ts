import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { DEFAULT_INJECTIONS } from '../../app/default-injections';
import { Injection, resolveInjectorConfig } from '../../webhook/config';
import { evaluate, mutate } from '../../webhook/engine';
import { pointer } from '../../webhook/engine/json-pointer';
import { assertValidManifest } from '../support/openapi-validator';
import { applyResponse, decodePatch, loadReview, names, podOf, reviewNames } from '../support/recorded-reviews';

const defaultConfig = resolveInjectorConfig({ injections: DEFAULT_INJECTIONS });

/** Runs the engine and applies its patch as the apiserver would; checks the result stays valid. */
function admit(request: any, config = defaultConfig) {
  const result = evaluate(request, config);
  assert.equal(result.response.uid, request.uid, 'the uid is echoed');
  assert.equal(result.response.allowed, true);
  const object = applyResponse(request.object, result.response);
  if (request.object) assertValidManifest(object);
  return { ...result, object, pod: podOf(object), warnings: result.response.warnings ?? [] };
}

function reasonOf(result: { decisions: readonly { injection: string; reason: string }[] }, injection: string): string | undefined {
  return result.decisions.find((decision) => decision.injection === injection)?.reason;
}

/** A recorded pod relabelled for the probe-defaults example: label app=myApp, container my-container. */
function myAppPod(withReadinessProbe: boolean) {
  const review = loadReview('pod-create-demoapp');
  const pod = review.request.object;
  pod.metadata.labels = { app: 'myApp' };
  pod.spec.containers[0].name = 'my-container';
  if (withReadinessProbe) pod.spec.containers[0].readinessProbe = { httpGet: { path: '/', port: 5678 }, periodSeconds: 5 };
  return review;
}

describe('the default app seed injections on recorded requests', () => {
  test('envoy is added to every pod, after the user containers, with a status annotation', () => {
    const result = admit(loadReview('pod-create-demoapp').request);
    assert.deepEqual(names(result.pod.spec.containers), ['demoapp', 'envoy']);
    assert.equal(result.pod.spec.containers[1].image, 'envoyproxy/envoy:v1.20.3');
    assert.equal(result.pod.metadata.annotations['sidecar-injector.io/status'], 'envoy');
  });

  test('wait-for-it adds an init container to the Deployment template with the annotation value as args', () => {
    const result = admit(loadReview('deployment-create-frontend').request);
    const configured = DEFAULT_INJECTIONS.find((injection) => injection.name === 'wait-for-it')!.initContainers![0];
    assert.deepEqual(result.pod.spec.initContainers, [{ ...configured, args: ['www.google.com:80'] }]);
    assert.deepEqual(names(result.pod.spec.containers), ['nginx'], 'the app containers are untouched');
    assert.equal(result.pod.metadata.annotations['sidecar-injector.io/status'], 'wait-for-it');
    assert.equal(result.object.metadata.annotations['sidecar-injector.io/status'], undefined, 'status goes on the template, which pods inherit');
  });

  test('nginx-sidecar and envoy compose on one annotated pod, volume and mount included', () => {
    const result = admit(loadReview('pod-create-sleep').request);
    assert.deepEqual(names(result.pod.spec.containers), ['sleep', 'helper', 'envoy', 'sidecar-nginx']);
    const nginx = result.pod.spec.containers[3];
    assert.deepEqual(nginx.volumeMounts, [{ name: 'nginx-conf', mountPath: '/etc/nginx' }]);
    assert.deepEqual(names(result.pod.spec.volumes), ['data', 'kube-api-access-pk2l8', 'nginx-conf']);
    assert.deepEqual(result.pod.spec.volumes[2].configMap, { name: 'nginx-configmap' });
    assert.deepEqual(names(result.pod.spec.initContainers), ['setup'], 'user init containers untouched');
    assert.equal(result.pod.metadata.annotations['sidecar-injector.io/status'], 'envoy,nginx-sidecar');
    assert.equal(result.pod.metadata.annotations['example.com/owner'], 'team-a', 'existing annotations kept');
  });

  test('probe-defaults merges initialDelaySeconds into my-container where it has a readiness probe', () => {
    const result = admit(myAppPod(true).request);
    assert.deepEqual(result.pod.spec.containers[0].readinessProbe, { httpGet: { path: '/', port: 5678 }, periodSeconds: 5, initialDelaySeconds: 10 });
    assert.equal(reasonOf(result, 'probe-defaults'), 'injected');
  });

  test('probe-defaults leaves a container without a readiness probe alone (a probe needs a handler)', () => {
    const result = admit(myAppPod(false).request);
    assert.equal(result.pod.spec.containers[0].readinessProbe, undefined);
    assert.equal(reasonOf(result, 'probe-defaults'), 'no-change');
    assert.equal(result.pod.metadata.annotations['sidecar-injector.io/status'], 'envoy');
  });

  test('a pod without the nginx annotation or label gets neither, with the reason trigger-not-met', () => {
    const result = admit(loadReview('pod-create-worker-').request);
    assert.equal(reasonOf(result, 'nginx-sidecar'), 'trigger-not-met');
    assert.equal(reasonOf(result, 'probe-defaults'), 'trigger-not-met');
    assert.equal(reasonOf(result, 'wait-for-it'), 'out-of-scope');
  });
});

describe('idempotence', () => {
  for (const name of reviewNames()) {
    test(`does not inject twice when reinvoked on its own output (${name})`, () => {
      const request = loadReview(name).request;
      const first = admit(request);
      const second = evaluate({ ...request, object: first.object }, defaultConfig);
      assert.deepEqual(decodePatch(second.response), [], 'second pass patch');
      assert.equal(second.response.warnings, undefined, 'no warnings on reinvocation');
    });
  }

  test('an UPDATE of a Deployment it already injected returns no patch', () => {
    const created = admit(loadReview('deployment-create-frontend').request);
    const update = loadReview('deployment-update-frontend').request;
    // What the apiserver sends after `kubectl set image` on the injected Deployment.
    update.oldObject = created.object;
    update.object = structuredClone(created.object);
    update.object.spec.template.spec.containers[0].image = 'nginx:1.16.1';
    const result = evaluate(update, defaultConfig);
    assert.deepEqual(decodePatch(result.response), []);
    assert.equal(reasonOf(result, 'wait-for-it'), 'already-injected');
  });

  test('the recorded UPDATE of a Deployment made before the webhook existed is injected once', () => {
    const request = loadReview('deployment-update-frontend').request;
    const result = admit(request);
    assert.deepEqual(names(result.pod.spec.initContainers), ['wait-for-it']);
    assert.deepEqual(decodePatch(evaluate({ ...request, object: result.object }, defaultConfig).response), []);
  });
});

describe('opting out and requesting', () => {
  test('inject: "false" on the pod beats every trigger', () => {
    const review = loadReview('pod-create-sleep');
    review.request.object.metadata.annotations['sidecar-injector.io/inject'] = 'false';
    const result = evaluate(review.request, defaultConfig);
    assert.deepEqual(decodePatch(result.response), []);
    assert.equal(reasonOf(result, 'envoy'), 'opted-out');
    assert.equal(reasonOf(result, 'nginx-sidecar'), 'opted-out');
  });

  test('inject: "false" on a Deployment pod template beats the annotation trigger', () => {
    const review = loadReview('deployment-create-frontend');
    review.request.object.spec.template.metadata.annotations = { 'sidecar-injector.io/inject': 'false' };
    const result = evaluate(review.request, defaultConfig);
    assert.deepEqual(decodePatch(result.response), []);
    assert.equal(reasonOf(result, 'wait-for-it'), 'opted-out');
  });

  const requestedConfig = resolveInjectorConfig({
    annotationPrefix: 'injector.example.com',
    injections: [
      { name: 'envoy', trigger: { type: 'requested' }, targetKinds: ['DaemonSet', 'Pod'], containers: [{ name: 'envoy', image: 'envoyproxy/envoy:v1.20.3' }] },
      { name: 'debug', trigger: { type: 'requested' }, targetKinds: ['DaemonSet'], containers: [{ name: 'debug', image: 'busybox:1.36' }] },
    ],
  });

  test('a requested injection is injected only when the inject annotation names it', () => {
    const result = admit(loadReview('daemonset-create-agent').request, requestedConfig);
    assert.deepEqual(names(result.pod.spec.containers), ['agent', 'envoy']);
    assert.equal(reasonOf(result, 'debug'), 'trigger-not-met');
    assert.equal(result.pod.metadata.annotations['injector.example.com/status'], 'envoy');
  });

  test('an unknown name in the inject annotation is a warning, not an error', () => {
    const review = loadReview('daemonset-create-agent');
    review.request.object.spec.template.metadata.annotations['injector.example.com/inject'] = 'envoy, nope';
    const result = admit(review.request, requestedConfig);
    assert.deepEqual(names(result.pod.spec.containers), ['agent', 'envoy']);
    assert.equal(result.warnings.length, 1);
    assert.match(result.warnings[0], /"nope", which is not a configured injection/);
  });
});

describe('workloads', () => {
  const logShipper: Injection = {
    name: 'log-shipper',
    trigger: { type: 'always' },
    targetKinds: ['Deployment', 'StatefulSet', 'DaemonSet', 'ReplicaSet', 'Job', 'CronJob'],
    initContainers: [{ name: 'log-shipper', image: 'fluent/fluent-bit:3.0', restartPolicy: 'Always' }],
    volumes: [{ name: 'shipper-buffer', emptyDir: {} }],
    volumeMounts: [{ name: 'shipper-buffer', mountPath: '/var/log/app' }],
    env: [{ name: 'WORKLOAD_NAME', value: '{{name}}' }, { name: 'WORKLOAD_NAMESPACE', value: '{{namespace}}' }],
    labels: { 'logging.example.com/shipped': 'true' },
  };
  const config = resolveInjectorConfig({ injections: [logShipper] });
  const cases: [string, string][] = [
    ['deployment-create-frontend', '/spec/template'],
    ['statefulset-create-db', '/spec/template'],
    ['daemonset-create-agent', '/spec/template'],
    ['job-create-batch-once', '/spec/template'],
    ['cronjob-create-nightly', '/spec/jobTemplate/spec/template'],
  ];
  for (const [name, templatePointer] of cases) {
    test(`injects into the pod template of ${name} at ${templatePointer}`, () => {
      const request = loadReview(name).request;
      const result = admit(request, config);
      for (const operation of decodePatch(result.response)) {
        assert.ok(operation.path.startsWith(templatePointer + '/'), `every operation under ${templatePointer}, got ${operation.path}`);
      }
      const container = result.pod.spec.containers[0];
      assert.deepEqual(container.volumeMounts.at(-1), { name: 'shipper-buffer', mountPath: '/var/log/app' });
      assert.deepEqual(container.env.slice(-2), [
        { name: 'WORKLOAD_NAME', value: request.object.metadata.name },
        { name: 'WORKLOAD_NAMESPACE', value: request.namespace },
      ]);
      assert.equal(result.pod.spec.initContainers.at(-1).restartPolicy, 'Always', 'a native sidecar goes into initContainers');
      assert.equal(result.pod.metadata.labels['logging.example.com/shipped'], 'true');
    });
  }

  test('a ReplicaSet is injected like a Deployment', () => {
    const review = loadReview('deployment-create-frontend');
    review.request.kind = { group: 'apps', version: 'v1', kind: 'ReplicaSet' };
    const replicaSet = review.request.object;
    replicaSet.kind = 'ReplicaSet';
    for (const field of ['strategy', 'revisionHistoryLimit', 'progressDeadlineSeconds']) delete replicaSet.spec[field];
    delete replicaSet.status;
    const result = admit(review.request, config);
    assert.deepEqual(names(result.pod.spec.initContainers), ['log-shipper']);
  });

  test('a kind with the same name in another API group is out of scope', () => {
    const review = loadReview('deployment-create-frontend');
    review.request.kind = { group: 'example.com', version: 'v1', kind: 'Deployment' };
    const result = evaluate(review.request, config);
    assert.deepEqual(decodePatch(result.response), []);
    assert.equal(reasonOf(result, 'log-shipper'), 'out-of-scope');
  });

  test('a Pod UPDATE is never patched: pods cannot change their containers', () => {
    const review = loadReview('pod-create-demoapp');
    review.request.operation = 'UPDATE';
    review.request.oldObject = structuredClone(review.request.object);
    assert.deepEqual(decodePatch(mutate(review.request, defaultConfig)), []);
  });
});

describe("the user's objects win collisions, with a warning", () => {
  test('a user container named like an injected one is kept and warned about', () => {
    const review = loadReview('pod-create-demoapp');
    review.request.object.spec.containers.push({ name: 'envoy', image: 'my-own/envoy:1' });
    const result = admit(review.request);
    assert.deepEqual(names(result.pod.spec.containers), ['demoapp', 'envoy']);
    assert.equal(result.pod.spec.containers[1].image, 'my-own/envoy:1');
    assert.match(result.warnings.join('\n'), /container "envoy" already exists in the pod; kept the pod's own/);
  });

  test('a user init container with an injected container name is a collision too', () => {
    const review = loadReview('pod-create-worker-');
    review.request.object.spec.initContainers[0].name = 'envoy';
    const result = admit(review.request);
    assert.deepEqual(names(result.pod.spec.containers), ['worker']);
    assert.equal(result.warnings.length, 1);
  });

  test('a user volume and env var with injected names are kept', () => {
    const config = resolveInjectorConfig({
      injections: [
        {
          name: 'tracing',
          trigger: { type: 'always' },
          volumes: [{ name: 'data', emptyDir: {} }],
          env: [{ name: 'OTEL_ENDPOINT', value: 'http://collector:4317' }],
        },
      ],
    });
    const review = loadReview('pod-create-sleep');
    review.request.object.spec.containers[0].env = [{ name: 'OTEL_ENDPOINT', value: 'mine' }];
    const result = admit(review.request, config);
    assert.deepEqual(result.pod.spec.volumes.find((v: any) => v.name === 'data'), { name: 'data', emptyDir: {} });
    assert.deepEqual(result.pod.spec.containers[0].env, [{ name: 'OTEL_ENDPOINT', value: 'mine' }]);
    assert.deepEqual(result.pod.spec.containers[1].env, [{ name: 'OTEL_ENDPOINT', value: 'http://collector:4317' }]);
    assert.equal(result.warnings.length, 2, `warnings: ${result.warnings.join(' | ')}`);
  });

  test('an existing label with another value is kept', () => {
    const config = resolveInjectorConfig({ injections: [{ name: 'tier', trigger: { type: 'always' }, labels: { 'example.com/tier': 'frontend' } }] });
    const result = admit(loadReview('pod-create-sleep').request, config);
    assert.equal(result.pod.metadata.labels['example.com/tier'], 'backend');
    assert.match(result.warnings[0], /label "example.com\/tier" is already set; kept "backend"/);
  });
});

describe('patch construction', () => {
  test('creates missing maps and lists without replacing existing ones', () => {
    const config = resolveInjectorConfig({
      injections: [
        {
          name: 'all',
          trigger: { type: 'always' },
          targetKinds: ['Job'],
          annotations: { 'a.example.com/x': 'escaped' },
          labels: { team: 'platform' },
          imagePullSecrets: [{ name: 'registry' }],
          initContainers: [{ name: 'init', image: 'busybox:1.36' }],
          volumes: [{ name: 'scratch', emptyDir: {} }],
        },
      ],
    });
    const request = loadReview('job-create-batch-once').request; // template metadata has no labels or annotations
    const result = admit(request, config);
    const paths = decodePatch(result.response).map((operation) => `${operation.op} ${operation.path}`);
    assert.deepEqual(paths, [
      'add /spec/template/spec/initContainers',
      'add /spec/template/spec/volumes',
      'add /spec/template/spec/imagePullSecrets',
      'add /spec/template/metadata/labels',
      'add /spec/template/metadata/annotations',
      'add /spec/template/metadata/annotations/sidecar-injector.io~1status',
      'add /spec/template/metadata/annotations/sidecar-injector.io~1injection-hashes',
    ]);
    assert.equal(result.pod.metadata.annotations['a.example.com/x'], 'escaped');
    assert.deepEqual(result.pod.spec.imagePullSecrets, [{ name: 'registry' }]);
  });

  test('escapes "/" in annotation keys of an existing map, and "~" in any pointer token', () => {
    const config = resolveInjectorConfig({ injections: [{ name: 'a', trigger: { type: 'always' }, annotations: { 'x.example.com/a': 'v' } }] });
    const result = admit(loadReview('pod-create-sleep').request, config);
    const paths = decodePatch(result.response).map((operation) => operation.path);
    assert.ok(paths.includes('/metadata/annotations/x.example.com~1a'), `paths: ${paths.join(', ')}`);
    assert.equal(pointer('/metadata/annotations', 'a~b/c'), '/metadata/annotations/a~0b~1c');
  });

  test('the base64 patch is exactly the JSON of the operations, small or large, ASCII or not', () => {
    // The patch is encoded through a reused 64 KiB buffer; one that could not fit there (a 100 kB env
    // value here) is encoded on its own. Multi-byte UTF-8 must survive either way.
    for (const [what, value] of [
      ['small, non-ASCII', 'café ☕ 𝄞 "quoted" \\ back'],
      ['larger than the scratch buffer', 'x'.repeat(100_000) + 'é'],
    ]) {
      const config = resolveInjectorConfig({
        injections: [
          {
            name: 'a',
            trigger: { type: 'always' },
            annotations: { 'x.example.com/note': value },
            containers: [{ name: 'side', image: 'busybox:1.36', env: [{ name: 'NOTE', value }] }],
          },
        ],
      });
      const result = admit(loadReview('pod-create-sleep').request, config);
      assert.equal(Buffer.from(result.response.patch!, 'base64').toString('utf8'), JSON.stringify(result.patch), what);
      assert.equal(result.pod.metadata.annotations['x.example.com/note'], value, what);
      assert.equal(result.pod.spec.containers.at(-1).env[0].value, value, what);
    }
  });

  test('a template that cannot render skips that injection with a warning, not an error', () => {
    const review = loadReview('deployment-create-frontend');
    review.request.object.metadata.annotations['com.foreach/wait-for-it'] = '';
    const result = admit(review.request);
    assert.equal(reasonOf(result, 'wait-for-it'), 'render-failed');
    assert.equal(result.pod.spec.initContainers, undefined);
    assert.match(result.warnings[0], /wait-for-it.*\{\{annotation\}\} has no value/);
  });

  test('a dry-run request is answered exactly like a real one', () => {
    const dryRun = loadReview('pod-create-dryrun-dryrun').request;
    const real = { ...structuredClone(dryRun), dryRun: false, options: { ...dryRun.options, dryRun: undefined } };
    assert.deepEqual(mutate(dryRun, defaultConfig), mutate(real, defaultConfig));
  });

  test('enabled: false admits everything unchanged', () => {
    const config = resolveInjectorConfig({ enabled: false, injections: DEFAULT_INJECTIONS });
    for (const name of reviewNames()) {
      const result = evaluate(loadReview(name).request, config);
      assert.deepEqual(result.response, { uid: loadReview(name).request.uid, allowed: true }, name);
      assert.ok(result.decisions.every((decision) => decision.reason === 'disabled'));
    }
  });

  test('a native sidecar already in the pod is kept and a new one is appended after it', () => {
    const config = resolveInjectorConfig({
      injections: [{ name: 'proxy', trigger: { type: 'always' }, initContainers: [{ name: 'proxy', image: 'envoyproxy/envoy:v1.30.1', restartPolicy: 'Always' }] }],
    });
    const result = admit(loadReview('pod-create-worker-').request, config);
    assert.deepEqual(result.pod.spec.initContainers.map((c: any) => [c.name, c.restartPolicy]), [
      ['log-shipper', 'Always'],
      ['proxy', 'Always'],
    ]);
  });

  test('fields the library does not know pass through into the pod untouched', () => {
    const config = resolveInjectorConfig({
      injections: [{ name: 'future', trigger: { type: 'always' }, containers: [{ name: 'future', image: 'x:1', resizePolicy: [{ resourceName: 'cpu', restartPolicy: 'NotRequired' }] }] }],
    });
    const result = admit(loadReview('pod-create-demoapp').request, config);
    assert.deepEqual(result.pod.spec.containers[1].resizePolicy, [{ resourceName: 'cpu', restartPolicy: 'NotRequired' }]);
  });
});

describe('keys named like Object.prototype members', () => {
  // JSON.parse makes "__proto__" an ordinary key, and so does the apiserver; a plain `out[key] = value`
  // copy would drop it (or make it the copy's prototype). Found by the config round-trip property test.
  test('a "__proto__" key inside an injected container survives placeholder rendering', () => {
    const futureField = JSON.parse('{"__proto__":{"owner":"{{name}}"},"constructor":"x"}');
    const config = resolveInjectorConfig({
      injections: [{ name: 'proxy', trigger: { type: 'always' }, containers: [{ name: 'proxy', image: 'proxy:1', futureField }] } as Injection],
    });
    const review = loadReview('pod-create-demoapp');
    const result = evaluate(review.request, config);
    const added = decodePatch(result.response).find((operation) => operation.path === '/spec/containers/-') as { value: Record<string, unknown> };
    assert.ok(added, 'the proxy container is added');
    assert.equal(JSON.stringify(added.value.futureField), `{"__proto__":{"owner":"${review.request.object.metadata.name}"},"constructor":"x"}`);
  });

  test('a "__proto__" object set by one merge is merged into by the next', () => {
    const config = resolveInjectorConfig({
      injections: [
        { name: 'first', trigger: { type: 'always' }, merges: [{ containerNames: ['my-container'], whenMissing: 'create', fields: JSON.parse('{"readinessProbe":{"__proto__":{"a":1}}}') }] },
        { name: 'second', trigger: { type: 'always' }, merges: [{ containerNames: ['my-container'], fields: JSON.parse('{"readinessProbe":{"__proto__":{"b":2}}}') }] },
      ] as Injection[],
    });
    const result = evaluate(myAppPod(true).request, config);
    const operations = decodePatch(result.response).filter((operation) => operation.path.startsWith('/spec/containers/0/readinessProbe/__proto__'));
    // The second merge finds the object the first one created (it skips only what is missing).
    assert.equal(JSON.stringify(operations), '[{"op":"add","path":"/spec/containers/0/readinessProbe/__proto__","value":{"a":1}},{"op":"add","path":"/spec/containers/0/readinessProbe/__proto__/b","value":2}]');
  });
});
