// The four certificate sources as the construct synthesizes them: what objects each makes, what the
// webhook configuration and pods get, where the private key is (and is not), and that every object
// validates: Kubernetes objects against the 1.32 schema, cert-manager's against its CRDs.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { App, Duration } from 'cdk8s';
import { parseAllDocuments } from 'yaml';
import {
  CONFIG_MAP_MAX_BYTES,
  SERVER_BUNDLE_FILES,
  SidecarInjectorChart,
  SidecarInjectorChartProps,
  SidecarInjectorPropsError,
  WebhookCertificates,
  WebhookServer,
  generateWebhookCertificateAuthority,
  podSecurityViolations,
  readServerBundle,
} from '../../charts/engine';
import { certManagerViolations } from '../support/cert-manager-crd-validator';
import { assertValidManifest } from '../support/openapi-validator';
import { Manifest, describeManifest, findManifest, makeTempDir, synthesize } from '../support/synth-helpers';
import { testCertificate } from '../support/test-certificate';

const DAY_MS = 24 * 60 * 60 * 1000;

function synth(props: SidecarInjectorChartProps): { manifests: Manifest[]; yamlText: string } {
  const app = new App({ outdir: makeTempDir('never-written') });
  new SidecarInjectorChart(app, 'sidecar-injector', props);
  return synthesize(app);
}

/** Synthesizes to files, as `cdk8s synth` does; returns each file's name and text. */
function synthFiles(props: SidecarInjectorChartProps): Record<string, string> {
  const outdir = makeTempDir('files');
  const app = new App({ outdir });
  new SidecarInjectorChart(app, 'sidecar-injector', props);
  app.synth();
  return Object.fromEntries(fs.readdirSync(outdir).sort().map((file) => [file, fs.readFileSync(path.join(outdir, file), 'utf8')]));
}

function assertAllValid(manifests: Manifest[]): void {
  for (const manifest of manifests) {
    if (manifest.apiVersion === 'cert-manager.io/v1') {
      assert.deepEqual(certManagerViolations(manifest), [], `${describeManifest(manifest)} against cert-manager v1.21.1's CRD schema`);
    } else {
      assertValidManifest(manifest);
    }
  }
}

const podTemplateOf = (manifests: Manifest[]) => findManifest(manifests, 'Deployment').spec.template;
const webhookOf = (manifests: Manifest[]) => findManifest(manifests, 'MutatingWebhookConfiguration');
const tlsVolumeOf = (manifests: Manifest[]) => podTemplateOf(manifests).spec.volumes.find((volume: Manifest) => volume.name === 'tls');

describe('WebhookCertificates.generated with a store', () => {
  const store = makeTempDir('generated-store');
  const first = synth({ certificates: WebhookCertificates.generated({ storeDirectory: store }) });

  test('two synths with the same store are byte-identical', () => {
    const second = synth({ certificates: WebhookCertificates.generated({ storeDirectory: store }) });
    assert.equal(second.yamlText, first.yamlText);
  });

  test('20 days before the serving certificate expires: a new certificate from the same CA; caBundle unchanged, checksum/tls changed', () => {
    const secret = findManifest(first.manifests, 'Secret');
    const serving = new X509Certificate(Buffer.from(secret.data['tls.crt'], 'base64'));
    const now = new Date(Date.parse(serving.validTo) - 20 * DAY_MS);
    const later = synth({ certificates: WebhookCertificates.generated({ storeDirectory: store, now }) });
    const laterSecret = findManifest(later.manifests, 'Secret');
    assert.equal(webhookOf(later.manifests).webhooks[0].clientConfig.caBundle, webhookOf(first.manifests).webhooks[0].clientConfig.caBundle, 'caBundle');
    assert.notEqual(laterSecret.data['tls.crt'], secret.data['tls.crt'], 'tls.crt re-issued');
    const renewed = new X509Certificate(Buffer.from(laterSecret.data['tls.crt'], 'base64'));
    assert.ok(renewed.verify(new X509Certificate(Buffer.from(webhookOf(first.manifests).webhooks[0].clientConfig.caBundle, 'base64')).publicKey));
    const checksum = (manifests: Manifest[]) => podTemplateOf(manifests).metadata.annotations['checksum/tls'];
    assert.notEqual(checksum(later.manifests), checksum(first.manifests), 'checksum/tls follows the new material');
    assertAllValid(later.manifests);
  });

  test('renewBefore must be longer than zero', () => {
    assert.throws(() => synth({ certificates: WebhookCertificates.generated({ storeDirectory: store, renewBefore: Duration.days(0) }) }), (error: unknown) => {
      assert.ok(error instanceof SidecarInjectorPropsError);
      assert.deepEqual(error.issues.map((issue) => issue.path), ['certificates.renewBefore']);
      return true;
    });
  });

  test('a store whose CA has expired fails synth, naming certificates.storeDirectory and what to do', () => {
    const dir = makeTempDir('expired-ca-store');
    const authority = generateWebhookCertificateAuthority({ serviceName: 'x', namespace: 'y', validityDays: 10, now: new Date(Date.now() - 20 * DAY_MS) });
    fs.writeFileSync(path.join(dir, 'ca.crt'), authority.certificate);
    fs.writeFileSync(path.join(dir, 'ca.key'), authority.privateKey);
    assert.throws(() => synth({ certificates: WebhookCertificates.generated({ storeDirectory: dir }) }), /certificates\.storeDirectory: the webhook CA in .* expired on .* remove /);
  });
});

