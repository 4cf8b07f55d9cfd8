// Where the webhook's TLS certificate comes from: one typed choice, asked once by the construct.
// Each kind makes its own objects (a Secret, cert-manager's objects, or nothing) and answers what the
// rest of the construct needs: the Secret to mount, the caBundle, annotations for the webhook
// configuration, and a checksum of material this output owns.

import { X509Certificate, createHash } from 'node:crypto';
import { Chart, Duration } from 'cdk8s';
import { k8s } from 'cdk8s-plus-27';
import { Construct } from 'constructs';
import { ConfigIssue, TLS_FILES, dns1123SubdomainError } from '../../webhook/config';
import { SidecarInjectorPropsError } from '../sidecar-injector-props-error';
import { CertificateStoreError, loadOrCreateWebhookCertificate } from './certificate-store';
import { CertManagerIssuerRef, certManagerObjects } from './cert-manager-objects';
import { WebhookCertificate, generateWebhookCertificate, webhookCertificateProblems, webhookDnsNames } from './webhook-certificate';

/** What the construct tells the certificate source about the webhook it serves. */
export interface WebhookCertificateTarget {
  /** The injector's name (prefix of the objects a source makes). */
  readonly name: string;
  /** Name of the webhook's Service: the serving certificate must name `<serviceName>.<namespace>.svc`. */
  readonly serviceName: string;
  /** Namespace of the webhook, its Service and the Secret. */
  readonly namespace: string;
  /** The cluster's DNS domain, for the longest name the certificate covers (`<service>.<namespace>.svc.<clusterDomain>`).
   * @default 'cluster.local' */
  readonly clusterDomain?: string;
  /** Name of the Secret to make, when the source makes one. */
  readonly secretName: string;
  /** Labels for the objects the source makes. */
  readonly labels: Record<string, string>;
  /** The prop path errors are reported under. @default 'certificates' */
  readonly propPath?: string;
}

/** What the construct builds the rest with. */
export interface WebhookCertificateBinding {
  /** The `kubernetes.io/tls` Secret the webhook pods mount (`tls.crt`, `tls.key`). */
  readonly secretName: string;
  /** The webhook configuration's `clientConfig.caBundle` (base64 PEM); undefined when cert-manager injects it. */
  readonly caBundle?: string;
  /** Annotations for the MutatingWebhookConfiguration (cert-manager's `inject-ca-from`). */
  readonly webhookConfigurationAnnotations: Record<string, string>;
  /** `checksum/tls` for the pod template: set only when this output holds the material, so it changes
   * exactly when the material does. Undefined when the cluster owns it: renewals then reach the pods
   * through the mounted Secret's live reload, with no restart. */
  readonly checksum?: string;
  /** The material, when this output holds it. */
  readonly material?: WebhookCertificate;
  /** The Secret made, when one is made. */
  readonly secret?: k8s.KubeSecret;
}

/** Where the Secret holding certificate material goes in the synthesized output. */
export interface SecretOutputOptions {
  /**
   * Put the Secret in a chart of its own, next to the injector's chart: its own `*.k8s.yaml` file,
   * written after the injector's file (cdk8s then numbers the files: `0000-<chart>.k8s.yaml`,
   * `0001-<chart>-secret.k8s.yaml`). The other files then hold no private key and can be committed;
   * the Secret's file can be sealed, or kept out of git and applied from elsewhere.
   * @default false (the Secret is in the injector's chart)
   */
  readonly separateSecretFile?: boolean;
}

/** Options of {@link WebhookCertificates.generated}: a CA and serving certificate generated at synth. */
export interface GeneratedCertificatesOptions extends SecretOutputOptions {
  /**
   * A directory that keeps the CA (with its key) and the serving certificate between synths, so
   * that synths give identical output until something needs renewal. It holds private keys: keep it
   * out of git, in your CI's secret storage. See `loadOrCreateWebhookCertificate()` for the rules.
   * @default none: a new CA and certificate at every synth (fine for tests, not for GitOps)
   */
  readonly storeDirectory?: string;
  /** A stored serving certificate with less time left than this is re-issued from the same CA.
   * @default Duration.days(30) */
  readonly renewBefore?: Duration;
  /** The time renewal decisions are made at (for tests, and for rehearsing a renewal). @default now */
  readonly now?: Date;
}

/** Options of {@link WebhookCertificates.fromExistingSecret}: a TLS Secret made outside this output. */
export interface ExistingSecretOptions {
  /** A `kubernetes.io/tls` Secret in the webhook's namespace, made elsewhere (Sealed Secrets, External
   * Secrets, Vault): it must hold `tls.crt` and `tls.key` for `<service>.<namespace>.svc`. */
  readonly secretName: string;
  /** PEM of the CA (or CAs, concatenated) that signed the Secret's certificate: the caBundle. */
  readonly caCertificate: string;
}

