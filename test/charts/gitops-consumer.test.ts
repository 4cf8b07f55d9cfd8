// A GitOps pipeline as a user of the published package runs it: a cdk8s project that installs
// `npm pack`'s tarball, compiled with tsc and synthesized by node on fresh clones that share only the
// certificate store (what CI keeps in its secret storage). The output must be stable, renew without
// changing the caBundle, and hold no private key in the modes where the cluster holds it.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { parseAllDocuments } from 'yaml';
import { certManagerViolations } from '../support/cert-manager-crd-validator';
import { assertValidManifest } from '../support/openapi-validator';
import { ConsumerProject, cloneConsumerProject, compileConsumer, createConsumerProject, packTarball } from '../support/packed-package';
import { testCertificate } from '../support/test-certificate';

const DAY_MS = 24 * 60 * 60 * 1000;

/** The consumer's app: the mode, store, clock and output directory come from the environment. */
const CONSUMER_APP = `
import * as fs from 'node:fs';
import { App } from 'cdk8s';
import { SidecarInjectorChart, Trigger, WebhookCertificates, WebhookServer } from 'cdk8s-sidecar-injector';

const mode = process.env.CERTIFICATE_MODE ?? 'generated';
const now = process.env.SYNTH_NOW ? new Date(process.env.SYNTH_NOW) : undefined;
const certificates =
  mode === 'cert-manager'
    ? WebhookCertificates.certManager()
    : mode === 'existing-secret'
      ? WebhookCertificates.fromExistingSecret({ secretName: 'injector-tls-sealed', caCertificate: fs.readFileSync(process.env.CA_FILE!, 'utf8') })
      : WebhookCertificates.generated({ storeDirectory: process.env.CERT_STORE!, now, separateSecretFile: true });

const app = new App({ outdir: process.env.OUTDIR! });
const chart = new SidecarInjectorChart(app, 'injector', {
  namespace: 'platform',
  certificates,
  server: WebhookServer.fromBundle(),
  injections: [{ name: 'envoy', trigger: Trigger.always(), containers: [{ name: 'envoy', image: 'envoyproxy/envoy:v1.30.1' }] }],
});
chart.injector.webhookConfiguration.metadata.addAnnotation('argocd.argoproj.io/sync-wave', '1');
app.synth();
`;

type Manifest = Record<string, any>;

function outputOf(dir: string): Record<string, string> {
  return Object.fromEntries(fs.readdirSync(dir).sort().map((file) => [file, fs.readFileSync(path.join(dir, file), 'utf8')]));
}

function manifestsOf(files: Record<string, string>): Manifest[] {
  return Object.values(files).flatMap((text) => parseAllDocuments(text).map((document) => document.toJS() as Manifest).filter(Boolean));
}

function only(manifests: Manifest[], kind: string): Manifest {
  const found = manifests.filter((manifest) => manifest.kind === kind);
  assert.equal(found.length, 1, `exactly one ${kind}, found ${found.map((m) => m.metadata.name).join(', ') || 'none'}`);
  return found[0];
}

function decodeAllBase64(text: string): string {
  return (text.match(/[A-Za-z0-9+/=]{40,}/g) ?? []).map((run) => Buffer.from(run, 'base64').toString('latin1')).join('\n');
}

function filesWithPrivateKey(files: Record<string, string>): string[] {
  return Object.entries(files).filter(([, text]) => text.includes('PRIVATE KEY') || decodeAllBase64(text).includes('PRIVATE KEY')).map(([file]) => file);
}

function assertEveryObjectValid(manifests: Manifest[]): void {
  for (const manifest of manifests) {
    if (manifest.apiVersion === 'cert-manager.io/v1') {
      assert.deepEqual(certManagerViolations(manifest), [], `${manifest.kind} ${manifest.metadata.name} against cert-manager's CRD schema`);
    } else {
      assertValidManifest(manifest);
    }
  }
}

