import { createHash } from 'node:crypto';
import { Lazy } from 'cdk8s';
import { k8s } from 'cdk8s-plus-27';
import { Construct } from 'constructs';
import {
  CONFIG_FILE_NAME,
  ConfigIssue,
  DEFAULT_ANNOTATION_PREFIX,
  Injection,
  InjectorConfigError,
  LOG_LEVELS,
  LogLevel,
  RUNTIME_DEFAULTS,
  RUNTIME_ENV,
  ResolvedInjectorConfig,
  TLS_FILES,
  TargetKind,
  dns1123LabelError,
  dns1123SubdomainError,
  injectorConfigIssues,
  labelSelectorRequirementIssues,
  labelValueError,
  qualifiedNameError,
  resolveInjectorConfig,
} from '../webhook/config';
import { WebhookCertificate, generateWebhookCertificate, webhookCertificateProblems } from './certificates/webhook-certificate';
import { PACKAGE_VERSION } from './version';

/** The image the construct runs unless told otherwise; its tag follows this package's version. */
export const DEFAULT_WEBHOOK_IMAGE = `ghcr.io/cdk8s-sidecar-injector/webhook:${PACKAGE_VERSION}`;

/** Namespaces the webhook never sees, whatever the namespace selector says. */
export const ALWAYS_EXCLUDED_NAMESPACES = ['kube-system', 'kube-public', 'kube-node-lease'] as const;

export interface LabelSelectorRequirementProps {
  readonly key: string;
  readonly operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist';
  readonly values?: string[];
}

export interface LabelSelectorProps {
  readonly matchLabels?: Record<string, string>;
  readonly matchExpressions?: LabelSelectorRequirementProps[];
}

export interface ResourceRequirementsProps {
  readonly requests?: Record<string, string>;
  readonly limits?: Record<string, string>;
}

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
  /** @default 'IfNotPresent' */
  readonly imagePullPolicy?: 'Always' | 'IfNotPresent' | 'Never';
  /** Webhook pods; two survive a node drain without failing admissions. @default 2 */
  readonly replicas?: number;
  /** Container port the server listens on (the Service always exposes 443). @default 8443 */
  readonly port?: number;
  /** Container resources. The limit leaves headroom over the ~110 MiB peak RSS measured under saturation
   * (BENCHMARKS.md). @default requests cpu 50m, memory 64Mi; limits memory 192Mi */
  readonly resources?: ResourceRequirementsProps;
  /** Server log level. @default 'info' */
  readonly logLevel?: LogLevel;
  /** Optional priority class for the webhook pods. @default none */
  readonly priorityClassName?: string;
  /** Also make the Namespace, labelled to enforce the Pod Security "restricted" profile. Turn off when
   * the namespace is managed elsewhere (or by Argo CD's CreateNamespace). @default true */
  readonly createNamespace?: boolean;
  /** Extra labels on every object this construct makes. @default none */
  readonly labels?: Record<string, string>;

  /** Prefix of the `inject` and `status` annotations. @default 'sidecar-injector.io' */
  readonly annotationPrefix?: string;
  /** `false` makes the webhook admit everything unchanged: a kill switch kept in the ConfigMap. @default true */
  readonly enabled?: boolean;
  /** What to inject, and when. More can be added with `addInjection()`. @default none */
  readonly injections?: Injection[];

  /** What the apiserver does when the webhook cannot answer. @default 'Ignore' */
  readonly failurePolicy?: 'Ignore' | 'Fail';
  /** Seconds the apiserver waits for an answer (1 to 30). @default 5 */
  readonly timeoutSeconds?: number;
  /** Namespaces whose objects are sent to the webhook. kube-system, kube-public, kube-node-lease and
   * the webhook's own namespace are excluded on top of it, always. @default matchLabels injection=enabled */
  readonly namespaceSelector?: LabelSelectorProps;
  /** Objects sent to the webhook, ANDed with the exclusion of the webhook's own pods. @default all */
  readonly objectSelector?: LabelSelectorProps;

  /** Certificate material to serve with, instead of generating a new CA and certificate at every
   * synth. Checked at synth: signed by its CA, key matching, naming `<service>.<namespace>.svc`.
   * @default generated: a 10-year CA and a 1-year RSA 2048 serving certificate */
  readonly certificate?: WebhookCertificate;
  /** Cluster DNS domain, for the certificate's fully qualified name. @default 'cluster.local' */
  readonly clusterDomain?: string;
}

