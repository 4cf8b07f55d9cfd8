// The certificate store of the generated mode: reused while it fits, the serving certificate renewed
// from the same CA (caBundle unchanged), the CA rotated with the old one kept in the caBundle, and a
// CA too close to expiry refused with a message that says what to do.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import {
  CERTIFICATE_STORE_FILES,
  CertificateStoreError,
  StoredWebhookCertificate,
  generateWebhookCertificateAuthority,
  issueServingCertificate,
  loadOrCreateWebhookCertificate,
  webhookCertificateProblems,
} from '../../charts/engine';
import { makeTempDir } from '../support/synth-helpers';

const DAY_MS = 24 * 60 * 60 * 1000;
const SERVICE = { serviceName: 'sidecar-injector', namespace: 'sidecar-injector' };
const HOST = 'sidecar-injector.sidecar-injector.svc';

function load(directory: string, now?: Date): StoredWebhookCertificate {
  return loadOrCreateWebhookCertificate({ directory, ...SERVICE, now });
}

function readFiles(dir: string): Record<string, string> {
  return Object.fromEntries(fs.readdirSync(dir).sort().map((file) => [file, fs.readFileSync(path.join(dir, file), 'utf8')]));
}

function validTo(pem: string): number {
  return Date.parse(new X509Certificate(pem).validTo);
}

/** The CA certificates a caBundle holds, by subject and serial (what an apiserver would trust). */
function bundleCas(caBundle: string): string[] {
  return (caBundle.match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----\n/g) ?? []).map((pem) => new X509Certificate(pem).serialNumber);
}

function trusts(caBundle: string, certificate: string): boolean {
  const leaf = new X509Certificate(certificate);
  return (caBundle.match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----\n/g) ?? []).some((pem) => leaf.verify(new X509Certificate(pem).publicKey));
}

describe('a new certificate store', () => {
  const dir = path.join(makeTempDir('store-new'), 'certs');
  const first = load(dir);

  test('holds a CA with its key and a serving certificate for the Service, readable by the owner only', () => {
    assert.equal(first.outcome, 'created');
    assert.deepEqual(Object.keys(readFiles(dir)), ['ca.crt', 'ca.key', 'tls.crt', 'tls.key']);
    assert.deepEqual(webhookCertificateProblems(first.material, HOST), []);
    assert.equal(fs.statSync(dir).mode & 0o777, 0o700, 'the directory is 0700');
    for (const file of ['ca.key', 'tls.key']) assert.equal(fs.statSync(path.join(dir, file)).mode & 0o777, 0o600, `${file} is 0600`);
    assert.equal(first.caBundle, first.material.caCertificate, 'the caBundle is the CA');
  });

  test('is reused as it is, byte for byte, while the serving certificate has more than 30 days left', () => {
    const before = readFiles(dir);
    const again = load(dir);
    assert.equal(again.outcome, 'kept');
    assert.deepEqual(again, { ...first, outcome: 'kept', reason: again.reason });
    const in300Days = new Date(Date.now() + 300 * DAY_MS);
    assert.equal(load(dir, in300Days).outcome, 'kept', 'kept 65 days before the serving certificate expires');
    assert.deepEqual(readFiles(dir), before, 'no file was rewritten');
  });
});

describe('a serving certificate due for renewal', () => {
  const dir = makeTempDir('store-renew');
  const created = load(dir);
  const twentyDaysBefore = new Date(validTo(created.material.certificate) - 20 * DAY_MS);
  const renewed = load(dir, twentyDaysBefore);

  test('is re-issued from the same CA, so the caBundle does not change', () => {
    assert.equal(renewed.outcome, 'renewed', renewed.reason);
    assert.match(renewed.reason, /expires on .*within renewBefore \(30 days\)/);
    assert.equal(renewed.caBundle, created.caBundle, 'caBundle unchanged');
    assert.equal(renewed.material.caCertificate, created.material.caCertificate, 'the Secret\'s ca.crt unchanged');
    assert.notEqual(renewed.material.certificate, created.material.certificate, 'a new serving certificate');
    assert.notEqual(renewed.material.privateKey, created.material.privateKey, 'with a new key');
    assert.ok(trusts(created.caBundle, renewed.material.certificate), 'the new certificate verifies under the old caBundle');
    assert.deepEqual(webhookCertificateProblems(renewed.material, HOST, twentyDaysBefore), []);
    assert.ok(validTo(renewed.material.certificate) > twentyDaysBefore.getTime() + 360 * DAY_MS, 'valid for a year from then');
  });

  test('is stored, and kept from then on', () => {
    assert.equal(fs.readFileSync(path.join(dir, 'tls.crt'), 'utf8'), renewed.material.certificate);
    assert.equal(load(dir, twentyDaysBefore).outcome, 'kept');
  });

  test('is re-issued from the same CA when the store was made for another Service', () => {
    const other = loadOrCreateWebhookCertificate({ directory: dir, serviceName: 'renamed', namespace: 'sidecar-injector', now: twentyDaysBefore });
    assert.equal(other.outcome, 'renewed');
    assert.match(other.reason, /does not name renamed\.sidecar-injector\.svc/);
    assert.equal(other.caBundle, created.caBundle);
    assert.deepEqual(webhookCertificateProblems(other.material, 'renamed.sidecar-injector.svc', twentyDaysBefore), []);
  });
});

