// The generated certificate material, kept in a directory between synths so that synthesizing twice
// gives the same bytes: no Secret churn, no pod restarts, no caBundle change in a GitOps loop.
// The CA key is kept too, so a serving certificate that needs renewal is re-issued from the same CA
// and the caBundle the apiserver holds stays valid across the renewal.

import { X509Certificate, createPublicKey } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import {
  WebhookCertificate,
  WebhookCertificateAuthority,
  generateWebhookCertificateAuthority,
  issueServingCertificate,
  webhookCertificateProblems,
} from './webhook-certificate';

const DAY_MS = 24 * 60 * 60 * 1000;

/** The files of a certificate store. The Secret's three files, plus the CA key and the CA it replaced. */
export const CERTIFICATE_STORE_FILES = {
  /** The CA certificate, PEM: the caBundle and the Secret's `ca.crt`. */
  caCertificate: 'ca.crt',
  /** The CA's private key, PEM: kept so renewals are signed by the same CA. */
  caPrivateKey: 'ca.key',
  /** The serving certificate, PEM: the Secret's `tls.crt`. */
  certificate: 'tls.crt',
  /** The serving certificate's private key, PEM: the Secret's `tls.key`. */
  privateKey: 'tls.key',
  /** The CA before the last rotation: still in the caBundle, so certificates it signed stay trusted. */
  previousCaCertificate: 'previous-ca.crt',
} as const;

/** Options of {@link loadOrCreateWebhookCertificate}: where the store is, the Service it serves, and the renewal rules. */
export interface CertificateStoreOptions {
  /** The directory holding the material. Made (mode 0700) when missing. It holds private keys. */
  readonly directory: string;
  /** Name of the webhook's Service; a stored certificate that does not name it is re-issued. */
  readonly serviceName: string;
  /** Namespace of the webhook's Service; a stored certificate for another namespace is re-issued. */
  readonly namespace: string;
  /** The cluster's DNS domain, for the longest name the certificate covers (`<service>.<namespace>.svc.<clusterDomain>`).
   * @default 'cluster.local' */
  readonly clusterDomain?: string;
  /** A serving certificate with less time left than this is re-issued. @default 30 days (in ms) */
  readonly renewBeforeMs?: number;
  /** Validity of a newly issued serving certificate. @default 365 days */
  readonly validityDays?: number;
  /** Validity of a new CA. @default 3650 days */
  readonly caValidityDays?: number;
  /** The time to decide by. @default now */
  readonly now?: Date;
}

/** What happened to the store during a load. */
export type CertificateStoreOutcome =
  | 'kept' // everything reused as it was
  | 'created' // a new CA and serving certificate: there was no store
  | 'renewed' // a new serving certificate from the same CA: the caBundle is unchanged
  | 'ca-rotated'; // a new CA and serving certificate; the old CA stays in the caBundle

/** What {@link loadOrCreateWebhookCertificate} returns: the material to use and what it did to the store. */
export interface StoredWebhookCertificate {
  /** What the Secret holds: the serving certificate, its key and the CA that signed it. */
  readonly material: WebhookCertificate;
  /** PEM for the caBundle: the CA, then the CA before the last rotation while that one is still valid. */
  readonly caBundle: string;
  /** What the load did: `kept`, `created`, `renewed` or `ca-rotated`. */
  readonly outcome: CertificateStoreOutcome;
  /** Why the outcome (for a synth log line): what was reused or what needed renewal. */
  readonly reason: string;
}

/** A store that cannot be used: the message says what is wrong and what to do. */
export class CertificateStoreError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CertificateStoreError';
  }
}

