import { isIP } from 'node:net';
import type { k8s } from 'cdk8s-plus-27';
import {
  ConfigIssue,
  LOG_LEVELS,
  dns1123LabelError,
  dns1123SubdomainError,
  labelSelectorRequirementIssues,
  labelValueError,
  memoryQuantityBytes,
  qualifiedNameError,
} from '../webhook/config';
import { WebhookCertificate } from './certificates/webhook-certificate';
import type { InjectionProps, RevisionProps } from './injection-props';
import type { WebhookCertificates } from './certificates/webhook-certificates';
import type { WebhookServer } from './webhook-server';
import { AdmissionPolicyApiVersion, FailurePolicy, ImagePullPolicy, InjectorBackend, LogLevel, MissingAction, OutdatedAction, PodSecurityLevel } from './api/choices';
import type { LabelSelectorRequirementProps } from './api/trigger';
import type { MonitoringProps } from './monitoring/monitoring-props';
import { PACKAGE_VERSION } from './version';

/** The image the construct runs unless told otherwise; its tag follows this package's version. */
export const DEFAULT_WEBHOOK_IMAGE = `ghcr.io/cdk8s-sidecar-injector/webhook:${PACKAGE_VERSION}`;

/** A Kubernetes label selector: `matchLabels` and `matchExpressions` are ANDed. */
export interface LabelSelectorProps {
  /** Labels that must all be present with these values. @default none */
  readonly matchLabels?: { [key: string]: string };
  /** Requirements that must all hold. @default none */
  readonly matchExpressions?: LabelSelectorRequirementProps[];
}

/** Resource requests and limits of the webhook container, as Kubernetes quantities (`50m`, `64Mi`). */
export interface ResourceRequirementsProps {
  /** What the scheduler reserves, by resource name. @default none */
  readonly requests?: { [key: string]: string };
  /** The most the container may use, by resource name. @default none */
  readonly limits?: { [key: string]: string };
}

/** A name that points at a revision (`stable`, `canary`): promoting or rolling back is moving a tag. */
export interface RevisionTagProps {
  /** The tag's name, a DNS-1123 label of at most 40 characters that is not also a revision's name. */
  readonly name: string;
  /** The revision it points at. */
  readonly revision: string;
  /** Whether the namespaces the injector is enabled in, and that carry no `<prefix>/rev` label, get this
   * tag's revision. Exactly one tag is the default. @default false */
  readonly default?: boolean;
}

