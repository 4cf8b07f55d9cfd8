// Certificates for the webhook's HTTPS endpoint: a private CA (its certificate becomes the
// MutatingWebhookConfiguration's caBundle) and a serving certificate for the Service's DNS names.
// Keys come from Node's native generator (fast, and not a JS PRNG); node-forge builds the X.509 parts.

import { createPublicKey, generateKeyPairSync, X509Certificate } from 'node:crypto';
import * as forge from 'node-forge';
import { serialNumber } from './serial-number';

/** PEM-encoded certificate material: what the Secret holds and the caBundle carries. */
export interface WebhookCertificate {
  /** The CA certificate that signed `certificate` (the caBundle and the Secret's `ca.crt`). */
  readonly caCertificate: string;
  /** The serving certificate (the Secret's `tls.crt`). */
  readonly certificate: string;
  /** The serving certificate's private key (the Secret's `tls.key`). */
  readonly privateKey: string;
}

/** Options of {@link generateWebhookCertificate}: the Service to certify and the validity periods. */
export interface WebhookCertificateOptions {
  /** Name of the webhook's Service; the certificate names `<serviceName>.<namespace>.svc` and its shorter and longer forms. */
  readonly serviceName: string;
  /** Namespace of the webhook's Service. */
  readonly namespace: string;
  /** The cluster's DNS domain, for the longest name the certificate covers (`<service>.<namespace>.svc.<clusterDomain>`).
   * @default 'cluster.local' */
  readonly clusterDomain?: string;
  /** Days the generated CA is valid, from `now`. @default 3650 (10 years) */
  readonly caValidityDays?: number;
  /** Days the serving certificate is valid, from `now`. @default 365 */
  readonly validityDays?: number;
  /** Start of validity. @default now */
  readonly now?: Date;
}

/** The names a client may use for the Service: `svc`, `svc.ns`, `svc.ns.svc`, `svc.ns.svc.<domain>`. */
export function webhookDnsNames(serviceName: string, namespace: string, clusterDomain = 'cluster.local'): string[] {
  return [serviceName, `${serviceName}.${namespace}`, `${serviceName}.${namespace}.svc`, `${serviceName}.${namespace}.svc.${clusterDomain}`];
}

function nativeRsaKeyPair(): forge.pki.rsa.KeyPair {
  const { privateKey } = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    privateKeyEncoding: { type: 'pkcs1', format: 'pem' },
    publicKeyEncoding: { type: 'pkcs1', format: 'pem' },
  });
  const forgeKey = forge.pki.privateKeyFromPem(privateKey) as forge.pki.rsa.PrivateKey;
  return { privateKey: forgeKey, publicKey: forge.pki.setRsaPublicKey(forgeKey.n, forgeKey.e) };
}

function validity(cert: forge.pki.Certificate, now: Date, days: number): void {
  // Backdated a little so a node whose clock runs behind does not reject a fresh certificate.
  cert.validity.notBefore = new Date(now.getTime() - 5 * 60 * 1000);
  cert.validity.notAfter = new Date(now.getTime() + days * 24 * 60 * 60 * 1000);
}

/** A CA that can sign serving certificates: its certificate and its private key, in PEM. */
export interface WebhookCertificateAuthority {
  /** The CA certificate (what the caBundle carries). */
  readonly certificate: string;
  /** The CA's private key: whoever holds it can issue certificates the apiserver trusts. */
  readonly privateKey: string;
}

/** Options of {@link generateWebhookCertificateAuthority}: whose CA it is and how long it is valid. */
export interface WebhookCertificateAuthorityOptions {
  /** Name of the webhook's Service; goes into the CA's common name (`<serviceName>.<namespace> webhook CA`). */
  readonly serviceName: string;
  /** Namespace of the webhook's Service; goes into the CA's common name. */
  readonly namespace: string;
  /** Days the CA is valid, from `now`. @default 3650 (10 years) */
  readonly validityDays?: number;
  /** Start of validity. @default now */
  readonly now?: Date;
}

/** Options of {@link issueServingCertificate}: the Service to certify and the validity period. */
export interface ServingCertificateOptions {
  /** Name of the webhook's Service; the certificate names `<serviceName>.<namespace>.svc` and its shorter and longer forms. */
  readonly serviceName: string;
  /** Namespace of the webhook's Service. */
  readonly namespace: string;
  /** The cluster's DNS domain, for the longest name the certificate covers (`<service>.<namespace>.svc.<clusterDomain>`).
   * @default 'cluster.local' */
  readonly clusterDomain?: string;
  /** Capped at what is left of the CA's validity, so the chain never outlives its root. @default 365 */
  readonly validityDays?: number;
  /** Start of validity. @default now */
  readonly now?: Date;
}

const DAY_MS = 24 * 60 * 60 * 1000;

// node-forge writes CRLF line ends; plain LF PEM is what every other tool writes and expects.
const lf = (pem: string) => pem.replace(/\r\n/g, '\n');

