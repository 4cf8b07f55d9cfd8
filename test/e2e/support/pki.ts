// Certificates for a throwaway control plane on 127.0.0.1: one CA, a serving certificate for the
// kube-apiserver (and one for the webhook), an admin client certificate in system:masters, and the
// service-account signing key. Keys come from node:crypto; node-forge only writes the X.509 parts.
import { generateKeyPairSync } from 'node:crypto';
import * as forge from 'node-forge';

export interface KeyAndCertificate {
  readonly certificate: string;
  readonly privateKey: string;
}

function rsaKeys(): { publicKey: forge.pki.PublicKey; privateKey: forge.pki.PrivateKey; privateKeyPem: string } {
  const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const privateKeyPem = privateKey.export({ type: 'pkcs1', format: 'pem' }).toString();
  return {
    publicKey: forge.pki.publicKeyFromPem(publicKey.export({ type: 'spki', format: 'pem' }).toString()),
    privateKey: forge.pki.privateKeyFromPem(privateKeyPem),
    privateKeyPem,
  };
}

let serial = 1;

function certificate(subject: forge.pki.CertificateField[], keys: ReturnType<typeof rsaKeys>, issuer: { subject: forge.pki.CertificateField[]; key: forge.pki.PrivateKey } | undefined, extensions: unknown[]): string {
  const cert = forge.pki.createCertificate();
  cert.publicKey = keys.publicKey;
  cert.serialNumber = (serial++).toString(16).padStart(2, '0');
  cert.validity.notBefore = new Date(Date.now() - 60_000);
  cert.validity.notAfter = new Date(Date.now() + 24 * 3600_000);
  cert.setSubject(subject);
  cert.setIssuer(issuer?.subject ?? subject);
  cert.setExtensions(extensions as any[]);
  cert.sign((issuer?.key ?? keys.privateKey) as forge.pki.rsa.PrivateKey, forge.md.sha256.create());
  return forge.pki.certificateToPem(cert);
}

export interface TestPki {
  readonly caCertificate: string;
  /** Serves on 127.0.0.1 and localhost, and the addresses and names asked for. */
  readonly serving: KeyAndCertificate;
  /** CN=e2e-admin, O=system:masters. */
  readonly admin: KeyAndCertificate;
  /** RSA key pair the apiserver signs service-account tokens with. */
  readonly serviceAccountKey: string;
  /** The kubelet's client (CN=system:node:NAME, O=system:nodes) and serving certificates, when a node was asked for. */
  readonly kubelet?: { readonly client: KeyAndCertificate; readonly serving: KeyAndCertificate };
}

export interface TestPkiOptions {
  /** More addresses the apiserver serves on (a node's address, the `kubernetes` Service's ClusterIP). */
  readonly servingIps?: readonly string[];
  /** More names it serves as (kubernetes.default.svc). */
  readonly servingNames?: readonly string[];
  /** A node: its name and the address its kubelet serves on. */
  readonly node?: { readonly name: string; readonly ip: string };
}

export function createTestPki(options: TestPkiOptions = {}): TestPki {
  const caKeys = rsaKeys();
  const caSubject = [{ name: 'commonName', value: 'e2e control-plane CA' }];
  const caCertificate = certificate(caSubject, caKeys, undefined, [
    { name: 'basicConstraints', cA: true, critical: true },
    { name: 'keyUsage', keyCertSign: true, cRLSign: true, critical: true },
  ]);
  const issuer = { subject: caSubject, key: caKeys.privateKey };
  const servingKeys = rsaKeys();
  const serving = {
    certificate: certificate([{ name: 'commonName', value: '127.0.0.1' }], servingKeys, issuer, [
      { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
      { name: 'extKeyUsage', serverAuth: true },
      {
        name: 'subjectAltName',
        altNames: [
          { type: 7, ip: '127.0.0.1' },
          { type: 2, value: 'localhost' },
          ...(options.servingIps ?? []).map((ip) => ({ type: 7, ip })),
          ...(options.servingNames ?? []).map((value) => ({ type: 2, value })),
        ],
      },
    ]),
    privateKey: servingKeys.privateKeyPem,
  };
  const admin = clientCertificate(issuer, 'e2e-admin', 'system:masters');
  const node = options.node;
  const kubelet = node && {
    client: clientCertificate(issuer, `system:node:${node.name}`, 'system:nodes'),
    serving: (() => {
      const keys = rsaKeys();
      return {
        certificate: certificate([{ name: 'commonName', value: node.name }], keys, issuer, [
          { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
          { name: 'extKeyUsage', serverAuth: true },
          { name: 'subjectAltName', altNames: [{ type: 7, ip: node.ip }, { type: 2, value: node.name }] },
        ]),
        privateKey: keys.privateKeyPem,
      };
    })(),
  };
  return { caCertificate, serving, admin, serviceAccountKey: rsaKeys().privateKeyPem, ...(kubelet ? { kubelet } : {}) };
}

function clientCertificate(issuer: { subject: forge.pki.CertificateField[]; key: forge.pki.PrivateKey }, commonName: string, organization: string): KeyAndCertificate {
  const keys = rsaKeys();
  return {
    certificate: certificate([{ name: 'commonName', value: commonName }, { name: 'organizationName', value: organization }], keys, issuer, [
      { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
      { name: 'extKeyUsage', clientAuth: true },
    ]),
    privateKey: keys.privateKeyPem,
  };
}
