import * as fs from 'node:fs';
import * as path from 'node:path';
import { App } from 'cdk8s';
import { Injection, MonitoringProps, ReconcilerProps, RevisionProps, RevisionTag, SidecarInjectorChart, WebhookCertificate, WebhookCertificates, WebhookServer } from '../charts/engine';
import type { AdmissionPolicyApiVersion, InjectorBackend } from '../charts/admission-policy';
import { DEFAULT_INJECTIONS } from './default-injections';

export const DEFAULT_NAMESPACE = 'sidecar-injector';

export interface DefaultAppOptions {
  /** Where the YAML goes. */
  readonly outdir: string;
  /** The certificate store: material kept between synths, renewed from the same CA when due.
   * @default '.certs' */
  readonly certificateStore?: string;
  /** Certificate material to serve with instead of the store's (tests pass fixed material). @default the store's */
  readonly certificate?: WebhookCertificate;
  /** The time the store decides renewals by. @default now */
  readonly now?: Date;
  /**
   * Which backend applies the injections: `admissionPolicy` writes MutatingAdmissionPolicies and
   * their bindings, and no webhook, certificate or pods at all.
   * @default 'webhook'
   */
  readonly backend?: InjectorBackend;
  /** The `admissionregistration.k8s.io` version of the policies (with a policy backend). @default 'v1' */
  readonly admissionPolicyApiVersion?: AdmissionPolicyApiVersion;
  /** The injections, for a variant of the app (a version bump rehearsed on a cluster). @default DEFAULT_INJECTIONS */
  readonly injections?: Injection[];
  /** Revisions instead of `injections`, for a variant of the app (a canary rehearsed on a cluster). @default none */
  readonly revisions?: RevisionProps[];
  /** The tags of `revisions`. @default none */
  readonly tags?: RevisionTag[];
  /** Turns the reconciler on, for a variant of the app (an outage rehearsed on a cluster). @default off */
  readonly reconciler?: ReconcilerProps;
  /** The monitoring: alerts, SLO and dashboard as plain ConfigMaps, and scrape annotations. Short
   * intervals rehearse the alerts on a cluster. @default {}: every default */
  readonly monitoring?: MonitoringProps;
  /** What the apiserver does when the injector cannot answer, for a variant of the app (an outage under Fail rehearsed). @default 'Ignore' */
  readonly failurePolicy?: 'Ignore' | 'Fail';
}

/**
 * The built-in app: one injector in namespace `sidecar-injector` carrying the seed examples, and its
 * alerts and dashboard as plain ConfigMaps (no Prometheus Operator CRD needed). It is
 * made for `kubectl apply -f dist/` on a stock cluster and for GitOps: the webhook runs on the official
 * Node image with its code in the output (no image to build), and the Secret is in a file of its own
 * (`0001-sidecar-injector-secret.k8s.yaml`), so the rest holds no private key and can be committed.
 */
export function buildDefaultApp(options: DefaultAppOptions): App {
  const app = new App({ outdir: options.outdir });
  const certificates = options.certificate
    ? WebhookCertificates.fromPem(options.certificate, { separateSecretFile: true })
    : WebhookCertificates.generated({ storeDirectory: options.certificateStore ?? '.certs', now: options.now, separateSecretFile: true });
  new SidecarInjectorChart(app, 'sidecar-injector', {
    namespace: DEFAULT_NAMESPACE,
    ...(options.revisions ? { revisions: options.revisions, tags: options.tags } : { injections: options.injections ?? DEFAULT_INJECTIONS }),
    certificates,
    server: WebhookServer.fromBundle(),
    backend: options.backend,
    admissionPolicyApiVersion: options.admissionPolicyApiVersion,
    ...(options.reconciler ? { reconciler: options.reconciler } : {}),
    monitoring: options.monitoring ?? {},
    ...(options.failurePolicy ? { failurePolicy: options.failurePolicy } : {}),
  });
  return app;
}

/** Synthesizes, first removing the YAML of an earlier synth so a renamed chart leaves nothing stale. */
export function synthDefaultApp(options: DefaultAppOptions): string[] {
  removeEarlierSynth(options.outdir);
  const app = buildDefaultApp(options);
  app.synth();
  return fs.readdirSync(options.outdir).filter((file) => file.endsWith('.k8s.yaml')).map((file) => path.join(options.outdir, file));
}

export function removeEarlierSynth(outdir: string): void {
  if (!fs.existsSync(outdir)) return;
  for (const file of fs.readdirSync(outdir)) {
    if (file.endsWith('.k8s.yaml')) fs.rmSync(path.join(outdir, file));
  }
}