/** Props of a SidecarInjector. Every Kubernetes name comes from these, never from construct ids. */
export interface SidecarInjectorProps {
  /** Namespace the webhook runs in. @default 'sidecar-injector' */
  readonly namespace?: string;
  /** Name of the Deployment, Service, PodDisruptionBudget and NetworkPolicy; prefix of the Secret
   * (`<name>-tls`) and ConfigMap (`<name>-config`). @default 'sidecar-injector' */
  readonly name?: string;
  /** Name of the Service, which the serving certificate names. @default the `name` prop */
  readonly serviceName?: string;
  /** Name of the MutatingWebhookConfiguration (cluster-scoped). @default `<name>.<namespace>` */
  readonly webhookConfigurationName?: string;
  /** The webhook server image. @default `ghcr.io/cdk8s-sidecar-injector/webhook:<package version>` */
  readonly image?: string;
  /** When the kubelet pulls the webhook image. @default 'IfNotPresent' */
  readonly imagePullPolicy?: ImagePullPolicy;
  /** Webhook pods; two survive a node drain without failing admissions. @default 2 */
  readonly replicas?: number;
  /** Container port the server listens on (the Service always exposes 443). @default 8443 */
  readonly port?: number;
  /** Container port of the server's plain-HTTP ops endpoints, `/healthz` and `/readyz` (the kubelet's
   * probes) and `/metrics`, apart from the webhook port so that nothing done to the webhook port can
   * fail a probe. Not in the Service; reachable by the node and by `metricsSourceCidrs`. @default 8081 */
  readonly opsPort?: number;
  /** Sources allowed to reach the ops port (`/metrics`) besides the node, as CIDRs: where Prometheus
   * runs, e.g. `['10.8.0.0/16']`. The kubelet's probes come from the node, which NetworkPolicy
   * implementations allow regardless. @default none: only the node */
  readonly metricsSourceCidrs?: string[];
  /** Container resources. The memory limit (at least 128Mi) sizes the server: it holds at most
   * max(4 MiB, (limit - 96 MiB) / 4) of request bodies at once (429 past it; three quarters of that for
   * bodies over 64 KiB) and V8's heap limit is limit / 2 (NODE_OPTIONS). 192Mi gives a 24 MiB budget:
   * six 3 MiB objects at once besides any number of small reviews. Without a memory limit the budget
   * follows the node's allocatable memory and V8 keeps its default heap limit.
   * @default requests cpu 50m, memory 64Mi; limits memory 192Mi */
  readonly resources?: ResourceRequirementsProps;
  /** Sources allowed to reach the webhook port, as CIDRs (for example the control plane's addresses,
   * `['10.0.0.0/24']`): any other pod in the cluster could otherwise flood it. The kubelet's probes come
   * from the node, which NetworkPolicy implementations allow regardless.
   * @default every source (the apiserver's address differs per cluster) */
  readonly apiServerCidrs?: string[];
  /**
   * The ports the apiserver listens on (its endpoints' ports, not the `kubernetes` Service's 443 alone),
   * opened for egress when some override reads namespace defaults (`fromNamespace`), to `apiServerCidrs`
   * when given. Without such an override the webhook has no egress at all.
   * @default [443, 6443]
   */
  readonly apiServerPorts?: number[];
  /** Server log level. @default LogLevel.INFO */
  readonly logLevel?: LogLevel;
  /** Optional priority class for the webhook pods. @default none */
  readonly priorityClassName?: string;
  /** Tolerations of the webhook pods, e.g. to run them on tainted infrastructure nodes. @default none */
  readonly tolerations?: k8s.Toleration[];
  /** Node labels the webhook pods must be scheduled on. @default none */
  readonly nodeSelector?: { [key: string]: string };
  /** Affinity of the webhook pods. The pods are spread across nodes by a topology spread constraint
   * either way. @default none */
  readonly affinity?: k8s.Affinity;
  /** Names of Secrets (in the webhook's namespace) to pull the webhook image with, e.g. when it is
   * mirrored into a private registry. @default none */
  readonly imagePullSecrets?: string[];
  /** Extra annotations on the webhook pods. The `checksum/...` keys are the construct's own. @default none */
  readonly podAnnotations?: { [key: string]: string };
  /** Also make the Namespace, labelled to enforce the Pod Security "restricted" profile. Turn off when
   * the namespace is managed elsewhere (or by Argo CD's CreateNamespace). @default true */
  readonly createNamespace?: boolean;
  /** Extra labels on every object this construct makes. @default none */
  readonly labels?: { [key: string]: string };

  /** Prefix of the `inject` and `status` annotations. @default 'sidecar-injector.io' */
  readonly annotationPrefix?: string;
  /** `false` makes the webhook admit everything unchanged: a kill switch kept in the ConfigMap. @default true */
  readonly enabled?: boolean;
  /** What to inject, and when: plain Kubernetes JSON or cdk8s's `k8s.*` types, checked against the
   * Kubernetes OpenAPI schema at synth. More can be added with `addInjection()`. @default none */
  readonly injections?: InjectionProps[];
  /**
   * Revisions of the injections, served side by side: each a complete set, written and validated as
   * `injections` is. A namespace, or a pod template, chooses one with the label `<prefix>/rev` set to a
   * revision's name or a tag's; enabled namespaces without the label get the default tag's revision.
   * Promoting or rolling back is moving a tag (see docs/revisions.md). Not together with `injections`.
   * @default none: `injections` is the one set, for every enabled namespace
   */
  readonly revisions?: RevisionProps[];
  /** Names pointing at revisions (`stable`, `canary`); exactly one has `default: true`. Required with
   * `revisions`. @default none */
  readonly tags?: RevisionTagProps[];
  /** Check every injected container, volume, mount, env var and merge against the Kubernetes 1.32
   * OpenAPI schema at synth (unknown fields and wrong types fail synth). Turn off only to inject
   * fields of a Kubernetes release newer than the schema shipped with this package. @default true */
  readonly checkKubernetesSchema?: boolean;
  /**
   * The Pod Security level every injection must meet unless it sets its own `podSecurity`: what an
   * injection adds that fails it fails synth, naming the prop path. Left out, synth only warns (on
   * stderr, as a Node.js process warning) about what would fail "restricted".
   * @default none: warn about "restricted"
   */
  readonly podSecurity?: PodSecurityLevel;

