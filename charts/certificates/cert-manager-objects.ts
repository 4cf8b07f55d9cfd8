// The cert-manager.io/v1 objects of the cert-manager mode, typed by hand from cert-manager's CRD schema
// (the tests validate them against the CRDs of a cert-manager release: test/fixtures/cert-manager/).

import { ApiObject } from 'cdk8s';
import { Construct } from 'constructs';

const API_VERSION = 'cert-manager.io/v1';

/** An `Issuer` or `ClusterIssuer` reference, as a Certificate's `spec.issuerRef` holds it. */
export interface CertManagerIssuerRef {
  /** Name of the `Issuer` (in the webhook's namespace) or `ClusterIssuer` object. */
  readonly name: string;
  /** Kind of the issuer: a namespaced `Issuer` (in the webhook's namespace) or a `ClusterIssuer`.
   * @default 'Issuer' */
  readonly kind?: 'Issuer' | 'ClusterIssuer';
  /** API group of the issuer; other groups are external issuers. @default 'cert-manager.io' */
  readonly group?: string;
}

export interface CertManagerObjectsSettings {
  readonly name: string;
  readonly namespace: string;
  readonly labels: Record<string, string>;
  readonly secretName: string;
  readonly dnsNames: string[];
  /** Issues the serving certificate; when left out, a self-signed CA chain is made for it. */
  readonly issuer?: CertManagerIssuerRef;
  /** Go duration, e.g. '8760h'. */
  readonly duration: string;
  readonly renewBefore: string;
}

/**
 * Without an issuer given: a self-signed Issuer, a CA Certificate it signs, a CA Issuer holding that
 * CA, and the serving Certificate from the CA Issuer. With one: only the serving Certificate.
 * Returns the serving Certificate's name (what `cert-manager.io/inject-ca-from` points at).
 */
export function certManagerObjects(scope: Construct, settings: CertManagerObjectsSettings): string {
  const metadata = (name: string) => ({ name, namespace: settings.namespace, labels: settings.labels });
  let issuerRef: CertManagerIssuerRef = settings.issuer ?? { name: `${settings.name}-ca`, kind: 'Issuer', group: 'cert-manager.io' };
  if (!settings.issuer) {
    const selfSigned = `${settings.name}-selfsigned`;
    const caName = `${settings.name}-ca`;
    new ApiObject(scope, 'SelfSignedIssuer', { apiVersion: API_VERSION, kind: 'Issuer', metadata: metadata(selfSigned), spec: { selfSigned: {} } });
    new ApiObject(scope, 'CaCertificate', {
      apiVersion: API_VERSION,
      kind: 'Certificate',
      metadata: metadata(caName),
      spec: {
        isCA: true,
        commonName: `${settings.name}.${settings.namespace} webhook CA`,
        secretName: caName,
        // Ten years: the serving certificate's Secret carries the CA that signed it, and cainjector
        // copies that one into the caBundle, so a CA change reaches the apiserver only with a re-issue.
        duration: '87600h',
        renewBefore: '720h',
        privateKey: { algorithm: 'RSA', size: 2048 },
        issuerRef: { name: selfSigned, kind: 'Issuer', group: 'cert-manager.io' },
      },
    });
    new ApiObject(scope, 'CaIssuer', { apiVersion: API_VERSION, kind: 'Issuer', metadata: metadata(caName), spec: { ca: { secretName: caName } } });
    issuerRef = { name: caName, kind: 'Issuer', group: 'cert-manager.io' };
  }
  new ApiObject(scope, 'ServingCertificate', {
    apiVersion: API_VERSION,
    kind: 'Certificate',
    metadata: metadata(settings.secretName),
    spec: {
      secretName: settings.secretName,
      dnsNames: settings.dnsNames,
      duration: settings.duration,
      renewBefore: settings.renewBefore,
      usages: ['server auth', 'digital signature', 'key encipherment'],
      privateKey: { algorithm: 'RSA', size: 2048, rotationPolicy: 'Always' },
      issuerRef: { name: issuerRef.name, kind: issuerRef.kind ?? 'Issuer', group: issuerRef.group ?? 'cert-manager.io' },
    },
  });
  return settings.secretName;
}