/** Generates a new self-signed CA for the webhook's serving certificates. */
export function generateWebhookCertificateAuthority(options: WebhookCertificateAuthorityOptions): WebhookCertificateAuthority {
  const now = options.now ?? new Date();
  const caKeys = nativeRsaKeyPair();
  const ca = forge.pki.createCertificate();
  ca.publicKey = caKeys.publicKey;
  ca.serialNumber = serialNumber();
  validity(ca, now, options.validityDays ?? 3650);
  const caSubject = [{ name: 'commonName', value: `${options.serviceName}.${options.namespace} webhook CA` }];
  ca.setSubject(caSubject);
  ca.setIssuer(caSubject);
  ca.setExtensions([
    { name: 'basicConstraints', cA: true, critical: true },
    { name: 'keyUsage', keyCertSign: true, cRLSign: true, critical: true },
    { name: 'subjectKeyIdentifier' },
  ]);
  ca.sign(caKeys.privateKey, forge.md.sha256.create());
  return { certificate: lf(forge.pki.certificateToPem(ca)), privateKey: lf(forge.pki.privateKeyToPem(caKeys.privateKey)) };
}

/** Issues a serving certificate for the webhook Service (with a new key) from an existing CA. */
export function issueServingCertificate(authority: WebhookCertificateAuthority, options: ServingCertificateOptions): WebhookCertificate {
  const now = options.now ?? new Date();
  const ca = forge.pki.certificateFromPem(authority.certificate);
  const caKey = forge.pki.privateKeyFromPem(authority.privateKey);
  const caDaysLeft = Math.floor((ca.validity.notAfter.getTime() - now.getTime()) / DAY_MS);
  const keys = nativeRsaKeyPair();
  const cert = forge.pki.createCertificate();
  cert.publicKey = keys.publicKey;
  cert.serialNumber = serialNumber();
  validity(cert, now, Math.min(options.validityDays ?? 365, caDaysLeft));
  const dnsNames = webhookDnsNames(options.serviceName, options.namespace, options.clusterDomain);
  cert.setSubject([{ name: 'commonName', value: dnsNames[2] }]);
  cert.setIssuer(ca.subject.attributes);
  cert.setExtensions([
    { name: 'basicConstraints', cA: false, critical: true },
    { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
    { name: 'extKeyUsage', serverAuth: true },
    { name: 'subjectAltName', altNames: dnsNames.map((value) => ({ type: 2, value })) },
    { name: 'subjectKeyIdentifier' },
    { name: 'authorityKeyIdentifier', keyIdentifier: ca.generateSubjectKeyIdentifier().getBytes() },
  ]);
  cert.sign(caKey, forge.md.sha256.create());
  return {
    caCertificate: authority.certificate,
    certificate: lf(forge.pki.certificateToPem(cert)),
    privateKey: lf(forge.pki.privateKeyToPem(keys.privateKey)),
  };
}

/** Generates a new CA and a serving certificate for the webhook Service (the CA key is not kept). */
export function generateWebhookCertificate(options: WebhookCertificateOptions): WebhookCertificate {
  const authority = generateWebhookCertificateAuthority({ ...options, validityDays: options.caValidityDays });
  return issueServingCertificate(authority, options);
}

/**
 * Every reason `material` cannot serve `dnsName`: not signed by its CA, key not matching, name not
 * covered, expired. [] when it can. Checked at synth so brought-in material fails there, not in TLS.
 */
export function webhookCertificateProblems(material: WebhookCertificate, dnsName: string, now = new Date()): string[] {
  const problems: string[] = [];
  let ca: X509Certificate;
  let cert: X509Certificate;
  try {
    ca = new X509Certificate(material.caCertificate);
  } catch (error) {
    return [`caCertificate is not a PEM certificate: ${(error as Error).message}`];
  }
  try {
    cert = new X509Certificate(material.certificate);
  } catch (error) {
    return [`certificate is not a PEM certificate: ${(error as Error).message}`];
  }
  if (!ca.ca) problems.push('caCertificate is not a CA certificate (basicConstraints CA:FALSE)');
  if (!cert.verify(ca.publicKey)) problems.push('certificate is not signed by caCertificate');
  try {
    const publicFromKey = createPublicKey(material.privateKey).export({ type: 'spki', format: 'der' });
    if (!publicFromKey.equals(cert.publicKey.export({ type: 'spki', format: 'der' }))) {
      problems.push('privateKey does not belong to certificate');
    }
  } catch (error) {
    problems.push(`privateKey is not a PEM private key: ${(error as Error).message}`);
  }
  if (cert.checkHost(dnsName) === undefined) problems.push(`certificate does not name ${dnsName} in its subjectAltName`);
  for (const [label, x509] of [['certificate', cert], ['caCertificate', ca]] as const) {
    if (new Date(x509.validTo).getTime() <= now.getTime()) problems.push(`${label} expired on ${x509.validTo}`);
    if (new Date(x509.validFrom).getTime() > now.getTime()) problems.push(`${label} is not valid before ${x509.validFrom}`);
  }
  return problems;
}