describe('a CA close to its end', () => {
  // A CA made 3300 days ago: 350 of its 3650 days are left, less than a serving certificate's year + 30 days.
  function agedStore(label: string, options: { keepCaKey?: boolean } = {}): { dir: string; authority: ReturnType<typeof generateWebhookCertificateAuthority>; serving: string } {
    const dir = makeTempDir(label);
    const authority = generateWebhookCertificateAuthority({ ...SERVICE, now: new Date(Date.now() - 3300 * DAY_MS) });
    const material = issueServingCertificate(authority, { ...SERVICE, now: new Date(Date.now() - 100 * DAY_MS) });
    fs.writeFileSync(path.join(dir, CERTIFICATE_STORE_FILES.caCertificate), authority.certificate);
    if (options.keepCaKey ?? true) fs.writeFileSync(path.join(dir, CERTIFICATE_STORE_FILES.caPrivateKey), authority.privateKey);
    fs.writeFileSync(path.join(dir, CERTIFICATE_STORE_FILES.certificate), material.certificate);
    fs.writeFileSync(path.join(dir, CERTIFICATE_STORE_FILES.privateKey), material.privateKey);
    return { dir, authority, serving: material.certificate };
  }

  test('is rotated: a new CA signs a new certificate, and the caBundle holds the new CA and the old one', () => {
    const { dir, authority, serving } = agedStore('store-rotate');
    const rotated = load(dir);
    assert.equal(rotated.outcome, 'ca-rotated', rotated.reason);
    assert.notEqual(rotated.material.caCertificate, authority.certificate, 'a new CA');
    const oldSerial = new X509Certificate(authority.certificate).serialNumber;
    const newSerial = new X509Certificate(rotated.material.caCertificate).serialNumber;
    assert.deepEqual(bundleCas(rotated.caBundle), [newSerial, oldSerial], 'caBundle: the new CA, then the old one');
    assert.ok(trusts(rotated.caBundle, serving), 'pods still serving the old certificate are trusted');
    assert.ok(trusts(rotated.caBundle, rotated.material.certificate), 'pods serving the new certificate are trusted');
    assert.equal(fs.readFileSync(path.join(dir, CERTIFICATE_STORE_FILES.previousCaCertificate), 'utf8'), authority.certificate);
    const next = load(dir);
    assert.equal(next.outcome, 'kept');
    assert.equal(next.caBundle, rotated.caBundle, 'the next synth keeps both CAs (one rotation)');
    const afterOldCaExpired = new Date(validTo(authority.certificate) + DAY_MS);
    const later = load(dir, afterOldCaExpired);
    assert.deepEqual(bundleCas(later.caBundle), [newSerial], 'the old CA leaves the caBundle once it has expired');
    assert.ok(!fs.existsSync(path.join(dir, CERTIFICATE_STORE_FILES.previousCaCertificate)));
  });

  test('without its key (a store from before ca.key was kept) is kept while the serving certificate is good, and rotated when it is due', () => {
    const dir = makeTempDir('store-legacy');
    const legacy = generateWebhookCertificateAuthority({ ...SERVICE });
    const material = issueServingCertificate(legacy, SERVICE);
    fs.writeFileSync(path.join(dir, 'ca.crt'), legacy.certificate);
    fs.writeFileSync(path.join(dir, 'tls.crt'), material.certificate);
    fs.writeFileSync(path.join(dir, 'tls.key'), material.privateKey);
    assert.equal(load(dir).outcome, 'kept');
    const due = load(dir, new Date(validTo(material.certificate) - 10 * DAY_MS));
    assert.equal(due.outcome, 'ca-rotated');
    assert.match(due.reason, /ca\.key is missing/);
    assert.ok(trusts(due.caBundle, material.certificate) && trusts(due.caBundle, due.material.certificate), 'old and new certificates both trusted');
  });

  test('fails with what to do when it has 30 days or less left, or has expired', () => {
    const { dir, authority } = agedStore('store-expiring');
    const caEnd = validTo(authority.certificate);
    for (const [when, now] of [['20 days before', caEnd - 20 * DAY_MS], ['after', caEnd + DAY_MS]] as const) {
      assert.throws(
        () => load(dir, new Date(now)),
        (error: unknown) => {
          assert.ok(error instanceof CertificateStoreError, `a CertificateStoreError ${when} the CA's end, got ${String(error)}`);
          assert.match(error.message, /the webhook CA in .*ca\.crt (expires on|expired on)/);
          assert.match(error.message, /remove .*, synthesize again, and apply the new Secret and MutatingWebhookConfiguration together/);
          return true;
        },
      );
    }
    assert.equal(fs.readFileSync(path.join(dir, 'ca.crt'), 'utf8'), authority.certificate, 'the store is left as it was');
  });

  test('fails, naming both files, when ca.key is not the key of ca.crt', () => {
    const { dir } = agedStore('store-wrong-key');
    fs.writeFileSync(path.join(dir, 'ca.key'), generateWebhookCertificateAuthority(SERVICE).privateKey);
    assert.throws(() => load(dir), /ca\.key is not the key of .*ca\.crt: restore the matching key, or remove the store directory/);
  });
});