/** Options of {@link WebhookCertificates.certManager}: cert-manager issues the certificate and injects the caBundle. */
export interface CertManagerOptions {
  /** The issuer of the serving certificate. @default a self-signed Issuer, a CA Certificate and a CA
   * Issuer, made next to the webhook */
  readonly issuer?: CertManagerIssuerRef;
  /** Lifetime of the serving certificate. @default Duration.days(365) */
  readonly duration?: Duration;
  /** cert-manager renews the serving certificate this long before it expires. @default Duration.days(30) */
  readonly renewBefore?: Duration;
}

/**
 * Where the webhook's TLS certificate comes from. Pick one with a static factory:
 * `generated()`, `fromPem()`, `fromExistingSecret()` or `certManager()`.
 */
export abstract class WebhookCertificates {
  /** Generated at synth; kept in `storeDirectory` between synths when one is given. */
  static generated(options: GeneratedCertificatesOptions = {}): WebhookCertificates {
    return new GeneratedCertificates(options);
  }

  /** Material in PEM, made elsewhere. Checked at synth: signed by the CA, key matching, naming the Service. */
  static fromPem(material: WebhookCertificate, options: SecretOutputOptions = {}): WebhookCertificates {
    return new PemCertificates(material, options);
  }

  /** A `kubernetes.io/tls` Secret made elsewhere; the output holds no Secret and no key. */
  static fromExistingSecret(options: ExistingSecretOptions): WebhookCertificates {
    return new ExistingSecretCertificates(options);
  }

  /** cert-manager issues the certificate and injects the caBundle; the output holds no Secret, no key. */
  static certManager(options: CertManagerOptions = {}): WebhookCertificates {
    return new CertManagerCertificates(options);
  }

  /** @internal Makes this source's objects under `scope` and answers what the construct builds the rest with. */
  abstract _bind(scope: Construct, target: WebhookCertificateTarget): WebhookCertificateBinding;
}

class GeneratedCertificates extends WebhookCertificates {
  constructor(private readonly options: GeneratedCertificatesOptions) {
    super();
  }

  /** @internal */
  _bind(scope: Construct, target: WebhookCertificateTarget): WebhookCertificateBinding {
    const renewBefore = this.options.renewBefore ?? Duration.days(30);
    if (this.options.storeDirectory === undefined) {
      const material = generateWebhookCertificate({
        serviceName: target.serviceName,
        namespace: target.namespace,
        clusterDomain: target.clusterDomain,
        now: this.options.now,
      });
      return secretBinding(scope, target, material, material.caCertificate, this.options);
    }
    if (!(renewBefore.toMilliseconds() > 0)) fail(target, 'renewBefore', `must be longer than zero, got ${renewBefore.toMilliseconds()} ms`);
    try {
      const stored = loadOrCreateWebhookCertificate({
        directory: this.options.storeDirectory,
        serviceName: target.serviceName,
        namespace: target.namespace,
        clusterDomain: target.clusterDomain,
        renewBeforeMs: renewBefore.toMilliseconds(),
        now: this.options.now,
      });
      return secretBinding(scope, target, stored.material, stored.caBundle, this.options);
    } catch (error) {
      if (error instanceof CertificateStoreError) fail(target, 'storeDirectory', error.message);
      throw error;
    }
  }
}

class PemCertificates extends WebhookCertificates {
  constructor(private readonly material: WebhookCertificate, private readonly options: SecretOutputOptions) {
    super();
  }

  /** @internal */
  _bind(scope: Construct, target: WebhookCertificateTarget): WebhookCertificateBinding {
    const problems = webhookCertificateProblems(this.material, `${target.serviceName}.${target.namespace}.svc`);
    if (problems.length > 0) throw new SidecarInjectorPropsError(problems.map((message) => ({ path: target.propPath ?? 'certificates', message })));
    return secretBinding(scope, target, this.material, this.material.caCertificate, this.options);
  }
}

class ExistingSecretCertificates extends WebhookCertificates {
  constructor(private readonly options: ExistingSecretOptions) {
    super();
  }

