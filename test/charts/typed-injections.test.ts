import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import { App, Chart, Lazy } from 'cdk8s';
import { k8s } from 'cdk8s-plus-27';
import { InjectionProps, SidecarInjector, SidecarInjectorPropsError, loadInjectorConfig } from '../../charts/engine';
import { resolveInjectionProps } from '../../charts/engine';
import { GENERATED_SCHEMAS_FILE, generateKubernetesSchemas } from '../../charts/schema/generate-kubernetes-schemas';
import { evaluate } from '../../webhook/engine';
import { assertValidManifest } from '../support/openapi-validator';
import { applyResponse, loadReview } from '../support/recorded-reviews';
import { buildChart, findManifest, synthesize } from '../support/synth-helpers';
import { testCertificateFor } from '../support/test-certificate';

const restricted = {
  runAsNonRoot: true,
  allowPrivilegeEscalation: false,
  capabilities: { drop: ['ALL'] },
  seccompProfile: { type: 'RuntimeDefault' },
};

/** A sidecar written the cdk8s way: Quantity resources, an IntOrString probe port. */
const typedEnvoy: k8s.Container = {
  name: 'envoy',
  image: 'envoyproxy/envoy:v1.31.0',
  ports: [{ name: 'admin', containerPort: 9901 }],
  resources: {
    requests: { cpu: k8s.Quantity.fromString('100m'), memory: k8s.Quantity.fromString('128Mi') },
    limits: { memory: k8s.Quantity.fromString('256Mi') },
  },
  readinessProbe: { httpGet: { path: '/ready', port: k8s.IntOrString.fromNumber(9901) }, periodSeconds: 5 },
  livenessProbe: { tcpSocket: { port: k8s.IntOrString.fromString('admin') } },
  securityContext: restricted,
};

function propsErrorOf(build: () => unknown): SidecarInjectorPropsError {
  try {
    build();
  } catch (error) {
    if (error instanceof SidecarInjectorPropsError) return error;
    assert.fail(`expected a SidecarInjectorPropsError, got ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}`);
  }
  assert.fail('expected the props to be rejected, but the SidecarInjector was built');
}

function configOf(injections: InjectionProps[]) {
  const { manifests } = synthesize(buildChart({ injections }).app);
  return loadInjectorConfig(findManifest(manifests, 'ConfigMap').data['config.json']);
}