  /** What the apiserver does when the webhook cannot answer. @default FailurePolicy.IGNORE */
  readonly failurePolicy?: FailurePolicy;
  /** Seconds the apiserver waits for an answer (1 to 30). @default 5 */
  readonly timeoutSeconds?: number;
  /** Namespaces whose objects are sent to the webhook. kube-system, kube-public, kube-node-lease and
   * the webhook's own namespace are excluded on top of it, always. @default matchLabels injection=enabled */
  readonly namespaceSelector?: LabelSelectorProps;
  /** Objects sent to the webhook, ANDed with the exclusion of the webhook's own pods. @default all */
  readonly objectSelector?: LabelSelectorProps;
  /**
   * Which backend applies the injections: `webhook` (the webhook's Deployment, Service, Secret,
   * ConfigMap and MutatingWebhookConfiguration), `admissionPolicy` (MutatingAdmissionPolicies and
   * bindings in the kube-apiserver, and no webhook objects at all), or `both-where-possible` (policies
   * where CEL can express the injection, the webhook for the others: every injection the config
   * accepts is expressible, so this is `admissionPolicy`). The policies use the same namespace and object selectors,
   * failurePolicy, opt-out and status annotation, so switching never injects twice.
   * @default InjectorBackend.WEBHOOK
   */
  readonly backend?: InjectorBackend;
  /**
   * The `admissionregistration.k8s.io` version of the policies: `v1` (Kubernetes 1.36+), `v1beta1`
   * (1.34, 1.35) or `v1alpha1` (1.32, 1.33); the last two need the MutatingAdmissionPolicy feature
   * gate and that version in the apiserver's runtime config.
   * @default AdmissionPolicyApiVersion.V1
   */
  readonly admissionPolicyApiVersion?: AdmissionPolicyApiVersion;

  /** Certificate material to serve with, instead of generating a new CA and certificate at every
   * synth. Checked at synth: signed by its CA, key matching, naming `<service>.<namespace>.svc`.
   * @default generated: a 10-year CA and a 1-year RSA 2048 serving certificate */
  readonly certificate?: WebhookCertificate;
  /** Where the TLS certificate comes from: `WebhookCertificates.generated({ storeDirectory })`,
   * `.fromPem(...)`, `.fromExistingSecret(...)` or `.certManager(...)`. Not together with `certificate`
   * (which is `WebhookCertificates.fromPem(certificate)`).
   * @default WebhookCertificates.generated(): a new CA and certificate at every synth */
  readonly certificates?: WebhookCertificates;
  /** What the webhook container runs: `WebhookServer.fromImage(ref)` or `WebhookServer.fromBundle()`
   * (the official Node image running the bundle the output carries). Not together with `image`.
   * @default WebhookServer.fromImage(image) */
  readonly server?: WebhookServer;
  /** Cluster DNS domain, for the certificate's fully qualified name. @default 'cluster.local' */
  readonly clusterDomain?: string;
  /** Turns on the reconciler: its own Deployment that finds pods missing (or running outdated) injections,
   * tells app teams in Events and PolicyReports, and repairs them as set here, once the injector can
   * inject. See docs/reconciler.md. @default off: no reconciler, and the webhook keeps no RBAC */
  readonly reconciler?: ReconcilerProps;
  /** Turns on monitoring: a ConfigMap holding Prometheus alerts and SLO rules made from the webhook entries,
   * policies and reconciler as synthesized (each alert with a runbook_url), a ConfigMap holding a Grafana
   * dashboard, `prometheus.io/*` scrape annotations on the pods, and with `prometheusOperator` a
   * PrometheusRule and PodMonitor. See docs/monitoring.md.
   * @default off: no rules, dashboard or scrape annotations */
  readonly monitoring?: MonitoringProps;
}