describe('the certificate prop (PEM) and WebhookCertificates.fromPem', () => {
  test('give the same output', () => {
    const material = testCertificate();
    assert.equal(synth({ certificates: WebhookCertificates.fromPem(material) }).yamlText, synth({ certificate: material }).yamlText);
  });

  test('cannot be given together', () => {
    assert.throws(() => synth({ certificate: testCertificate(), certificates: WebhookCertificates.fromPem(testCertificate()) }), /certificates: give either certificate or certificates, not both/);
  });
});

describe('separateSecretFile', () => {
  const files = synthFiles({ certificates: WebhookCertificates.fromPem(testCertificate(), { separateSecretFile: true }) });

  test('writes the Secret to a file of its own, after the rest', () => {
    assert.deepEqual(Object.keys(files), ['0000-sidecar-injector.k8s.yaml', '0001-sidecar-injector-secret.k8s.yaml']);
    const kinds = (text: string) => parseYaml(text).map((manifest) => manifest.kind);
    assert.deepEqual(kinds(files['0001-sidecar-injector-secret.k8s.yaml']), ['Secret']);
    assert.ok(!kinds(files['0000-sidecar-injector.k8s.yaml']).includes('Secret'), 'no Secret in the main file');
  });

  test('leaves no private key anywhere else', () => {
    // The key is base64 in the Secret's data: look for the decoded PEM as well as plain text.
    const holders = Object.entries(files).filter(([, text]) => text.includes('PRIVATE KEY') || decodeAllBase64(text).includes('PRIVATE KEY'));
    assert.deepEqual(holders.map(([file]) => file), ['0001-sidecar-injector-secret.k8s.yaml']);
  });
});

function parseYaml(text: string): Manifest[] {
  return parseAllDocuments(text).map((document) => document.toJS() as Manifest).filter(Boolean);
}

/** Every base64 run of a YAML text decoded and concatenated, to find PEM inside Secret data. */
function decodeAllBase64(text: string): string {
  return (text.match(/[A-Za-z0-9+/=]{40,}/g) ?? []).map((run) => Buffer.from(run, 'base64').toString('latin1')).join('\n');
}