/** An error in the props, naming the prop path and the reason. */
export class SidecarInjectorPropsError extends Error {
  constructor(readonly issues: readonly ConfigIssue[]) {
    super(`invalid SidecarInjector props:\n${issues.map((issue) => `  ${issue.path}: ${issue.message}`).join('\n')}`);
    this.name = 'SidecarInjectorPropsError';
  }
}

/** The Kubernetes resource (plural) and API group of each target kind, for the webhook's rules. */
const RESOURCE_OF_KIND: Record<TargetKind, { group: string; resource: string }> = {
  Pod: { group: '', resource: 'pods' },
  Deployment: { group: 'apps', resource: 'deployments' },
  StatefulSet: { group: 'apps', resource: 'statefulsets' },
  DaemonSet: { group: 'apps', resource: 'daemonsets' },
  ReplicaSet: { group: 'apps', resource: 'replicasets' },
  Job: { group: 'batch', resource: 'jobs' },
  CronJob: { group: 'batch', resource: 'cronjobs' },
};

const UID = 65532;
/** Seconds a terminating webhook pod keeps serving while its endpoint removal reaches every apiserver. */
const SHUTDOWN_DELAY_SECONDS = 5;
const TLS_MOUNT = RUNTIME_DEFAULTS.tlsDir;
const CONFIG_MOUNT = RUNTIME_DEFAULTS.configDir;

/**
 * A mutating admission webhook that injects sidecars, init containers, volumes and settings into the
 * pods of a cluster: its Deployment, Service, TLS Secret, ConfigMap, MutatingWebhookConfiguration,
 * PodDisruptionBudget and NetworkPolicy.
 */
export class SidecarInjector extends Construct {
  readonly namespace: string;
  readonly name: string;
  readonly serviceName: string;
  readonly secretName: string;
  readonly configMapName: string;
  readonly webhookConfigurationName: string;
  readonly image: string;
  readonly replicas: number;
  readonly port: number;
  readonly annotationPrefix: string;
  readonly enabled: boolean;
  readonly failurePolicy: 'Ignore' | 'Fail';
  readonly timeoutSeconds: number;
  readonly logLevel: LogLevel;
  readonly certificate: WebhookCertificate;
  /** Labels on the webhook's pods, also its Deployment, PDB and NetworkPolicy selector. */
  readonly selectorLabels: Record<string, string>;
  /** The label whose presence keeps an object away from this webhook (set on the webhook's own pods). */
  readonly exclusionLabel: string;

  private readonly injections: Injection[] = [];