/**
 * Loads the material from `options.directory`, renewing what needs it, and writes back what changed:
 * - nothing there: a new CA and serving certificate;
 * - the serving certificate does not fit the Service, does not match its key or CA, or has
 *   `renewBeforeMs` or less left: a new one from the same CA (the caBundle does not change);
 * - the CA has less left than a serving certificate's validity plus `renewBeforeMs`: a new CA, and
 *   the old CA kept in the caBundle, so certificates of either CA are trusted during the change;
 * - the CA has `renewBeforeMs` or less left: fails, saying what to do (a rotation with overlap is no
 *   longer possible).
 */
export function loadOrCreateWebhookCertificate(options: CertificateStoreOptions): StoredWebhookCertificate {
  const now = options.now ?? new Date();
  const dir = options.directory;
  const renewBeforeMs = options.renewBeforeMs ?? 30 * DAY_MS;
  const validityDays = options.validityDays ?? 365;
  const host = `${options.serviceName}.${options.namespace}.svc`;
  const files = readStore(dir);
  const issueOptions = { serviceName: options.serviceName, namespace: options.namespace, clusterDomain: options.clusterDomain, validityDays, now };
  const newAuthority = () =>
    generateWebhookCertificateAuthority({ serviceName: options.serviceName, namespace: options.namespace, validityDays: options.caValidityDays, now });

  if (files.caCertificate === undefined) {
    const authority = newAuthority();
    const material = issueServingCertificate(authority, issueOptions);
    writeStore(dir, { ...storeFilesOf(authority, material), previousCaCertificate: undefined });
    return { material, caBundle: authority.certificate, outcome: 'created', reason: `no certificate material in ${dir}` };
  }

  const ca = parseCertificate(files.caCertificate, path.join(dir, CERTIFICATE_STORE_FILES.caCertificate));
  if (files.caPrivateKey !== undefined) checkKeyPair(ca, files.caPrivateKey, dir);
  const caLeftMs = Date.parse(ca.validTo) - now.getTime();
  if (caLeftMs <= renewBeforeMs) {
    const when = caLeftMs <= 0 ? `expired on ${ca.validTo}` : `expires on ${ca.validTo}, within renewBefore (${days(renewBeforeMs)} days)`;
    throw new CertificateStoreError(
      `the webhook CA in ${path.join(dir, CERTIFICATE_STORE_FILES.caCertificate)} ${when}. ` +
        'It is too late to phase a new CA in while the old one is still trusted. To start over: remove ' +
        `${dir}, synthesize again, and apply the new Secret and MutatingWebhookConfiguration together ` +
        '(admissions sent to the webhook fail TLS until both are in place). Synthesizing at least once ' +
        `in the year before the CA expires rotates it with an overlap instead.`,
    );
  }

  const previousCa = files.previousCaCertificate && stillValid(files.previousCaCertificate, now) ? files.previousCaCertificate : undefined;
  const servingProblems = servingCertificateProblems(files, host, now, renewBeforeMs);
  const caTooShort = caLeftMs < validityDays * DAY_MS + renewBeforeMs;
  const caKeyMissing = files.caPrivateKey === undefined && servingProblems.length > 0;

  if (caTooShort || caKeyMissing) {
    const authority = newAuthority();
    const material = issueServingCertificate(authority, issueOptions);
    writeStore(dir, { ...storeFilesOf(authority, material), previousCaCertificate: files.caCertificate });
    const reason = caTooShort
      ? `the CA expires on ${ca.validTo}, sooner than a new serving certificate would`
      : `${servingProblems.join('; ')}, and ${CERTIFICATE_STORE_FILES.caPrivateKey} is missing, so the CA cannot issue a new one`;
    return { material, caBundle: authority.certificate + files.caCertificate, outcome: 'ca-rotated', reason };
  }

  const caBundle = files.caCertificate + (previousCa ?? '');
  if (files.previousCaCertificate !== undefined && previousCa === undefined) {
    // The CA before the last rotation has expired: nothing it signed can be served any more.
    writeStore(dir, { previousCaCertificate: undefined });
  }
  if (servingProblems.length === 0) {
    const material = { caCertificate: files.caCertificate, certificate: files.certificate!, privateKey: files.privateKey! };
    return { material, caBundle, outcome: 'kept', reason: `the serving certificate is valid until ${new X509Certificate(material.certificate).validTo}` };
  }
  const authority = { certificate: files.caCertificate, privateKey: files.caPrivateKey! };
  const material = issueServingCertificate(authority, issueOptions);
  writeStore(dir, { certificate: material.certificate, privateKey: material.privateKey });
  return { material, caBundle, outcome: 'renewed', reason: servingProblems.join('; ') };
}