describe('WebhookCertificates.fromExistingSecret', () => {
  const ca = testCertificate().caCertificate;
  const files = synthFiles({ certificates: WebhookCertificates.fromExistingSecret({ secretName: 'webhook-tls-sealed', caCertificate: ca }) });
  const manifests = Object.values(files).flatMap(parseYaml);
  const parsed = synth({ certificates: WebhookCertificates.fromExistingSecret({ secretName: 'webhook-tls-sealed', caCertificate: ca }) }).manifests;

  test('makes no Secret, and no output file holds a private key', () => {
    assert.deepEqual(parsed.filter((manifest) => manifest.kind === 'Secret').map(describeManifest), []);
    for (const [file, text] of Object.entries(files)) {
      assert.ok(!text.includes('PRIVATE KEY') && !decodeAllBase64(text).includes('PRIVATE KEY'), `${file} holds no PRIVATE KEY`);
    }
    assert.ok(manifests.length > 0);
  });

  test('mounts the named Secret, puts the given CA in the caBundle, and rolls no pods for material it does not own', () => {
    assert.equal(tlsVolumeOf(parsed).secret.secretName, 'webhook-tls-sealed');
    assert.equal(Buffer.from(webhookOf(parsed).webhooks[0].clientConfig.caBundle, 'base64').toString('utf8'), ca);
    assert.equal(podTemplateOf(parsed).metadata.annotations['checksum/tls'], undefined, 'no checksum/tls');
    assertAllValid(parsed);
  });

  test('fails, naming the prop, for a CA that is not a CA certificate and a Secret name that is not a name', () => {
    assert.throws(
      () => synth({ certificates: WebhookCertificates.fromExistingSecret({ secretName: 'Not_A_Name', caCertificate: testCertificate().certificate }) }),
      (error: unknown) => {
        assert.ok(error instanceof SidecarInjectorPropsError);
        assert.deepEqual(error.issues.map((issue) => issue.path), ['certificates.secretName', 'certificates.caCertificate']);
        assert.match(error.issues[1].message, /is not a CA certificate/);
        return true;
      },
    );
  });
});

describe('WebhookCertificates.certManager', () => {
  const props = { namespace: 'platform', name: 'injector', certificates: WebhookCertificates.certManager() };
  const { manifests, yamlText } = synth(props);
  const certManagerObjects = manifests.filter((manifest) => manifest.apiVersion === 'cert-manager.io/v1');

  test('makes a self-signed Issuer, a CA Certificate, a CA Issuer and the serving Certificate, valid against cert-manager\'s CRDs', () => {
    assert.deepEqual(certManagerObjects.map(describeManifest), [
      'Issuer/platform/injector-selfsigned',
      'Certificate/platform/injector-ca',
      'Issuer/platform/injector-ca',
      'Certificate/platform/injector-tls',
    ]);
    assertAllValid(manifests);
    const [, caCertificate, caIssuer, serving] = certManagerObjects;
    assert.equal(caCertificate.spec.isCA, true);
    assert.deepEqual(caCertificate.spec.issuerRef, { name: 'injector-selfsigned', kind: 'Issuer', group: 'cert-manager.io' });
    assert.deepEqual(caIssuer.spec, { ca: { secretName: caCertificate.spec.secretName } });
    assert.deepEqual(serving.spec.issuerRef, { name: 'injector-ca', kind: 'Issuer', group: 'cert-manager.io' });
    assert.deepEqual(serving.spec.dnsNames, ['injector', 'injector.platform', 'injector.platform.svc', 'injector.platform.svc.cluster.local']);
    assert.equal(serving.spec.duration, '8760h');
    assert.equal(serving.spec.renewBefore, '720h');
  });

  test('annotates the webhook configuration with inject-ca-from the serving Certificate, and writes no caBundle', () => {
    const configuration = webhookOf(manifests);
    assert.deepEqual(configuration.metadata.annotations, { 'cert-manager.io/inject-ca-from': 'platform/injector-tls' });
    assert.equal(configuration.webhooks[0].clientConfig.caBundle, undefined);
  });

  test('mounts the Secret cert-manager writes, holds no Secret and no private key, and rolls no pods on renewal', () => {
    const serving = certManagerObjects.find((manifest) => manifest.kind === 'Certificate' && !manifest.spec.isCA)!;
    assert.equal(tlsVolumeOf(manifests).secret.secretName, serving.spec.secretName);
    assert.deepEqual(manifests.filter((manifest) => manifest.kind === 'Secret').map(describeManifest), []);
    assert.ok(!yamlText.includes('PRIVATE KEY') && !decodeAllBase64(yamlText).includes('PRIVATE KEY'), 'no PRIVATE KEY in the output');
    assert.equal(podTemplateOf(manifests).metadata.annotations['checksum/tls'], undefined, 'no checksum/tls: cert-manager renews in place, the server reloads');
  });

  test('with a ClusterIssuer named: only the serving Certificate, issued by it', () => {
    const named = synth({ certificates: WebhookCertificates.certManager({ issuer: { name: 'corporate-ca', kind: 'ClusterIssuer' }, duration: Duration.days(90), renewBefore: Duration.days(15) }) });
    const objects = named.manifests.filter((manifest) => manifest.apiVersion === 'cert-manager.io/v1');
    assert.deepEqual(objects.map(describeManifest), ['Certificate/sidecar-injector/sidecar-injector-tls']);
    assert.deepEqual(objects[0].spec.issuerRef, { name: 'corporate-ca', kind: 'ClusterIssuer', group: 'cert-manager.io' });
    assert.equal(objects[0].spec.duration, '2160h');
    assert.equal(objects[0].spec.renewBefore, '360h');
    assertAllValid(named.manifests);
  });

  test('fails, naming certificates.renewBefore, when renewBefore is not shorter than the duration', () => {
    assert.throws(() => synth({ certificates: WebhookCertificates.certManager({ duration: Duration.days(30), renewBefore: Duration.days(30) }) }), /certificates\.renewBefore: must be longer than zero and shorter than duration \(720h\), got 720h/);
  });
});

