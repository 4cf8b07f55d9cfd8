import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { DEFAULT_WEBHOOK_IMAGE, Injection, PACKAGE_VERSION, TargetKind, WebhookServer } from '../../charts/engine';
import { RUNTIME_ENV } from '../../webhook/config';
import { assertValidManifest } from '../support/openapi-validator';
import {
  Manifest,
  describeManifest,
  findManifest,
  makeTempDir,
  namespaceLabels,
  selectorMatches,
  synthChart,
  synthDefaultAppToTemp,
} from '../support/synth-helpers';
import { testCertificate } from '../support/test-certificate';

const REPO_ROOT = path.resolve(__dirname, '../..');
const SERVICE_HOST = 'sidecar-injector.sidecar-injector.svc';

const envoy: Injection = { name: 'envoy', trigger: { type: 'always' }, containers: [{ name: 'envoy', image: 'envoyproxy/envoy:v1.30.1' }] };
const otherEnvoy: Injection = { name: 'envoy', trigger: { type: 'always' }, containers: [{ name: 'envoy', image: 'envoyproxy/envoy:v1.31.0' }] };

// The default app is synthesized once; tests that need other props synthesize a chart in memory.
const defaultApp = synthDefaultAppToTemp();
const manifests = defaultApp.manifests;
const deployment = findManifest(manifests, 'Deployment');
const podTemplate = deployment.spec.template;
const webhookContainer = podTemplate.spec.containers[0];
const webhookConfiguration = findManifest(manifests, 'MutatingWebhookConfiguration');
const webhook = webhookConfiguration.webhooks[0];

function decode(base64: string): string {
  return Buffer.from(base64, 'base64').toString('utf8');
}

function webhookOf(synthesized: { manifests: Manifest[] }): Manifest {
  return findManifest(synthesized.manifests, 'MutatingWebhookConfiguration').webhooks[0];
}

function envValue(container: Manifest, name: string): string | undefined {
  return (container.env as { name: string; value?: string }[]).find((variable) => variable.name === name)?.value;
}