/** The reconciler, as a platform team turns it on: `reconciler: {}` repairs missing sidecars by restart. */
export interface ReconcilerProps {
  /** Pods missing an injection (admitted while the injector was down): `report` only, or `restart` their
   * Deployment, StatefulSet or DaemonSet, once per config, when the injector can inject again. @default MissingAction.RESTART */
  readonly missing?: MissingAction;
  /** Pods running an outdated injection: `report` only, `restart` their workload, or `in-place`: replace
   * the sidecar images in the running pods where only images differ, restarting the rest. @default OutdatedAction.REPORT */
  readonly outdated?: OutdatedAction;
  /** Seconds between passes over the cluster (5 to 3600). @default 30 */
  readonly intervalSeconds?: number;
  /** The most workloads restarted (or pods upgraded in place) a minute, cluster-wide (1 to 60). @default 4 */
  readonly repairsPerMinute?: number;
  /** Write a wgpolicyk8s.io PolicyReport per namespace where the CRD is installed. @default true */
  readonly policyReports?: boolean;
  /** Replicas; one acts at a time (a Lease), the other takes over within the Lease's 15 s. @default 2 */
  readonly replicas?: number;
  /** The container's resources. @default requests cpu 20m, memory 96Mi; limits memory 256Mi */
  readonly resources?: ResourceRequirementsProps;
}

/** The settings after defaults, as the construct holds them. */
export interface ResolvedSettings {
  readonly namespaceName: string;
  readonly name: string;
  readonly serviceName: string;
  readonly annotationPrefix: string;
  readonly image: string;
  readonly replicas: number;
  readonly port: number;
  readonly opsPort: number;
  readonly timeoutSeconds: number;
  readonly failurePolicy: string;
  readonly logLevel: LogLevel;
}

/** Why `value` is not an IPv4 or IPv6 CIDR, or undefined when it is one. */
function cidrError(value: unknown): string | undefined {
  const [address, bits, ...rest] = typeof value === 'string' ? value.split('/') : [];
  const version = address === undefined ? 0 : isIP(address);
  const max = version === 4 ? 32 : 128;
  if (!version || rest.length > 0 || bits === undefined || !/^\d{1,3}$/.test(bits) || Number(bits) > max) {
    return 'is not a CIDR (like "10.0.0.0/24" or "fd00::/64")';
  }
  return undefined;
}