  constructor(scope: Construct, id: string, props: SidecarInjectorProps = {}) {
    super(scope, id);
    this.namespace = props.namespace ?? 'sidecar-injector';
    this.name = props.name ?? 'sidecar-injector';
    this.serviceName = props.serviceName ?? this.name;
    this.secretName = `${this.name}-tls`;
    this.configMapName = `${this.name}-config`;
    this.webhookConfigurationName = props.webhookConfigurationName ?? `${this.name}.${this.namespace}`;
    this.image = props.image ?? DEFAULT_WEBHOOK_IMAGE;
    this.replicas = props.replicas ?? 2;
    this.port = props.port ?? RUNTIME_DEFAULTS.listenPort;
    this.annotationPrefix = props.annotationPrefix ?? DEFAULT_ANNOTATION_PREFIX;
    this.enabled = props.enabled ?? true;
    this.failurePolicy = props.failurePolicy ?? 'Ignore';
    this.timeoutSeconds = props.timeoutSeconds ?? 5;
    this.logLevel = props.logLevel ?? RUNTIME_DEFAULTS.logLevel;
    const clusterDomain = props.clusterDomain ?? 'cluster.local';
    this.selectorLabels = { 'app.kubernetes.io/name': 'sidecar-injector', 'app.kubernetes.io/instance': this.name };
    this.exclusionLabel = `${this.annotationPrefix}/webhook`;

    validateSettings(props, this);
    for (const injection of props.injections ?? []) this.addInjection(injection);

    const serviceHost = `${this.serviceName}.${this.namespace}.svc`;
    if (props.certificate) {
      const problems = webhookCertificateProblems(props.certificate, serviceHost);
      if (problems.length > 0) throw new SidecarInjectorPropsError(problems.map((message) => ({ path: 'certificate', message })));
    }
    this.certificate =
      props.certificate ?? generateWebhookCertificate({ serviceName: this.serviceName, namespace: this.namespace, clusterDomain });

    const labels = { ...props.labels, ...this.selectorLabels, 'app.kubernetes.io/version': PACKAGE_VERSION };
    const metadata = (name: string) => ({ name, namespace: this.namespace, labels });

    if (props.createNamespace ?? true) {
      new k8s.KubeNamespace(this, 'Namespace', {
        metadata: {
          name: this.namespace,
          labels: {
            ...labels,
            'pod-security.kubernetes.io/enforce': 'restricted',
            'pod-security.kubernetes.io/enforce-version': 'latest',
          },
        },
      });
    }
    new k8s.KubeConfigMap(this, 'ConfigMap', {
      metadata: metadata(this.configMapName),
      data: Lazy.any({ produce: () => ({ [CONFIG_FILE_NAME]: this.configJson() }) }),
    });
    new k8s.KubeSecret(this, 'Secret', {
      metadata: metadata(this.secretName),
      type: 'kubernetes.io/tls',
      data: {
        [TLS_FILES.certificate]: base64(this.certificate.certificate),
        [TLS_FILES.privateKey]: base64(this.certificate.privateKey),
        [TLS_FILES.caCertificate]: base64(this.certificate.caCertificate),
      },
    });
    this.synthesizeDeployment(metadata(this.name), props);
    new k8s.KubeService(this, 'Service', {
      metadata: metadata(this.serviceName),
      spec: {
        selector: this.selectorLabels,
        ports: [{ name: 'https', port: 443, targetPort: k8s.IntOrString.fromString('https'), protocol: 'TCP' }],
      },
    });
    new k8s.KubePodDisruptionBudget(this, 'PodDisruptionBudget', {
      metadata: metadata(this.name),
      spec: { maxUnavailable: k8s.IntOrString.fromNumber(1), selector: { matchLabels: this.selectorLabels } },
    });
    new k8s.KubeNetworkPolicy(this, 'NetworkPolicy', {
      metadata: metadata(this.name),
      spec: {
        podSelector: { matchLabels: this.selectorLabels },
        // The apiserver's address is not known here, so the webhook port is open to all sources;
        // nothing else is, and the webhook needs no egress at all (no Kubernetes API access, no RBAC).
        policyTypes: ['Ingress', 'Egress'],
        ingress: [{ ports: [{ protocol: 'TCP', port: k8s.IntOrString.fromNumber(this.port) }] }],
        egress: [],
      },
    });
    new k8s.KubeMutatingWebhookConfiguration(this, 'MutatingWebhookConfiguration', {
      metadata: { name: this.webhookConfigurationName, labels },
      webhooks: [
        {
          name: `inject.${serviceHost}`,
          clientConfig: {
            service: { name: this.serviceName, namespace: this.namespace, path: '/mutate', port: 443 },
            caBundle: base64(this.certificate.caCertificate),
          },
          rules: Lazy.any({ produce: () => this.synthesizeRules() }),
          namespaceSelector: this.synthesizeNamespaceSelector(props.namespaceSelector),
          objectSelector: {
            matchLabels: props.objectSelector?.matchLabels,
            matchExpressions: [
              ...(props.objectSelector?.matchExpressions ?? []),
              { key: this.exclusionLabel, operator: 'DoesNotExist' },
            ],
          },
          sideEffects: 'None',
          admissionReviewVersions: ['v1', 'v1beta1'],
          timeoutSeconds: this.timeoutSeconds,
          failurePolicy: this.failurePolicy,
          reinvocationPolicy: 'IfNeeded',
          matchPolicy: 'Equivalent',
        },
      ],
    });
  }

  /**
   * Adds an injection. Throws, naming `injections[N]...` and the reason, when it is invalid or clashes
   * with one added before (a duplicate name, or a container or volume another injection adds).
   */
  addInjection(injection: Injection): void {
    const candidate = [...this.injections, injection];
    const issues = injectorConfigIssues({ annotationPrefix: this.annotationPrefix, enabled: this.enabled, injections: candidate });
    if (issues.length > 0) throw new SidecarInjectorPropsError(issues);
    this.injections.push(injection);
  }