describe('injections written with cdk8s-plus-27 k8s types', () => {
  test('Quantity and IntOrString become Kubernetes JSON in config.json', () => {
    const config = configOf([{ name: 'envoy', trigger: { type: 'always' }, containers: [typedEnvoy] }]);
    const container = config.injections[0].containers![0] as Record<string, any>;
    assert.deepEqual(container.resources, { requests: { cpu: '100m', memory: '128Mi' }, limits: { memory: '256Mi' } });
    assert.deepEqual(container.readinessProbe, { httpGet: { path: '/ready', port: 9901 }, periodSeconds: 5 });
    assert.deepEqual(container.livenessProbe, { tcpSocket: { port: 'admin' } });
  });

  test('the resolved container equals what cdk8s-plus-27\'s own toJson_Container writes', () => {
    const resolved = resolveInjectionProps({ name: 'envoy', trigger: { type: 'always' }, containers: [typedEnvoy] });
    assert.deepEqual(resolved.containers![0], JSON.parse(JSON.stringify(k8s.toJson_Container(typedEnvoy))));
  });

  test('the pod it injects validates against the Kubernetes 1.32 schema', () => {
    const config = configOf([{ name: 'envoy', trigger: { type: 'always' }, containers: [typedEnvoy] }]);
    const request = loadReview('pod-create-demoapp').request;
    const result = evaluate(request, config);
    const pod = applyResponse(request.object, result.response) as any;
    assert.deepEqual(pod.spec.containers.map((c: any) => c.name), ['demoapp', 'envoy'], `the pod's containers: ${JSON.stringify(pod.spec.containers)}`);
    assert.equal(pod.spec.containers[1].resources.requests.cpu, '100m');
    assertValidManifest(pod);
  });

  test('fields the 1.27 types spell differently (downwardApi, hostIp) get the Kubernetes spelling', () => {
    const volume: k8s.Volume = { name: 'podinfo', downwardApi: { items: [{ path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } }] } };
    const container: k8s.Container = { name: 'agent', image: 'agent:1', ports: [{ containerPort: 8125, hostIp: '127.0.0.1', hostPort: 8125 }], securityContext: restricted };
    const config = configOf([{ name: 'agent', trigger: { type: 'always' }, volumes: [volume], containers: [container] }]);
    assert.deepEqual(config.injections[0].volumes![0], { name: 'podinfo', downwardAPI: { items: [{ path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } }] } });
    assert.deepEqual((config.injections[0].containers![0] as any).ports, [{ containerPort: 8125, hostIP: '127.0.0.1', hostPort: 8125 }]);
  });

  test('fields newer than the 1.27 types still work: a native sidecar with restartPolicy Always', () => {
    const config = configOf([
      { name: 'otel', trigger: { type: 'always' }, initContainers: [{ ...typedEnvoy, name: 'otel', restartPolicy: 'Always' }] },
    ]);
    assert.equal((config.injections[0].initContainers![0] as any).restartPolicy, 'Always');
    assert.equal((config.injections[0].initContainers![0] as any).resources.requests.cpu, '100m');
  });

  test('Lazy values are produced', () => {
    const config = configOf([
      { name: 'envoy', trigger: { type: 'always' }, env: [{ name: 'MODE', value: Lazy.any({ produce: () => 'sidecar' }) }] },
    ]);
    assert.deepEqual(config.injections[0].env, [{ name: 'MODE', value: 'sidecar' }]);
  });

  test('typed env vars, mounts and merges resolve too', () => {
    const config = configOf([
      {
        name: 'tuning',
        trigger: { type: 'always' },
        env: [{ name: 'POD_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } }],
        volumeMounts: [{ name: 'shared', mountPath: '/shared', readOnly: true }],
        merges: [{ containerNames: ['app'], fields: { resources: { limits: { cpu: k8s.Quantity.fromString('2') } } } }],
      },
    ]);
    assert.deepEqual(config.injections[0].merges![0].fields, { resources: { limits: { cpu: '2' } } });
  });
});

describe('injected objects are checked against the Kubernetes 1.32 schema at synth', () => {
  test('a misspelled container field fails synth, naming injections[N].containers[M].<field>', () => {
    const error = propsErrorOf(() =>
      buildChart({
        injections: [
          { name: 'ok', trigger: { type: 'always' }, containers: [{ name: 'ok', image: 'ok:1', securityContext: restricted }] },
          { name: 'typo', trigger: { type: 'always' }, containers: [{ name: 'a', image: 'a:1' }, { name: 'b', image: 'b:1', imagePullPolicyy: 'Always' }] },
        ],
      }),
    );
    assert.deepEqual(error.issues.map((issue) => issue.path), ['injections[1].containers[1].imagePullPolicyy'], error.message);
    assert.match(error.issues[0].message, /unknown field/);
  });

  test('a misspelled nested field and a wrong type are both reported, with their paths', () => {
    const error = propsErrorOf(() =>
      buildChart({
        injections: [
          {
            name: 'proxy',
            trigger: { type: 'always' },
            containers: [{ name: 'proxy', image: 'proxy:1', securityContext: { runAsNonRot: true }, ports: [{ containerPort: 'http' }] }],
          },
        ],
      }),
    );
    assert.deepEqual(
      error.issues.map((issue) => `${issue.path}: ${issue.message}`).sort(),
      [
        'injections[0].containers[0].ports[0].containerPort: must be integer (Kubernetes 1.32 schema)',
        'injections[0].containers[0].securityContext.runAsNonRot: unknown field (Kubernetes 1.32 schema)',
      ],
      error.message,
    );
  });

  test('volumes, env vars and merges are checked too', () => {
    const error = propsErrorOf(() =>
      buildChart({
        injections: [
          {
            name: 'bad',
            trigger: { type: 'always' },
            volumes: [{ name: 'v', emptyDirr: {} }],
            env: [{ name: 'A', valu: 'x' }],
            merges: [{ containerNames: ['app'], fields: { readinessProbe: { initialDelaySecond: 10 } } }],
          },
        ],
      }),
    );
    assert.deepEqual(
      error.issues.map((issue) => issue.path).sort(),
      ['injections[0].env[0].valu', 'injections[0].merges[0].fields.readinessProbe.initialDelaySecond', 'injections[0].volumes[0].emptyDirr'],
      error.message,
    );
  });

  test('addInjection checks the schema as well, at the index the injection gets', () => {
    const { injector } = buildChart({ injections: [{ name: 'a', trigger: { type: 'always' }, containers: [{ name: 'a', image: 'a:1', securityContext: restricted }] }] });
    const error = propsErrorOf(() => injector.addInjection({ name: 'b', trigger: { type: 'always' }, containers: [{ name: 'b', image: 'b:1', stdinn: true }] }));
    assert.deepEqual(error.issues.map((issue) => issue.path), ['injections[1].containers[0].stdinn'], error.message);
  });

  test('checkKubernetesSchema: false lets a field newer than the shipped schema through, unchanged', () => {
    const { manifests } = synthesize(
      buildChart({ checkKubernetesSchema: false, injections: [{ name: 'a', trigger: { type: 'always' }, containers: [{ name: 'a', image: 'a:1', futureField: { x: 1 } }] }] }).app,
    );
    const config = loadInjectorConfig(findManifest(manifests, 'ConfigMap').data['config.json']);
    assert.deepEqual((config.injections[0].containers![0] as any).futureField, { x: 1 });
  });

  test('the shipped schema file is what the generator writes from the 1.32 documents', () => {
    assert.equal(fs.readFileSync(GENERATED_SCHEMAS_FILE, 'utf8'), generateKubernetesSchemas(), 'run: npx tsx charts/schema/generate-kubernetes-schemas.ts');
  });
});