  /** @internal */
  _bind(_scope: Construct, target: WebhookCertificateTarget): WebhookCertificateBinding {
    const issues: ConfigIssue[] = [];
    const prefix = target.propPath ?? 'certificates';
    const nameError = dns1123SubdomainError(this.options.secretName);
    if (nameError) issues.push({ path: `${prefix}.secretName`, message: `${JSON.stringify(this.options.secretName)} ${nameError}` });
    const caProblem = caCertificateProblem(this.options.caCertificate);
    if (caProblem) issues.push({ path: `${prefix}.caCertificate`, message: caProblem });
    if (issues.length > 0) throw new SidecarInjectorPropsError(issues);
    return { secretName: this.options.secretName, caBundle: base64(this.options.caCertificate), webhookConfigurationAnnotations: {} };
  }
}

class CertManagerCertificates extends WebhookCertificates {
  constructor(private readonly options: CertManagerOptions) {
    super();
  }

  /** @internal */
  _bind(scope: Construct, target: WebhookCertificateTarget): WebhookCertificateBinding {
    const duration = this.options.duration ?? Duration.days(365);
    const renewBefore = this.options.renewBefore ?? Duration.days(30);
    if (!(renewBefore.toMilliseconds() > 0 && renewBefore.toMilliseconds() < duration.toMilliseconds())) {
      fail(target, 'renewBefore', `must be longer than zero and shorter than duration (${goDuration(duration)}), got ${goDuration(renewBefore)}`);
    }
    if (this.options.issuer) {
      const nameError = dns1123SubdomainError(this.options.issuer.name);
      if (nameError) fail(target, 'issuer.name', `${JSON.stringify(this.options.issuer.name)} ${nameError}`);
    }
    const certificateName = certManagerObjects(scope, {
      name: target.name,
      namespace: target.namespace,
      labels: target.labels,
      secretName: target.secretName,
      dnsNames: webhookDnsNames(target.serviceName, target.namespace, target.clusterDomain),
      issuer: this.options.issuer,
      duration: goDuration(duration),
      renewBefore: goDuration(renewBefore),
    });
    return {
      secretName: target.secretName,
      webhookConfigurationAnnotations: { 'cert-manager.io/inject-ca-from': `${target.namespace}/${certificateName}` },
    };
  }
}

/** The Secret of the modes whose output holds the material, and the binding that goes with it. */
function secretBinding(
  scope: Construct,
  target: WebhookCertificateTarget,
  material: WebhookCertificate,
  caBundle: string,
  options: SecretOutputOptions,
): WebhookCertificateBinding {
  const secret = new k8s.KubeSecret(options.separateSecretFile ? secretChart(scope) : scope, 'Secret', {
    metadata: { name: target.secretName, namespace: target.namespace, labels: target.labels },
    type: 'kubernetes.io/tls',
    data: {
      [TLS_FILES.certificate]: base64(material.certificate),
      [TLS_FILES.privateKey]: base64(material.privateKey),
      [TLS_FILES.caCertificate]: base64(material.caCertificate),
    },
  });
  return {
    secretName: target.secretName,
    caBundle: base64(caBundle),
    webhookConfigurationAnnotations: {},
    checksum: sha256(caBundle + material.certificate + material.privateKey),
    material,
    secret,
  };
}

/** A chart next to the one holding `scope`, synthesized after it, for the Secret alone. */
function secretChart(scope: Construct): Chart {
  const chart = Chart.of(scope);
  const parent = chart.node.scope;
  if (!parent) throw new Error(`separateSecretFile needs the chart ${chart.node.path} to have a parent (an App)`);
  let id = `${chart.node.id}-secret`;
  for (let n = 2; parent.node.tryFindChild(id); n++) id = `${chart.node.id}-secret${n}`;
  const own = new Chart(parent, id);
  own.addDependency(chart);
  return own;
}

function fail(target: WebhookCertificateTarget, prop: string, message: string): never {
  throw new SidecarInjectorPropsError([{ path: `${target.propPath ?? 'certificates'}.${prop}`, message }]);
}

function caCertificateProblem(pem: string): string | undefined {
  const blocks = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g) ?? [];
  if (blocks.length === 0) return 'must hold at least one PEM certificate';
  for (const block of blocks) {
    try {
      const certificate = new X509Certificate(block);
      if (!certificate.ca) return `${certificate.subject.replace(/\n/g, ', ')} is not a CA certificate (basicConstraints CA:FALSE)`;
    } catch (error) {
      return `is not a PEM certificate: ${(error as Error).message}`;
    }
  }
  return undefined;
}

/** A Go duration as cert-manager reads it ('8760h', '720h', '90m', '30s'). */
function goDuration(duration: Duration): string {
  const seconds = Math.round(duration.toSeconds());
  if (seconds % 3600 === 0) return `${seconds / 3600}h`;
  if (seconds % 60 === 0) return `${seconds / 60}m`;
  return `${seconds}s`;
}

function base64(text: string): string {
  return Buffer.from(text, 'utf8').toString('base64');
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}