  /** The config as the webhook loads it: validated, defaults filled in. */
  get config(): ResolvedInjectorConfig {
    try {
      return resolveInjectorConfig({ annotationPrefix: this.annotationPrefix, enabled: this.enabled, injections: this.injections });
    } catch (error) {
      if (error instanceof InjectorConfigError) throw new SidecarInjectorPropsError(error.issues);
      throw error;
    }
  }

  /** The exact text of the ConfigMap's `config.json`. */
  configJson(): string {
    return JSON.stringify(this.config, null, 2) + '\n';
  }

  private synthesizeRules(): k8s.RuleWithOperations[] {
    const kinds = new Set<TargetKind>(this.config.injections.flatMap((injection) => injection.targetKinds));
    const rules: k8s.RuleWithOperations[] = [];
    if (kinds.has('Pod')) {
      // Pods cannot change their containers after creation: CREATE only.
      rules.push({ apiGroups: [''], apiVersions: ['v1'], resources: ['pods'], operations: ['CREATE'], scope: 'Namespaced' });
    }
    for (const group of ['apps', 'batch']) {
      const resources = [...kinds].filter((kind) => kind !== 'Pod' && RESOURCE_OF_KIND[kind].group === group).map((kind) => RESOURCE_OF_KIND[kind].resource);
      if (resources.length > 0) {
        rules.push({ apiGroups: [group], apiVersions: ['v1'], resources, operations: ['CREATE', 'UPDATE'], scope: 'Namespaced' });
      }
    }
    return rules;
  }

  private synthesizeNamespaceSelector(selector: LabelSelectorProps | undefined): k8s.LabelSelector {
    const base = selector ?? { matchLabels: { injection: 'enabled' } };
    return {
      matchLabels: base.matchLabels,
      matchExpressions: [
        ...(base.matchExpressions ?? []),
        { key: 'kubernetes.io/metadata.name', operator: 'NotIn', values: [...ALWAYS_EXCLUDED_NAMESPACES, this.namespace] },
      ],
    };
  }