describe('WebhookServer.fromBundle (image-free)', () => {
  const { manifests } = synth({ certificate: testCertificate(), server: WebhookServer.fromBundle() });
  const configMap = manifests.find((manifest) => manifest.kind === 'ConfigMap' && manifest.metadata.name === 'sidecar-injector-server')!;
  const container = podTemplateOf(manifests).spec.containers[0];
  const bundle = readServerBundle();

  test('the bundle\'s ConfigMap fits the apiserver\'s 1 MiB, and the client-side kubectl apply annotation\'s 256 KiB', () => {
    const bytes = Object.values(configMap.binaryData as Record<string, string>).reduce((sum, value) => sum + Buffer.from(value, 'base64').length, 0);
    assert.ok(bytes < CONFIG_MAP_MAX_BYTES, `ConfigMap ${configMap.metadata.name} holds ${bytes} bytes; a ConfigMap holds at most ${CONFIG_MAP_MAX_BYTES}`);
    // kubectl apply (client-side) stores the whole object in an annotation; annotations are limited to 256 KiB.
    const lastApplied = JSON.stringify(configMap).length;
    assert.ok(lastApplied < 256 * 1024, `the last-applied-configuration annotation would be ${lastApplied} bytes; annotations hold at most ${256 * 1024}`);
    assert.ok(bundle.source.length > 100_000, `server.js is ${bundle.source.length} bytes (a real bundle)`);
  });

  test('runs the pinned Node image with a read-only root filesystem and the restricted profile\'s container settings', () => {
    assert.match(container.image, /^node:\d+\.\d+\.\d+-alpine\d+\.\d+$/, 'an exact version tag');
    assert.equal(container.command[0], 'node');
    assert.equal(container.securityContext.readOnlyRootFilesystem, true);
    assert.equal(container.securityContext.allowPrivilegeEscalation, false);
    assert.deepEqual(container.securityContext.capabilities, { drop: ['ALL'] });
    const pod = { apiVersion: 'v1', kind: 'Pod', metadata: podTemplateOf(manifests).metadata, spec: podTemplateOf(manifests).spec };
    assert.deepEqual(podSecurityViolations(pod, 'restricted'), [], 'the webhook pod passes the restricted Pod Security level');
    assert.deepEqual(Object.keys(configMap.binaryData).sort(), [SERVER_BUNDLE_FILES.notices, SERVER_BUNDLE_FILES.bundle].sort());
    assertAllValid(manifests);
  });

  test('carries a checksum of the bundle on the pod template, so new code rolls the pods', () => {
    assert.equal(podTemplateOf(manifests).metadata.annotations['checksum/server'], bundle.sha256);
  });

  test('fails, naming server.nodeImage, for an empty Node image, and server for an empty image', () => {
    assert.throws(() => synth({ server: WebhookServer.fromBundle({ nodeImage: ' ' }) }), /server\.nodeImage: must be a non-empty image reference, got " "/);
    assert.throws(() => synth({ server: WebhookServer.fromImage('') }), /server: WebhookServer\.fromImage\(\) needs a non-empty image reference, got ""/);
  });

  test('cannot be given together with image', () => {
    assert.throws(() => synth({ image: 'example.com/webhook:1', server: WebhookServer.fromBundle() }), /server: give either image or server, not both/);
  });

  test('names the missing file and how to build it when there is no bundle', () => {
    assert.throws(() => synth({ server: WebhookServer.fromBundle({ bundleDirectory: makeTempDir('no-bundle') }) }), /needs the webhook bundle, but .*server\.js is missing: run "npm run bundle"/);
  });
});