describe('every problem at once', () => {
  test('bad settings and every bad injection come in one error that names the construct path', () => {
    const app = new App({ outdir: '/tmp/never-written' });
    const chart = new Chart(app, 'platform');
    const error = propsErrorOf(
      () =>
        new SidecarInjector(chart, 'Injector', {
          replicas: 0,
          timeoutSeconds: 90,
          certificate: testCertificateFor('sidecar-injector', 'sidecar-injector'),
          injections: [
            { name: 'Bad_Name', trigger: { type: 'always' } },
            { name: 'b', trigger: { type: 'always' }, containers: [{ name: 'b', image: 'b:1', imagePullPolicyy: 'x' }] },
            { name: 'c', trigger: { type: 'always' }, env: [{ name: 'C', valu: '1' }] },
          ],
        }),
    );
    const paths = error.issues.map((issue) => issue.path);
    for (const expected of ['replicas', 'timeoutSeconds', 'injections[0].name', 'injections[1].containers[0].imagePullPolicyy', 'injections[2].env[0].valu']) {
      assert.ok(paths.includes(expected), `an issue at ${expected}, got:\n${error.message}`);
    }
    assert.equal(error.constructPath, 'platform/Injector');
    assert.match(error.message, /^invalid props of SidecarInjector "platform\/Injector":\n/);
  });
});