describe('a GitOps pipeline synthesizing with the packed package', { timeout: 600_000 }, () => {
  let work: string;
  let cloneA: ConsumerProject;
  let cloneB: ConsumerProject;
  let store: string;

  const synth = (project: ConsumerProject, outName: string, env: Record<string, string> = {}): Record<string, string> => {
    const outdir = path.join(work, outName);
    project.run(process.execPath, ['out/app.js'], { OUTDIR: outdir, CERT_STORE: store, ...env });
    return outputOf(outdir);
  };

  before(() => {
    work = fs.mkdtempSync(path.join(os.tmpdir(), 'gitops-consumer-'));
    store = path.join(work, 'ci-secret-store');
    const tarball = packTarball();
    cloneA = createConsumerProject(path.join(work, 'clone-a'), tarball, { 'app.ts': CONSUMER_APP });
    compileConsumer(cloneA);
    cloneB = cloneConsumerProject(cloneA, path.join(work, 'clone-b'));
    compileConsumer(cloneB);
  });

  after(() => {
    if (work) fs.rmSync(work, { recursive: true, force: true });
  });

  test('two synths on two fresh clones with the same certificate store are byte-identical', () => {
    const first = synth(cloneA, 'out-a');
    const second = synth(cloneB, 'out-b');
    assert.deepEqual(Object.keys(first), ['0000-injector.k8s.yaml', '0001-injector-secret.k8s.yaml']);
    for (const file of Object.keys(first)) assert.ok(first[file] === second[file], `${file} differs between the clones`);
    assert.deepEqual(Object.keys(second), Object.keys(first));
    assert.deepEqual(filesWithPrivateKey(first), ['0001-injector-secret.k8s.yaml'], 'the private key only in the Secret\'s own file');
    const manifests = manifestsOf(first);
    assertEveryObjectValid(manifests);
    const configuration = only(manifests, 'MutatingWebhookConfiguration');
    assert.equal(configuration.metadata.annotations['argocd.argoproj.io/sync-wave'], '1', 'the sync wave added through chart.injector.webhookConfiguration');
    const deployment = only(manifests, 'Deployment');
    assert.ok(!('app.kubernetes.io/instance' in deployment.spec.selector.matchLabels), `selector ${JSON.stringify(deployment.spec.selector.matchLabels)} does not use app.kubernetes.io/instance`);
  });

  test('a synth 20 days before the serving certificate expires re-issues it from the same CA and leaves the caBundle unchanged', () => {
    const before = manifestsOf(synth(cloneA, 'out-before'));
    const servingPem = fs.readFileSync(path.join(store, 'tls.crt'), 'utf8');
    const now = new Date(Date.parse(new X509Certificate(servingPem).validTo) - 20 * DAY_MS);
    const after = manifestsOf(synth(cloneB, 'out-renewed', { SYNTH_NOW: now.toISOString() }));
    const caBundle = (manifests: Manifest[]) => only(manifests, 'MutatingWebhookConfiguration').webhooks[0].clientConfig.caBundle;
    assert.equal(caBundle(after), caBundle(before), 'caBundle unchanged');
    const tlsCrt = (manifests: Manifest[]) => Buffer.from(only(manifests, 'Secret').data['tls.crt'], 'base64').toString('utf8');
    assert.notEqual(tlsCrt(after), tlsCrt(before), 'a new serving certificate in the Secret');
    const renewed = new X509Certificate(tlsCrt(after));
    const ca = new X509Certificate(Buffer.from(caBundle(before), 'base64'));
    assert.ok(renewed.verify(ca.publicKey), `the new certificate (issuer ${renewed.issuer}) is signed by the caBundle's CA (${ca.subject})`);
    assert.ok(Date.parse(renewed.validTo) > now.getTime() + 300 * DAY_MS, `valid until ${renewed.validTo}`);
    assert.equal(fs.readFileSync(path.join(store, 'tls.crt'), 'utf8'), tlsCrt(after), 'the store holds the new certificate for the next clone');
    assertEveryObjectValid(after);
  });

  test('existing-Secret output holds no private key in any file', () => {
    const caFile = path.join(work, 'ca.crt');
    fs.writeFileSync(caFile, testCertificate().caCertificate);
    const files = synth(cloneA, 'out-existing', { CERTIFICATE_MODE: 'existing-secret', CA_FILE: caFile });
    assert.deepEqual(filesWithPrivateKey(files), []);
    const manifests = manifestsOf(files);
    assert.deepEqual(manifests.filter((manifest) => manifest.kind === 'Secret'), []);
    assertEveryObjectValid(manifests);
  });

  test('cert-manager output holds no private key in any file, and no caBundle', () => {
    const files = synth(cloneA, 'out-cert-manager', { CERTIFICATE_MODE: 'cert-manager' });
    assert.deepEqual(filesWithPrivateKey(files), []);
    const manifests = manifestsOf(files);
    assert.deepEqual(manifests.filter((manifest) => manifest.kind === 'Secret'), []);
    const configuration = only(manifests, 'MutatingWebhookConfiguration');
    assert.equal(configuration.webhooks[0].clientConfig.caBundle, undefined);
    assert.equal(configuration.metadata.annotations['cert-manager.io/inject-ca-from'], 'platform/sidecar-injector-tls');
    assertEveryObjectValid(manifests);
  });
});