/** Every problem with the settings (everything but the injections and the certificate). */
export function settingsIssues(props: SidecarInjectorProps, resolved: ResolvedSettings): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  const check = (path: string, error: string | undefined, value: unknown) => {
    if (error) issues.push({ path, message: `${JSON.stringify(value)} ${error}` });
  };
  check('namespace', dns1123LabelError(resolved.namespaceName), resolved.namespaceName);
  // The Deployment's name ends up in pod names and the Secret/ConfigMap get a suffix: stay a label.
  check('name', resolved.name.length > 56 ? 'must be no more than 56 characters (its -config suffix must fit)' : dns1123LabelError(resolved.name), resolved.name);
  check('serviceName', dns1123LabelError(resolved.serviceName), resolved.serviceName);
  (props.apiServerCidrs ?? []).forEach((cidr, index) => check(`apiServerCidrs[${index}]`, cidrError(cidr), cidr));
  (props.metricsSourceCidrs ?? []).forEach((cidr, index) => check(`metricsSourceCidrs[${index}]`, cidrError(cidr), cidr));
  const memoryLimit = props.resources?.limits?.memory;
  if (memoryLimit !== undefined) {
    const bytes = memoryQuantityBytes(String(memoryLimit));
    if (bytes === undefined) check('resources.limits.memory', 'is not a Kubernetes memory quantity (like "192Mi" or "1Gi")', memoryLimit);
    else if (bytes < 128 * 1024 * 1024) check('resources.limits.memory', 'must be at least 128Mi: the server itself needs about 96 MiB under load', memoryLimit);
  }
  // The derived default is valid whenever name and namespace are; only a given name is checked.
  if (props.webhookConfigurationName !== undefined) {
    check('webhookConfigurationName', dns1123SubdomainError(props.webhookConfigurationName), props.webhookConfigurationName);
  }
  check('annotationPrefix', dns1123SubdomainError(resolved.annotationPrefix), resolved.annotationPrefix);
  if (!resolved.image.trim()) issues.push({ path: 'image', message: 'must be a non-empty image reference' });
  if (props.certificate !== undefined && props.certificates !== undefined) {
    issues.push({ path: 'certificates', message: 'give either certificate or certificates, not both (certificate is WebhookCertificates.fromPem(certificate))' });
  }
  if (props.image !== undefined && props.server !== undefined) {
    issues.push({ path: 'server', message: 'give either image or server, not both (image is WebhookServer.fromImage(image))' });
  }
  if (!Number.isInteger(resolved.replicas) || resolved.replicas < 1) {
    issues.push({ path: 'replicas', message: `must be a whole number of at least 1, got ${resolved.replicas}` });
  }
  if (!Number.isInteger(resolved.port) || resolved.port < 1024 || resolved.port > 65535) {
    issues.push({ path: 'port', message: `must be a whole number from 1024 to 65535 (the server runs as non-root), got ${resolved.port}` });
  }
  if (!Number.isInteger(resolved.opsPort) || resolved.opsPort < 1024 || resolved.opsPort > 65535) {
    issues.push({ path: 'opsPort', message: `must be a whole number from 1024 to 65535 (the server runs as non-root), got ${resolved.opsPort}` });
  } else if (resolved.opsPort === resolved.port) {
    issues.push({ path: 'opsPort', message: `must differ from port (${resolved.port}): probes and metrics are served apart from the webhook` });
  }
  if (!Number.isInteger(resolved.timeoutSeconds) || resolved.timeoutSeconds < 1 || resolved.timeoutSeconds > 30) {
    issues.push({ path: 'timeoutSeconds', message: `must be a whole number from 1 to 30 (the apiserver's limit), got ${resolved.timeoutSeconds}` });
  }
  if (resolved.failurePolicy !== 'Ignore' && resolved.failurePolicy !== 'Fail') {
    issues.push({ path: 'failurePolicy', message: `must be "Ignore" or "Fail", got ${JSON.stringify(resolved.failurePolicy)}` });
  }
  if (!LOG_LEVELS.includes(resolved.logLevel)) {
    issues.push({ path: 'logLevel', message: `must be one of ${LOG_LEVELS.join(', ')}, got ${JSON.stringify(resolved.logLevel)}` });
  }
  for (const [prop, map] of [['labels', props.labels], ['namespaceSelector.matchLabels', props.namespaceSelector?.matchLabels], ['objectSelector.matchLabels', props.objectSelector?.matchLabels]] as const) {
    for (const [key, value] of Object.entries(map ?? {})) {
      check(`${prop}["${key}"]`, qualifiedNameError(key), key);
      check(`${prop}["${key}"]`, labelValueError(value), value);
    }
  }
  for (const [prop, map] of [['nodeSelector', props.nodeSelector], ['podAnnotations', props.podAnnotations]] as const) {
    for (const key of Object.keys(map ?? {})) {
      check(`${prop}["${key}"]`, qualifiedNameError(key), key);
      if (prop === 'nodeSelector') check(`${prop}["${key}"]`, labelValueError(map![key]), map![key]);
      if (prop === 'podAnnotations' && key.startsWith('checksum/')) {
        issues.push({ path: `${prop}["${key}"]`, message: 'checksum/ annotations are set by the construct, so a new config or certificate rolls the pods' });
      }
    }
  }
  (props.imagePullSecrets ?? []).forEach((name, index) => check(`imagePullSecrets[${index}]`, dns1123SubdomainError(name), name));
  for (const prop of ['namespaceSelector', 'objectSelector'] as const) {
    (props[prop]?.matchExpressions ?? []).forEach((expression, index) => {
      issues.push(...labelSelectorRequirementIssues(expression, `${prop}.matchExpressions[${index}]`));
    });
  }
  return issues;
}