describe('clashing injectors in one app fail, naming both construct paths', () => {
  function twoInjectors(first: ConstructorParameters<typeof SidecarInjector>[2], second: ConstructorParameters<typeof SidecarInjector>[2]) {
    const app = new App({ outdir: '/tmp/never-written' });
    const certificate = (props: typeof first) => testCertificateFor(props?.serviceName ?? props?.name ?? 'sidecar-injector', props?.namespace ?? 'sidecar-injector');
    new SidecarInjector(new Chart(app, 'team-a'), 'Injector', { ...first, certificate: certificate(first) });
    return propsErrorOf(() => new SidecarInjector(new Chart(app, 'team-b'), 'Injector', { ...second, certificate: certificate(second) }));
  }

  test('two injectors with default props: same name, webhook configuration and Namespace', () => {
    const error = twoInjectors({}, {});
    assert.deepEqual(error.issues.map((issue) => issue.path), ['name', 'webhookConfigurationName', 'createNamespace'], error.message);
    for (const issue of error.issues) assert.match(issue.message, /the SidecarInjector "team-a\/Injector"/);
    assert.match(error.message, /SidecarInjector "team-b\/Injector"/);
  });

  test('the same webhook configuration name with different namespaces', () => {
    const error = twoInjectors({ namespace: 'a', webhookConfigurationName: 'injector' }, { namespace: 'b', webhookConfigurationName: 'injector' });
    assert.deepEqual(error.issues.map((issue) => issue.path), ['webhookConfigurationName'], error.message);
  });

  test('the same Namespace made twice by differently named injectors', () => {
    const error = twoInjectors({ name: 'one' }, { name: 'two' });
    assert.deepEqual(error.issues.map((issue) => issue.path), ['createNamespace'], error.message);
  });

  test('no clash when the second one shares the namespace without making it', () => {
    const app = new App({ outdir: '/tmp/never-written' });
    new SidecarInjector(new Chart(app, 'a'), 'Injector', { name: 'one', certificate: testCertificateFor('one', 'sidecar-injector') });
    new SidecarInjector(new Chart(app, 'b'), 'Injector', { name: 'two', createNamespace: false, certificate: testCertificateFor('two', 'sidecar-injector') });
    assert.equal(synthesize(app).manifests.filter((manifest) => manifest.kind === 'Namespace').length, 1);
  });
});

describe('handles and pod scheduling props', () => {
  test('every object made is reachable, and an Argo CD sync wave needs no child id', () => {
    const { app, injector } = buildChart();
    injector.webhookConfiguration.metadata.addAnnotation('argocd.argoproj.io/sync-wave', '1');
    for (const [handle, kind] of [
      [injector.namespace, 'Namespace'], [injector.configMap, 'ConfigMap'], [injector.secret, 'Secret'], [injector.deployment, 'Deployment'],
      [injector.service, 'Service'], [injector.podDisruptionBudget, 'PodDisruptionBudget'], [injector.networkPolicy, 'NetworkPolicy'],
      [injector.webhookConfiguration, 'MutatingWebhookConfiguration'],
    ] as const) {
      assert.equal(handle?.kind, kind);
    }
    const { manifests } = synthesize(app);
    assert.equal(findManifest(manifests, 'MutatingWebhookConfiguration').metadata.annotations['argocd.argoproj.io/sync-wave'], '1');
  });

  test('tolerations, nodeSelector, affinity, imagePullSecrets and pod annotations reach the webhook pods', () => {
    const affinity: k8s.Affinity = {
      nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'node-role', operator: 'In', values: ['infra'] }] }] } },
    };
    const { manifests } = synthesize(
      buildChart({
        tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'infra', effect: 'NoSchedule' }],
        nodeSelector: { 'kubernetes.io/os': 'linux' },
        affinity,
        imagePullSecrets: ['mirror-credentials'],
        podAnnotations: { 'example.com/team': 'platform' },
      }).app,
    );
    const deployment = findManifest(manifests, 'Deployment');
    const pod = deployment.spec.template;
    assert.deepEqual(pod.spec.tolerations, [{ key: 'dedicated', operator: 'Equal', value: 'infra', effect: 'NoSchedule' }]);
    assert.deepEqual(pod.spec.nodeSelector, { 'kubernetes.io/os': 'linux' });
    assert.deepEqual(pod.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values, ['infra']);
    assert.deepEqual(pod.spec.imagePullSecrets, [{ name: 'mirror-credentials' }]);
    assert.equal(pod.metadata.annotations['example.com/team'], 'platform');
    assert.ok(pod.metadata.annotations['checksum/config'], 'the checksum annotations stay');
    assertValidManifest(deployment);
  });

  test('bad scheduling props are reported with their paths', () => {
    const error = propsErrorOf(() => buildChart({ nodeSelector: { 'bad key!': 'x' }, imagePullSecrets: ['Bad_Secret'], podAnnotations: { 'checksum/config': 'x' } }));
    assert.deepEqual(error.issues.map((issue) => issue.path).sort(), ['imagePullSecrets[0]', 'nodeSelector["bad key!"]', 'podAnnotations["checksum/config"]'], error.message);
  });
});