  private synthesizeDeployment(metadata: k8s.ObjectMeta, props: SidecarInjectorProps): void {
    const resources = props.resources ?? { requests: { cpu: '50m', memory: '64Mi' }, limits: { memory: '192Mi' } };
    const quantities = (map: Record<string, string> | undefined) =>
      map && Object.fromEntries(Object.entries(map).map(([key, value]) => [key, k8s.Quantity.fromString(value)]));
    const probe = (path: string, periodSeconds: number): k8s.Probe => ({
      httpGet: { path, port: k8s.IntOrString.fromString('https'), scheme: 'HTTPS' },
      periodSeconds,
      timeoutSeconds: 2,
      failureThreshold: 3,
    });
    new k8s.KubeDeployment(this, 'Deployment', {
      metadata,
      spec: {
        replicas: this.replicas,
        selector: { matchLabels: this.selectorLabels },
        strategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: k8s.IntOrString.fromNumber(0), maxSurge: k8s.IntOrString.fromNumber(1) } },
        template: {
          metadata: {
            labels: { ...props.labels, ...this.selectorLabels, [this.exclusionLabel]: this.name },
            // A new config or certificate rolls the pods even where the file watch would miss it.
            annotations: Lazy.any({
              produce: () => ({
                'checksum/config': sha256(this.configJson()),
                'checksum/tls': sha256(this.certificate.caCertificate + this.certificate.certificate + this.certificate.privateKey),
              }),
            }),
          },
          spec: {
            automountServiceAccountToken: false,
            // Drain delay + in-flight timeout, with room to spare before the kubelet's SIGKILL.
            terminationGracePeriodSeconds: SHUTDOWN_DELAY_SECONDS + RUNTIME_DEFAULTS.shutdownTimeoutSeconds + 5,
            enableServiceLinks: false,
            priorityClassName: props.priorityClassName,
            securityContext: {
              runAsNonRoot: true,
              runAsUser: UID,
              runAsGroup: UID,
              fsGroup: UID,
              seccompProfile: { type: 'RuntimeDefault' },
            },
            topologySpreadConstraints: [
              {
                maxSkew: 1,
                topologyKey: 'kubernetes.io/hostname',
                whenUnsatisfiable: 'ScheduleAnyway',
                labelSelector: { matchLabels: this.selectorLabels },
              },
            ],
            containers: [
              {
                name: 'webhook',
                image: this.image,
                imagePullPolicy: props.imagePullPolicy ?? 'IfNotPresent',
                ports: [{ name: 'https', containerPort: this.port, protocol: 'TCP' }],
                env: [
                  { name: RUNTIME_ENV.listenPort, value: String(this.port) },
                  { name: RUNTIME_ENV.tlsDir, value: TLS_MOUNT },
                  { name: RUNTIME_ENV.configDir, value: CONFIG_MOUNT },
                  { name: RUNTIME_ENV.logLevel, value: this.logLevel },
                  { name: RUNTIME_ENV.shutdownTimeoutSeconds, value: String(RUNTIME_DEFAULTS.shutdownTimeoutSeconds) },
                  { name: RUNTIME_ENV.shutdownDelaySeconds, value: String(SHUTDOWN_DELAY_SECONDS) },
                ],
                resources: { requests: quantities(resources.requests), limits: quantities(resources.limits) },
                readinessProbe: probe('/readyz', 5),
                livenessProbe: probe('/healthz', 10),
                securityContext: {
                  allowPrivilegeEscalation: false,
                  readOnlyRootFilesystem: true,
                  runAsNonRoot: true,
                  capabilities: { drop: ['ALL'] },
                  seccompProfile: { type: 'RuntimeDefault' },
                },
                // Whole directories, not subPath: the kubelet updates them in place, subPath never.
                volumeMounts: [
                  { name: 'tls', mountPath: TLS_MOUNT, readOnly: true },
                  { name: 'config', mountPath: CONFIG_MOUNT, readOnly: true },
                ],
              },
            ],
            volumes: [
              { name: 'tls', secret: { secretName: this.secretName, defaultMode: 0o440 } },
              { name: 'config', configMap: { name: this.configMapName, defaultMode: 0o440 } },
            ],
          },
        },
      },
    });
  }
}

function base64(text: string): string {
  return Buffer.from(text, 'utf8').toString('base64');
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

function validateSettings(props: SidecarInjectorProps, resolved: SidecarInjector): void {
  const issues: ConfigIssue[] = [];
  const check = (path: string, error: string | undefined, value: unknown) => {
    if (error) issues.push({ path, message: `${JSON.stringify(value)} ${error}` });
  };
  check('namespace', dns1123LabelError(resolved.namespace), resolved.namespace);
  // The Deployment's name ends up in pod names and the Secret/ConfigMap get a suffix: stay a label.
  check('name', resolved.name.length > 56 ? 'must be no more than 56 characters (its -config suffix must fit)' : dns1123LabelError(resolved.name), resolved.name);
  check('serviceName', dns1123LabelError(resolved.serviceName), resolved.serviceName);
  // The derived default is valid whenever name and namespace are; only a given name is checked.
  if (props.webhookConfigurationName !== undefined) {
    check('webhookConfigurationName', dns1123SubdomainError(props.webhookConfigurationName), props.webhookConfigurationName);
  }
  check('annotationPrefix', dns1123SubdomainError(resolved.annotationPrefix), resolved.annotationPrefix);
  if (!resolved.image.trim()) issues.push({ path: 'image', message: 'must be a non-empty image reference' });
  if (!Number.isInteger(resolved.replicas) || resolved.replicas < 1) {
    issues.push({ path: 'replicas', message: `must be a whole number of at least 1, got ${resolved.replicas}` });
  }
  if (!Number.isInteger(resolved.port) || resolved.port < 1024 || resolved.port > 65535) {
    issues.push({ path: 'port', message: `must be a whole number from 1024 to 65535 (the server runs as non-root), got ${resolved.port}` });
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
  for (const prop of ['namespaceSelector', 'objectSelector'] as const) {
    (props[prop]?.matchExpressions ?? []).forEach((expression, index) => {
      issues.push(...labelSelectorRequirementIssues(expression, `${prop}.matchExpressions[${index}]`));
    });
  }
  if (issues.length > 0) throw new SidecarInjectorPropsError(issues);
}