type StoreFiles = { -readonly [K in keyof typeof CERTIFICATE_STORE_FILES]?: string };

function storeFilesOf(authority: WebhookCertificateAuthority, material: WebhookCertificate): StoreFiles {
  return { caCertificate: authority.certificate, caPrivateKey: authority.privateKey, certificate: material.certificate, privateKey: material.privateKey };
}

function servingCertificateProblems(files: StoreFiles, host: string, now: Date, renewBeforeMs: number): string[] {
  if (files.certificate === undefined || files.privateKey === undefined) return ['there is no serving certificate and key'];
  const problems = webhookCertificateProblems(
    { caCertificate: files.caCertificate!, certificate: files.certificate, privateKey: files.privateKey },
    host,
    now,
  );
  if (problems.length > 0) return problems;
  const validTo = new X509Certificate(files.certificate).validTo;
  if (Date.parse(validTo) - now.getTime() <= renewBeforeMs) {
    return [`the serving certificate expires on ${validTo}, within renewBefore (${days(renewBeforeMs)} days)`];
  }
  return [];
}

function readStore(dir: string): StoreFiles {
  const files: StoreFiles = {};
  for (const [field, file] of Object.entries(CERTIFICATE_STORE_FILES) as [keyof StoreFiles, string][]) {
    try {
      files[field] = fs.readFileSync(path.join(dir, file), 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
  }
  return files;
}

/** Writes the given files (a new file renamed into place, mode 0600) and removes those set to undefined. */
function writeStore(dir: string, files: StoreFiles): void {
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  for (const [field, content] of Object.entries(files) as [keyof StoreFiles, string | undefined][]) {
    const target = path.join(dir, CERTIFICATE_STORE_FILES[field]);
    if (content === undefined) {
      fs.rmSync(target, { force: true });
      continue;
    }
    // A new file renamed into place: an existing file's looser mode is never inherited.
    fs.rmSync(`${target}.tmp`, { force: true });
    fs.writeFileSync(`${target}.tmp`, content, { mode: 0o600 });
    fs.renameSync(`${target}.tmp`, target);
  }
}

function parseCertificate(pem: string, file: string): X509Certificate {
  try {
    return new X509Certificate(pem);
  } catch (error) {
    throw new CertificateStoreError(`${file} is not a PEM certificate (${(error as Error).message}): restore it, or remove the store directory to start over`);
  }
}

function checkKeyPair(ca: X509Certificate, caPrivateKey: string, dir: string): void {
  let matches = false;
  try {
    const fromKey = createPublicKey(caPrivateKey).export({ type: 'spki', format: 'der' });
    matches = fromKey.equals(ca.publicKey.export({ type: 'spki', format: 'der' }));
  } catch {
    matches = false;
  }
  if (!matches) {
    throw new CertificateStoreError(
      `${path.join(dir, CERTIFICATE_STORE_FILES.caPrivateKey)} is not the key of ${path.join(dir, CERTIFICATE_STORE_FILES.caCertificate)}: ` +
        'restore the matching key, or remove the store directory to start over',
    );
  }
}

function stillValid(pem: string, now: Date): boolean {
  try {
    return Date.parse(new X509Certificate(pem).validTo) > now.getTime();
  } catch {
    return false;
  }
}

function days(ms: number): number {
  return Math.round((ms / DAY_MS) * 100) / 100;
}