describe('the default app', () => {
  test('synthesizes its Namespace first and the MutatingWebhookConfiguration last, so kubectl apply registers the webhook once it can answer', () => {
    assert.deepEqual(defaultApp.files.map((file) => path.basename(file)), ['0000-sidecar-injector.k8s.yaml', '0001-sidecar-injector-secret.k8s.yaml'], 'the Secret in a file of its own, applied after the rest');
    assert.deepEqual(manifests.map((manifest) => manifest.kind), [
      'Namespace',
      'ConfigMap',
      'ConfigMap',
      'Deployment',
      'Service',
      'PodDisruptionBudget',
      'NetworkPolicy',
      'ConfigMap', // the Prometheus rule file
      'ConfigMap', // the Grafana dashboard
      'MutatingWebhookConfiguration',
      'Secret',
    ]);
  });

  test('synthesizes exactly a Deployment, Service, Secret, ConfigMap, MutatingWebhookConfiguration, PodDisruptionBudget and NetworkPolicy when the Namespace is managed elsewhere', () => {
    assert.deepEqual(
      synthChart({ createNamespace: false }).manifests.map((manifest) => manifest.kind).sort(),
      ['ConfigMap', 'Deployment', 'MutatingWebhookConfiguration', 'NetworkPolicy', 'PodDisruptionBudget', 'Secret', 'Service'],
    );
  });

  test('makes the injector namespace enforce the restricted Pod Security profile', () => {
    const namespace = findManifest(manifests, 'Namespace');
    assert.equal(namespace.metadata.name, 'sidecar-injector');
    assert.equal(namespace.metadata.labels['pod-security.kubernetes.io/enforce'], 'restricted');
    for (const manifest of manifests) {
      if (manifest.kind !== 'Namespace' && manifest.kind !== 'MutatingWebhookConfiguration') {
        assert.equal(manifest.metadata.namespace, namespace.metadata.name, `${describeManifest(manifest)} is in the Namespace it makes`);
      }
    }
  });

  test('every object it synthesizes is valid against the Kubernetes 1.32 OpenAPI schema', () => {
    for (const manifest of manifests) assertValidManifest(manifest);
  });

  test('every object is valid with every option set too', () => {
    const kinds: TargetKind[] = ['Pod', 'Deployment', 'StatefulSet', 'DaemonSet', 'ReplicaSet', 'Job', 'CronJob'];
    const { manifests: all } = synthChart({
      labels: { team: 'platform' },
      priorityClassName: 'system-cluster-critical',
      replicas: 3,
      port: 9443,
      imagePullPolicy: 'Always',
      logLevel: 'debug',
      resources: { requests: { cpu: '100m', memory: '128Mi' }, limits: { cpu: '1', memory: '256Mi' } },
      failurePolicy: 'Fail',
      timeoutSeconds: 10,
      namespaceSelector: { matchExpressions: [{ key: 'team', operator: 'In', values: ['a', 'b'] }] },
      objectSelector: { matchLabels: { inject: 'yes' } },
      injections: [{ ...envoy, targetKinds: kinds }],
    });
    for (const manifest of all) assertValidManifest(manifest);
  });

  test('the caBundle of the webhook verifies the serving certificate in the Secret, which names the Service', () => {
    const secret = findManifest(manifests, 'Secret');
    const ca = new X509Certificate(Buffer.from(webhook.clientConfig.caBundle, 'base64'));
    const serving = new X509Certificate(decode(secret.data['tls.crt']));
    assert.ok(ca.ca, `the caBundle is a CA certificate (subject ${ca.subject})`);
    assert.ok(serving.verify(ca.publicKey), `tls.crt (issuer ${serving.issuer}) is signed by the caBundle's CA (subject ${ca.subject})`);
    assert.ok(serving.checkIssued(ca), 'tls.crt names the caBundle CA as its issuer');
    assert.equal(serving.checkHost(SERVICE_HOST), SERVICE_HOST, `tls.crt subjectAltName: ${serving.subjectAltName}`);
    assert.equal(decode(secret.data['ca.crt']), decode(webhook.clientConfig.caBundle), 'the Secret\'s ca.crt is the caBundle');
    assert.deepEqual(webhook.clientConfig.service, { name: 'sidecar-injector', namespace: 'sidecar-injector', path: '/mutate', port: 443 });
  });

  test('the TLS Secret is of type kubernetes.io/tls with tls.crt, tls.key and ca.crt under data and no stringData', () => {
    const secret = findManifest(manifests, 'Secret');
    assert.equal(secret.type, 'kubernetes.io/tls');
    assert.equal(secret.stringData, undefined, 'no stringData (it would show up as a diff against the live object)');
    assert.deepEqual(Object.keys(secret.data).sort(), ['ca.crt', 'tls.crt', 'tls.key']);
    const material = testCertificate();
    assert.equal(decode(secret.data['tls.crt']), material.certificate);
    assert.equal(decode(secret.data['tls.key']), material.privateKey);
    assert.equal(decode(secret.data['ca.crt']), material.caCertificate);
  });

  test('two synths with the same certificate material are byte-identical', () => {
    const again = synthDefaultAppToTemp();
    assert.ok(again.yamlText.length > 0);
    assert.equal(again.yamlText, defaultApp.yamlText);
  });

  test('a synth removes the YAML of an earlier synth from the output directory and leaves other files alone', () => {
    const outdir = makeTempDir('stale');
    fs.writeFileSync(path.join(outdir, 'renamed-chart.k8s.yaml'), 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: stale\n');
    fs.writeFileSync(path.join(outdir, 'README.md'), 'not YAML of a synth\n');
    const result = synthDefaultAppToTemp(testCertificate(), outdir);
    assert.deepEqual(fs.readdirSync(outdir).sort(), ['0000-sidecar-injector.k8s.yaml', '0001-sidecar-injector-secret.k8s.yaml', 'README.md']);
    assert.equal(fs.readFileSync(path.join(outdir, 'README.md'), 'utf8'), 'not YAML of a synth\n');
    assert.ok(!result.manifests.some((manifest) => manifest.metadata?.name === 'stale'), 'the stale ConfigMap is gone');
  });
});

describe('the Deployment', () => {
  test('runs 2 replicas as non-root with a read-only root filesystem, no capabilities and the RuntimeDefault seccomp profile', () => {
    assert.equal(deployment.spec.replicas, 2);
    assert.equal(podTemplate.spec.securityContext.runAsNonRoot, true);
    assert.deepEqual(podTemplate.spec.securityContext.seccompProfile, { type: 'RuntimeDefault' });
    assert.deepEqual(webhookContainer.securityContext, {
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      runAsNonRoot: true,
      capabilities: { drop: ['ALL'] },
      seccompProfile: { type: 'RuntimeDefault' },
    });
  });

  test('does not mount a service account token into the webhook pods', () => {
    assert.equal(podTemplate.spec.automountServiceAccountToken, false);
  });

  test('probes readiness and liveness over plain HTTP on the ops port, apart from the serving port', () => {
    assert.deepEqual(
      webhookContainer.ports.map((port: Manifest) => port.name),
      ['https', 'ops'],
    );
    for (const probe of ['readinessProbe', 'livenessProbe']) {
      const httpGet = webhookContainer[probe]?.httpGet;
      assert.ok(httpGet, `${probe}.httpGet is set, got ${JSON.stringify(webhookContainer[probe])}`);
      assert.equal(httpGet.scheme, 'HTTP', `${probe}.httpGet.scheme`);
      assert.equal(httpGet.port, 'ops', `${probe}.httpGet.port names the ops container port`);
    }
  });

  test('mounts the ConfigMap and the Secret as whole directories (no subPath) where the server reads them', () => {
    const volumes = podTemplate.spec.volumes as Manifest[];
    const mounts = webhookContainer.volumeMounts as Manifest[];
    for (const mount of mounts) assert.equal(mount.subPath, undefined, `volumeMount ${mount.name} at ${mount.mountPath} has no subPath`);
    const mountOf = (volumeName: string | undefined) => mounts.find((mount) => mount.name === volumeName)?.mountPath;
    const secretVolume = volumes.find((volume) => volume.secret);
    const configVolume = volumes.find((volume) => volume.name === 'config');
    assert.equal(secretVolume?.secret.secretName, findManifest(manifests, 'Secret').metadata.name);
    assert.equal(configVolume?.configMap.name, 'sidecar-injector-config');
    assert.ok(manifests.some((manifest) => manifest.kind === 'ConfigMap' && manifest.metadata.name === configVolume?.configMap.name), 'the config volume names a synthesized ConfigMap');
    assert.equal(mountOf(secretVolume?.name), envValue(webhookContainer, RUNTIME_ENV.tlsDir));
    assert.equal(mountOf(configVolume?.name), envValue(webhookContainer, RUNTIME_ENV.configDir));
  });

  test('carries checksums of config and certificate on the pod template that change when the injections change', () => {
    const annotationsOf = (injection: Injection) => findManifest(synthChart({ injections: [injection] }).manifests, 'Deployment').spec.template.metadata.annotations;
    const first = annotationsOf(envoy);
    const same = annotationsOf(envoy);
    const changed = annotationsOf(otherEnvoy);
    assert.match(first['checksum/config'], /^[0-9a-f]{64}$/);
    assert.match(first['checksum/tls'], /^[0-9a-f]{64}$/);
    assert.deepEqual(same, first, 'the same injections give the same checksums');
    assert.notEqual(changed['checksum/config'], first['checksum/config'], 'a changed injection changes checksum/config (the pods roll)');
    assert.equal(changed['checksum/tls'], first['checksum/tls'], 'the same certificate keeps checksum/tls');
  });

  test('spreads its pods across nodes', () => {
    const constraints = podTemplate.spec.topologySpreadConstraints as Manifest[];
    const byHostname = constraints?.find((constraint) => constraint.topologyKey === 'kubernetes.io/hostname');
    assert.ok(byHostname, `a topologySpreadConstraint on kubernetes.io/hostname, got ${JSON.stringify(constraints)}`);
    assert.equal(byHostname.maxSkew, 1);
    assert.ok(selectorMatches(byHostname.labelSelector, podTemplate.metadata.labels), 'its labelSelector selects the webhook pods');
  });

  test('selects its own pods, and the Service, PodDisruptionBudget and NetworkPolicy select the same pods', () => {
    const labels = podTemplate.metadata.labels;
    assert.ok(selectorMatches(deployment.spec.selector, labels));
    assert.ok(selectorMatches({ matchLabels: findManifest(manifests, 'Service').spec.selector }, labels));
    assert.ok(selectorMatches(findManifest(manifests, 'PodDisruptionBudget').spec.selector, labels));
    assert.ok(selectorMatches(findManifest(manifests, 'NetworkPolicy').spec.podSelector, labels));
  });
});

describe('the Service', () => {
  for (const port of [undefined, 9443]) {
    test(`exposes port 443 and forwards it to the webhook container's port (${port ?? 'default 8443'})`, () => {
      const synthesized = port === undefined ? defaultApp : synthChart({ port });
      const service = findManifest(synthesized.manifests, 'Service');
      const container = findManifest(synthesized.manifests, 'Deployment').spec.template.spec.containers[0];
      assert.equal(service.spec.ports.length, 1, `one Service port, got ${JSON.stringify(service.spec.ports)}`);
      const servicePort = service.spec.ports[0];
      assert.equal(servicePort.port, 443);
      const target = (container.ports as Manifest[]).find((containerPort) =>
        typeof servicePort.targetPort === 'number' ? containerPort.containerPort === servicePort.targetPort : containerPort.name === servicePort.targetPort,
      );
      assert.ok(target, `targetPort ${servicePort.targetPort} resolves to a container port, got ${JSON.stringify(container.ports)}`);
      assert.equal(target.containerPort, port ?? 8443);
      assert.equal(envValue(container, RUNTIME_ENV.listenPort), String(port ?? 8443), 'the server listens on the container port');
    });
  }
});

describe('the MutatingWebhookConfiguration', () => {
  test('has rules derived from the target kinds: pods on CREATE only, deployments in apps on CREATE and UPDATE', () => {
    assert.deepEqual(webhook.rules, [
      { apiGroups: [''], apiVersions: ['v1'], resources: ['pods'], operations: ['CREATE'], scope: 'Namespaced' },
      { apiGroups: ['apps'], apiVersions: ['v1'], resources: ['deployments'], operations: ['CREATE', 'UPDATE'], scope: 'Namespaced' },
    ]);
  });

  test('has a rule for the API group and resource of every target kind', () => {
    const targetKinds: TargetKind[] = ['Pod', 'Deployment', 'StatefulSet', 'DaemonSet', 'ReplicaSet', 'Job', 'CronJob'];
    const rules = webhookOf(synthChart({ injections: [{ ...envoy, targetKinds }] })).rules as Manifest[];
    const covered = rules.flatMap((rule) => (rule.resources as string[]).map((resource) => `${rule.apiGroups.join(',')}/${resource} ${rule.operations.join(',')}`));
    assert.deepEqual(covered.sort(), [
      '/pods CREATE',
      'apps/daemonsets CREATE,UPDATE',
      'apps/deployments CREATE,UPDATE',
      'apps/replicasets CREATE,UPDATE',
      'apps/statefulsets CREATE,UPDATE',
      'batch/cronjobs CREATE,UPDATE',
      'batch/jobs CREATE,UPDATE',
    ]);
  });

  test('by default sends only namespaces labelled injection=enabled, never kube-system, kube-public, kube-node-lease or its own', () => {
    assert.deepEqual(webhook.namespaceSelector, {
      matchLabels: { injection: 'enabled' },
      matchExpressions: [
        { key: 'kubernetes.io/metadata.name', operator: 'NotIn', values: ['kube-system', 'kube-public', 'kube-node-lease', 'sidecar-injector'] },
      ],
    });
    const enabled = { injection: 'enabled' };
    assert.ok(selectorMatches(webhook.namespaceSelector, namespaceLabels('shop', enabled)), 'namespace shop labelled injection=enabled is sent');
    assert.ok(!selectorMatches(webhook.namespaceSelector, namespaceLabels('shop')), 'namespace shop without the label is not sent');
    for (const excluded of ['kube-system', 'kube-public', 'kube-node-lease', 'sidecar-injector']) {
      assert.ok(!selectorMatches(webhook.namespaceSelector, namespaceLabels(excluded, enabled)), `namespace ${excluded} labelled injection=enabled is not sent`);
    }
  });

  test('keeps the system namespaces and its own excluded under a custom namespaceSelector', () => {
    const selector = webhookOf(
      synthChart({
        namespace: 'injector',
        namespaceSelector: { matchLabels: { mesh: 'on' }, matchExpressions: [{ key: 'tier', operator: 'NotIn', values: ['legacy'] }] },
      }),
    ).namespaceSelector;
    assert.deepEqual(selector, {
      matchLabels: { mesh: 'on' },
      matchExpressions: [
        { key: 'tier', operator: 'NotIn', values: ['legacy'] },
        { key: 'kubernetes.io/metadata.name', operator: 'NotIn', values: ['kube-system', 'kube-public', 'kube-node-lease', 'injector'] },
      ],
    });
    assert.ok(selectorMatches(selector, namespaceLabels('shop', { mesh: 'on' })));
    assert.ok(!selectorMatches(selector, namespaceLabels('shop', { mesh: 'on', tier: 'legacy' })));
    for (const excluded of ['kube-system', 'kube-public', 'kube-node-lease', 'injector']) {
      assert.ok(!selectorMatches(selector, namespaceLabels(excluded, { mesh: 'on' })), `namespace ${excluded} labelled mesh=on is not sent`);
    }
  });

  test('its objectSelector excludes the injector\'s own pods and nothing else', () => {
    const ownPodLabels = podTemplate.metadata.labels;
    assert.ok(
      !selectorMatches(webhook.objectSelector, ownPodLabels),
      `the webhook pod labels ${JSON.stringify(ownPodLabels)} must not match objectSelector ${JSON.stringify(webhook.objectSelector)}`,
    );
    assert.ok(selectorMatches(webhook.objectSelector, { app: 'shop' }), 'an ordinary pod is sent');
    assert.ok(selectorMatches(webhook.objectSelector, {}), 'a pod without labels is sent');
  });

  test('ANDs a custom objectSelector with the exclusion of its own pods', () => {
    const synthesized = synthChart({ objectSelector: { matchLabels: { inject: 'yes' } }, labels: { inject: 'yes' } });
    const selector = webhookOf(synthesized).objectSelector;
    const ownPodLabels = findManifest(synthesized.manifests, 'Deployment').spec.template.metadata.labels;
    assert.ok(selectorMatches(selector, { inject: 'yes', app: 'shop' }));
    assert.ok(!selectorMatches(selector, { app: 'shop' }));
    assert.ok(!selectorMatches(selector, ownPodLabels), `own pods ${JSON.stringify(ownPodLabels)} are excluded by ${JSON.stringify(selector)}`);
  });

  test('declares no side effects, both AdmissionReview versions, a 5 second timeout and reinvocation', () => {
    assert.equal(webhook.sideEffects, 'None');
    assert.deepEqual(webhook.admissionReviewVersions, ['v1', 'v1beta1']);
    assert.equal(webhook.timeoutSeconds, 5);
    assert.equal(webhook.reinvocationPolicy, 'IfNeeded');
  });

  test('fails open (failurePolicy Ignore) by default and closed when asked', () => {
    assert.equal(webhook.failurePolicy, 'Ignore');
    assert.equal(webhookOf(synthChart({ failurePolicy: 'Fail' })).failurePolicy, 'Fail');
  });
});

test('renaming the chart or the construct does not rename any object', () => {
  const names = (synthesized: { manifests: Manifest[] }) => synthesized.manifests.map(describeManifest).sort();
  const expected = names(defaultApp);
  const server = WebhookServer.fromBundle();
  assert.deepEqual(names(synthChart({ injections: [envoy], server, monitoring: {} }, { chartId: 'renamed-chart' })), expected);
  assert.deepEqual(names(synthChart({ injections: [envoy], server, monitoring: {} }, { chartId: 'other', constructId: 'SomethingElse' })), expected);
});

test('the PodDisruptionBudget is policy/v1 and lets at most one webhook pod go at a time', () => {
  const pdb = findManifest(manifests, 'PodDisruptionBudget');
  assert.equal(pdb.apiVersion, 'policy/v1');
  assert.equal(pdb.spec.maxUnavailable, 1);
});

test('the NetworkPolicy lets traffic in only on the webhook port and none out', () => {
  const policy = findManifest(manifests, 'NetworkPolicy');
  assert.equal(policy.apiVersion, 'networking.k8s.io/v1');
  assert.deepEqual([...policy.spec.policyTypes].sort(), ['Egress', 'Ingress']);
  assert.deepEqual(policy.spec.ingress, [{ ports: [{ protocol: 'TCP', port: webhookContainer.ports[0].containerPort }] }]);
  assert.equal(policy.spec.egress, undefined, 'no egress rule: with Egress among the policy types, all egress is denied');
});

test('no synthesized object carries an empty list or map, which the apiserver does not store (a re-apply would change the object every time)', () => {
  const empty: string[] = [];
  const visit = (value: unknown, at: string) => {
    if (Array.isArray(value)) {
      if (value.length === 0) empty.push(at);
      value.forEach((item, index) => visit(item, `${at}/${index}`));
    } else if (value !== null && typeof value === 'object') {
      if (Object.keys(value).length === 0) empty.push(at);
      for (const [key, item] of Object.entries(value)) visit(item, `${at}/${key}`);
    }
  };
  for (const manifest of manifests) visit(manifest, `${manifest.kind}/${manifest.metadata.name}`);
  assert.deepEqual(empty, []);
});

test('the default image is tagged with the package version from package.json', () => {
  const packageJson = JSON.parse(fs.readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string };
  assert.equal(PACKAGE_VERSION, packageJson.version, 'charts/version.ts PACKAGE_VERSION equals package.json version');
  assert.ok(DEFAULT_WEBHOOK_IMAGE.endsWith(`:${packageJson.version}`), `${DEFAULT_WEBHOOK_IMAGE} is tagged ${packageJson.version}`);
  // The default app runs image-free; the construct's own default is the image.
  assert.equal(findManifest(synthChart().manifests, 'Deployment').spec.template.spec.containers[0].image, DEFAULT_WEBHOOK_IMAGE);
});

test('importing the construct library does not load express', () => {
  const script = `
    require('./charts/index.ts');
    const loaded = Object.keys(require.cache);
    const isExpress = (file) => file.includes('/node_modules/express/');
    const express = loaded.filter(isExpress);
    // Control: the same check does see express once something loads it.
    require('express');
    const detectable = Object.keys(require.cache).some(isExpress);
    process.stdout.write(JSON.stringify({ cdk8s: loaded.some((f) => f.includes('/node_modules/cdk8s/')), express, detectable }));
  `;
  const result = spawnSync(process.execPath, ['--import', 'tsx', '-e', script], { cwd: REPO_ROOT, encoding: 'utf8' });
  assert.equal(result.status, 0, `the child process failed: ${result.stderr}`);
  const report = JSON.parse(result.stdout) as { cdk8s: boolean; express: string[]; detectable: boolean };
  assert.ok(report.cdk8s, 'the check sees the modules charts loads (cdk8s is among them)');
  assert.ok(report.detectable, 'the check would see express if it were loaded');
  assert.deepEqual(report.express, [], 'no module of express is loaded');
});
