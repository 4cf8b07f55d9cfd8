import { k8s } from 'cdk8s-plus-27';
import { Construct } from 'constructs';
import {
  DEFAULT_ANNOTATION_PREFIX,
  Injection,
  ConfigIssue,
  InjectorConfigError,
  RECONCILER_OPS_PORT,
  RUNTIME_DEFAULTS,
  ResolvedInjectorConfig,
  RevisionTag,
  injectorConfigIssues,
  injectorConfigWarnings,
  namespaceOverrideKeys,
  resolveInjectorConfig,
  revisionConfig,
  revisionConfigs,
} from '../webhook/config';
import { WebhookCertificate } from './certificates/webhook-certificate';
import { WebhookCertificates } from './certificates/webhook-certificates';
import { LabelSelector } from './admission-policy/admission-policy-types';
import { AdmissionPolicyApiVersion, FailurePolicy, InjectorBackend, LogLevel, PodSecurityLevel } from './api/choices';
import { InjectionAdmissionPolicies } from './admission-policy/injection-admission-policies';
import { appliedByPolicy, backendSettingsIssues, policyBackendIssues, resolvedInjectionsOf, webhookShareOf } from './admission-policy/injector-backend';
import { findInjectorClashes, registerInjector } from './injector-clashes';
import { InjectionProps, injectionSchemaIssues, resolveInjectionProps } from './injection-props';
import { type RoutingSelector, revisionRouting, revisionedPolicyIssues, resolveRevisionProps, revisionSchemaIssues } from './revision-props';
import { type RevisionPolicies, revisionAdmissionPolicies } from './admission-policy/revision-admission-policies';
export type { RevisionPolicies } from './admission-policy/revision-admission-policies';
import { injectorConfigMap } from './injector-config-map';
import { webhookNamespace } from './namespace';
import { NamespaceReader, namespaceReader } from './namespace-reader';
import { InjectorReconciler, admissionObjectNames, reconcilerPropsIssues } from './reconciler';
import { fencedSidecars } from './reconciler-fence';
import { InjectorMonitoring, scrapeAnnotations } from './monitoring/injector-monitoring';
import type { MonitoredInjector } from './monitoring/monitoring-rules';
import { monitoringPropsIssues } from './monitoring/monitoring-props';
import { DEFAULT_WEBHOOK_IMAGE, SidecarInjectorProps, settingsIssues } from './sidecar-injector-props';
import { SidecarInjectorPropsError } from './sidecar-injector-props-error';
import { PACKAGE_VERSION } from './version';
import { ALWAYS_EXCLUDED_NAMESPACES, OVERRIDE_CHECK_PREFIX, excludedNamespaces, injectedObjectSelector, mutatingWebhookConfiguration, namespaceSelector } from './webhook-configuration';
import { sha256 } from './webhook-tls';
import { WebhookServer } from './webhook-server';
import { webhookDeployment, webhookNetworkPolicy, oneAtATimeDisruptionBudget, webhookService } from './webhook-workload';

export {
  DEFAULT_WEBHOOK_IMAGE,
  ReconcilerProps,
  LabelSelectorProps,
  ResourceRequirementsProps,
  RevisionTagProps,
  SidecarInjectorProps,
} from './sidecar-injector-props';
export type { LabelSelectorRequirementProps } from './api/trigger';
export { SidecarInjectorPropsError } from './sidecar-injector-props-error';
export { ALWAYS_EXCLUDED_NAMESPACES } from './webhook-configuration';

/** The type of the synth warnings about Pod Security: the metadata entry and the process warning. */
export const POD_SECURITY_WARNING = 'SidecarInjectorPodSecurity';

/**
 * A mutating admission webhook that injects sidecars, init containers, volumes and settings into the
 * pods of a cluster: its Deployment, Service, TLS Secret, ConfigMap, MutatingWebhookConfiguration,
 * PodDisruptionBudget and NetworkPolicy.
 */
export class SidecarInjector extends Construct {
  /** Name of the namespace the webhook runs in. */
  readonly namespaceName: string;
  /** Name of the Deployment, PodDisruptionBudget and NetworkPolicy (the `name` prop). */
  readonly name: string;
  /** Name of the Service the apiserver calls, which the serving certificate names. */
  readonly serviceName: string;
  /** Name of the `kubernetes.io/tls` Secret the webhook serves with. */
  readonly secretName: string;
  /** Name of the ConfigMap holding `config.json`. */
  readonly configMapName: string;
  /** Name of the cluster-scoped MutatingWebhookConfiguration. */
  readonly webhookConfigurationName: string;
  /** The image the webhook container runs. */
  readonly image: string;
  /** Number of webhook pods. */
  readonly replicas: number;
  /** Container port the webhook server listens on. */
  readonly port: number;
  /** Container port of the plain-HTTP `/healthz`, `/readyz` and `/metrics`. */
  readonly opsPort: number;
  /** Prefix of the `inject` and `status` annotations and of the exclusion label. */
  readonly annotationPrefix: string;
  /** `false` when the webhook admits everything unchanged (the kill switch). */
  readonly enabled: boolean;
  /** What the apiserver does when the webhook cannot answer. */
  readonly failurePolicy: FailurePolicy;
  /** Seconds the apiserver waits for the webhook. */
  readonly timeoutSeconds: number;
  /** The webhook server's log level. */
  readonly logLevel: LogLevel;
  /** The Pod Security level injections must meet unless they set their own; undefined: only warn. */
  readonly podSecurity?: PodSecurityLevel;
  /** The TLS material, when the output holds it (generated or PEM certificates); otherwise undefined. */
  readonly certificate?: WebhookCertificate;
  /** Labels on the webhook's pods, also its Deployment, PDB and NetworkPolicy selector. */
  readonly selectorLabels: { [key: string]: string };
  /** The label whose presence keeps an object away from this webhook (set on the webhook's own pods). */
  readonly exclusionLabel: string;

  /** The Namespace, when this construct makes it (`createNamespace`, the default); otherwise undefined. */
  namespace?: k8s.KubeNamespace;
  /** The ConfigMap holding `config.json`. */
  readonly configMap!: k8s.KubeConfigMap;
  /** The `kubernetes.io/tls` Secret the webhook serves with, when the output holds it; undefined with an
   * existing Secret or cert-manager (the Secret is then made in the cluster). */
  readonly secret?: k8s.KubeSecret;
  /** The webhook server's Deployment. */
  readonly deployment!: k8s.KubeDeployment;
  /** The Service the apiserver calls. */
  readonly service!: k8s.KubeService;
  /** The PodDisruptionBudget of the webhook pods. */
  readonly podDisruptionBudget!: k8s.KubePodDisruptionBudget;
  /** The NetworkPolicy of the webhook pods. */
  readonly networkPolicy!: k8s.KubeNetworkPolicy;
  /** The cluster-scoped MutatingWebhookConfiguration. */
  readonly webhookConfiguration!: k8s.KubeMutatingWebhookConfiguration;
  /**
   * The webhook's ServiceAccount, ClusterRole (list and watch namespaces) and binding, made when some
   * override reads namespace defaults (`fromNamespace`); undefined otherwise: the webhook then has no
   * RBAC and no service-account token.
   */
  namespaceReader?: NamespaceReader;
  /** The reconciler's objects, when the `reconciler` prop is given; undefined otherwise.
   * @jsii ignore TypeScript only (`cdk8s-sidecar-injector/engine` has its type). */
  reconciler?: InjectorReconciler;
  /** The rule file, dashboard and (when asked) Prometheus Operator objects, when the `monitoring` prop is given; undefined otherwise.
   * @jsii ignore TypeScript only (`cdk8s-sidecar-injector/engine` has its type). */
  monitoring?: InjectorMonitoring;
  private readonly namespaceReaderSettings?: Parameters<typeof namespaceReader>[1];

  /** Whether injected objects are checked against the Kubernetes OpenAPI schema (`checkKubernetesSchema`). */
  readonly checkKubernetesSchema: boolean;
  /** Which backend applies the injections (`backend`). With `admissionPolicy`, none of the webhook's
   * objects above is made: those handles are then undefined. */
  readonly backend: InjectorBackend;
  /** The `admissionregistration.k8s.io` version of the policies (`admissionPolicyApiVersion`). */
  readonly admissionPolicyApiVersion: AdmissionPolicyApiVersion;
  /** The MutatingAdmissionPolicies and bindings, unless `backend` is `webhook` (or revisions are given: `revisionPolicies`).
   * @jsii ignore TypeScript only (`cdk8s-sidecar-injector/engine` has its type). */
  readonly admissionPolicies?: InjectionAdmissionPolicies;
  /** With revisions and a policy backend: each revision's policies and bindings, by revision name, and the
   * ValidatingAdmissionPolicy for labels naming nothing served.
   * @jsii ignore TypeScript only (`cdk8s-sidecar-injector/engine` has its type). */
  readonly revisionPolicies?: RevisionPolicies;

  private readonly injections: Injection[] = [];
  /** The revisions as Kubernetes JSON (`revisions`), or undefined: `injections` is then the one set. */
  private readonly revisions?: readonly { readonly name: string; readonly injections: readonly Injection[] }[];
  /** The tags pointing at revisions (`tags`). */
  private readonly tags?: readonly RevisionTag[];

  constructor(scope: Construct, id: string, props: SidecarInjectorProps = {}) {
    super(scope, id);
    this.namespaceName = props.namespace ?? 'sidecar-injector';
    this.name = props.name ?? 'sidecar-injector';
    this.serviceName = props.serviceName ?? this.name;
    this.secretName = `${this.name}-tls`;
    this.configMapName = `${this.name}-config`;
    this.webhookConfigurationName = props.webhookConfigurationName ?? `${this.name}.${this.namespaceName}`;
    this.image = props.image ?? DEFAULT_WEBHOOK_IMAGE;
    this.replicas = props.replicas ?? 2;
    this.port = props.port ?? RUNTIME_DEFAULTS.listenPort;
    this.opsPort = props.opsPort ?? RUNTIME_DEFAULTS.opsPort;
    this.annotationPrefix = props.annotationPrefix ?? DEFAULT_ANNOTATION_PREFIX;
    this.enabled = props.enabled ?? true;
    this.failurePolicy = props.failurePolicy ?? FailurePolicy.IGNORE;
    this.timeoutSeconds = props.timeoutSeconds ?? 5;
    this.logLevel = props.logLevel ?? (RUNTIME_DEFAULTS.logLevel as LogLevel);
    this.podSecurity = props.podSecurity;
    const clusterDomain = props.clusterDomain ?? 'cluster.local';
    // Not app.kubernetes.io/instance: Argo CD before 3.0 rewrites that label for its own tracking.
    this.selectorLabels = { 'app.kubernetes.io/name': 'sidecar-injector', 'sidecar-injector.io/deployment': this.name };
    this.exclusionLabel = `${this.annotationPrefix}/webhook`;

    this.checkKubernetesSchema = props.checkKubernetesSchema ?? true;
    this.backend = props.backend ?? InjectorBackend.WEBHOOK;
    this.admissionPolicyApiVersion = props.admissionPolicyApiVersion ?? AdmissionPolicyApiVersion.V1;

    // Every problem at once: the settings, every injection and clashes with other injectors in the app.
    const issues: ConfigIssue[] = [...settingsIssues(props, this), ...backendSettingsIssues(props), ...reconcilerPropsIssues(props.reconciler), ...monitoringPropsIssues(props.monitoring, this.timeoutSeconds)];
    const injections = (props.injections ?? []).map(resolveInjectionProps);
    this.revisions = resolveRevisionProps(props.revisions);
    // Keys in the config's order, whichever order a language hands a struct's fields over in.
    this.tags = Array.isArray(props.tags)
      ? props.tags.map((tag) => (tag !== null && typeof tag === 'object' ? Object.assign({ name: tag.name, revision: tag.revision, ...(tag.default === undefined ? {} : { default: tag.default }) }, tag) : tag))
      : props.tags;
    issues.push(...this.injectionIssues(injections, 0));
    if (this.revisions && this.checkKubernetesSchema) issues.push(...revisionSchemaIssues(this.revisions, new Set(issues.map((issue) => issue.path))));
    if (issues.length === 0 && this.revisions) issues.push(...revisionedPolicyIssues(this.backend, resolveInjectorConfig(this.configInput(injections))));
    else if (issues.length === 0) issues.push(...policyBackendIssues(this.backend, resolvedInjectionsOf(resolveInjectorConfig(this.configInput(injections)), injections), 0));
    issues.push(...findInjectorClashes(this, props.createNamespace ?? true));
    if (issues.length > 0) throw new SidecarInjectorPropsError(issues, this.node.path);
    this.injections.push(...injections);
    this.node.addValidation({ validate: () => this.reportPodSecurityWarnings() });

    const labels = { ...props.labels, ...this.selectorLabels, 'app.kubernetes.io/version': PACKAGE_VERSION };
    const metadata = (name: string) => ({ name, namespace: this.namespaceName, labels });
    this.namespaceReaderSettings = { name: this.name, namespace: this.namespaceName, clusterName: `${this.webhookConfigurationName}-namespace-reader`, labels };

    if (this.backend !== 'webhook' && this.revisions) {
      this.revisionPolicies = revisionAdmissionPolicies(this, {
        config: () => this.config,
        namePrefix: this.webhookConfigurationName,
        apiVersion: this.admissionPolicyApiVersion,
        failurePolicy: this.failurePolicy,
        annotationPrefix: this.annotationPrefix,
        namespaceSelector: namespaceSelector(props.namespaceSelector, this.namespaceName) as RoutingSelector,
        objectSelector: injectedObjectSelector(props.objectSelector, this.exclusionLabel),
        excluded: excludedNamespaces(this.namespaceName),
        labels,
      });
      this.addReconciler(props, labels);
      this.addMonitoring(props, labels);
      registerInjector(this, props.createNamespace ?? true);
      return;
    }
    if (this.backend !== 'webhook') {
      this.admissionPolicies = new InjectionAdmissionPolicies(this, 'AdmissionPolicies', {
        apiVersion: this.admissionPolicyApiVersion,
        namePrefix: this.webhookConfigurationName,
        config: () => this.config,
        failurePolicy: this.failurePolicy,
        namespaceSelector: namespaceSelector(props.namespaceSelector, this.namespaceName) as LabelSelector,
        objectSelector: injectedObjectSelector(props.objectSelector, this.exclusionLabel),
        labels,
      });
      this.addPolicies(injections);
    }
    // With the policy backend there is no webhook: no pods, certificate, Service or configuration.
    // `both-where-possible` is the same now: every injection the config accepts is a policy.
    if (this.backend !== 'webhook') {
      this.addReconciler(props, labels);
      this.addMonitoring(props, labels);
      registerInjector(this, props.createNamespace ?? true);
      return;
    }

    if (props.createNamespace ?? true) this.namespace = webhookNamespace(this, this.namespaceName, labels);
    this.configMap = injectorConfigMap(this, metadata(this.configMapName), () => this.configJson());
    const certificates = props.certificates ?? (props.certificate ? WebhookCertificates.fromPem(props.certificate) : WebhookCertificates.generated());
    const tls = certificates._bind(this, {
      name: this.name,
      serviceName: this.serviceName,
      namespace: this.namespaceName,
      clusterDomain,
      secretName: `${this.name}-tls`,
      labels,
      propPath: props.certificate ? 'certificate' : 'certificates',
    });
    this.certificate = tls.material;
    this.secret = tls.secret;
    this.secretName = tls.secretName;
    const server = (props.server ?? WebhookServer.fromImage(this.image))._bind(this, { name: this.name, namespace: this.namespaceName, labels });
    this.image = server.image;
    this.deployment = webhookDeployment(this, {
      metadata: metadata(this.name),
      replicas: this.replicas,
      selectorLabels: this.selectorLabels,
      podLabels: { ...props.labels, ...this.selectorLabels, [this.exclusionLabel]: this.name },
      podAnnotations: () => ({ ...(props.monitoring ? scrapeAnnotations(this.opsPort) : {}), ...props.podAnnotations, ...this.synthesizePodAnnotations(), ...server.podAnnotations, ...(tls.checksum ? { 'checksum/tls': tls.checksum } : {}) }),
      priorityClassName: props.priorityClassName,
      scheduling: { tolerations: props.tolerations, nodeSelector: props.nodeSelector, affinity: props.affinity },
      imagePullSecrets: props.imagePullSecrets,
      image: this.image,
      imagePullPolicy: props.imagePullPolicy ?? 'IfNotPresent',
      port: this.port,
      opsPort: this.opsPort,
      logLevel: this.logLevel,
      resources: props.resources,
      secretName: this.secretName,
      configMapName: this.configMapName,
      server,
      serviceAccountName: () => (this.namespaceReader ? this.name : undefined),
    });
    this.service = webhookService(this, metadata(this.serviceName), this.selectorLabels);
    this.podDisruptionBudget = oneAtATimeDisruptionBudget(this, metadata(this.name), this.selectorLabels);
    this.networkPolicy = webhookNetworkPolicy(this, metadata(this.name), this.selectorLabels, this.port, props.apiServerCidrs, this.opsPort, props.metricsSourceCidrs, {
      ports: props.apiServerPorts ?? [443, 6443],
      needed: () => this.namespaceReader !== undefined,
    });
    // Before the MutatingWebhookConfiguration, which stays the last object applied; it reads the entries at synth.
    this.addMonitoring(props, labels);
    this.webhookConfiguration = mutatingWebhookConfiguration(this, {
      name: this.webhookConfigurationName,
      labels,
      serviceName: this.serviceName,
      namespace: this.namespaceName,
      caBundle: tls.caBundle,
      annotations: tls.webhookConfigurationAnnotations,
      targetKinds: () => revisionConfigs(this.webhookConfig).flatMap((config) => config.injections.flatMap((injection) => injection.targetKinds)),
      namespaceSelector: props.namespaceSelector,
      objectSelector: props.objectSelector,
      exclusionLabel: this.exclusionLabel,
      timeoutSeconds: this.timeoutSeconds,
      failurePolicy: this.failurePolicy,
      readinessGatePrefix: () =>
        revisionConfigs(this.webhookConfig).some((config) => config.injections.some((injection) => injection.readinessGate === true)) ? this.annotationPrefix : undefined,
      revisions: () => revisionRouting(this.webhookConfig),
      servedConfig: (revision) => (revision === undefined ? this.webhookConfig : revisionConfig(this.webhookConfig, revision)),
    });
    this.addNamespaceReaderIfNeeded();
    this.addReconciler(props, labels);
    registerInjector(this, props.createNamespace ?? true);
  }

  /**
   * The reconciler, when the `reconciler` prop is given: its own Deployment, ServiceAccount and least
   * RBAC. With the policy backend it still needs a namespace to run in: made here (`createNamespace`).
   */
  private addReconciler(props: SidecarInjectorProps, labels: Record<string, string>): void {
    if (props.reconciler === undefined) return;
    if (!this.namespace && (props.createNamespace ?? true)) this.namespace = webhookNamespace(this, this.namespaceName, labels);
    this.reconciler = new InjectorReconciler(this, 'Reconciler', props.reconciler, {
      name: this.name,
      namespace: this.namespaceName,
      labels,
      exclusionLabel: this.exclusionLabel,
      excludedNamespaces: [...ALWAYS_EXCLUDED_NAMESPACES, this.namespaceName],
      injector: () => {
        if (this.backend === 'webhook') return { backend: 'webhook', configMapName: this.configMapName, serviceName: this.serviceName, webhookConfigurationName: this.webhookConfigurationName };
        const names = admissionObjectNames(this);
        return { backend: 'policy', policyNames: names.policies, bindingNames: names.bindings, validatingPolicyNames: names.validatingPolicies, validatingBindingNames: names.validatingBindings };
      },
      server: props.server ?? WebhookServer.fromImage(this.image),
      imagePullPolicy: props.imagePullPolicy ?? 'IfNotPresent',
      imagePullSecrets: props.imagePullSecrets,
      apiServerCidrs: props.apiServerCidrs,
      apiServerPorts: props.apiServerPorts ?? [443, 6443],
      metricsSourceCidrs: props.metricsSourceCidrs,
      sidecars: () => fencedSidecars(this.config),
      podAnnotations: props.monitoring ? scrapeAnnotations(RECONCILER_OPS_PORT) : undefined,
    });
  }

  /** The rule file and dashboard (and the Operator's objects when asked), when the `monitoring` prop is given. */
  private addMonitoring(props: SidecarInjectorProps, labels: Record<string, string>): void {
    if (props.monitoring === undefined) return;
    if (!this.namespace && (props.createNamespace ?? true)) this.namespace = webhookNamespace(this, this.namespaceName, labels);
    this.monitoring = new InjectorMonitoring(this, 'Monitoring', props.monitoring, {
      name: this.name,
      namespace: this.namespaceName,
      labels,
      timeoutSeconds: this.timeoutSeconds,
      scrapedDeployments: [...(this.backend === 'webhook' ? [this.name] : []), ...(props.reconciler !== undefined ? [`${this.name}-reconciler`] : [])],
      injector: () => this.monitoredInjector(),
    });
  }

  /** What the monitoring is made from, at synth: the webhook entries as synthesized, the policies, the reconciler. */
  private monitoredInjector(): MonitoredInjector {
    const entries = this.webhookConfiguration?.toJson().webhooks as k8s.MutatingWebhook[] | undefined;
    return {
      namespace: this.namespaceName,
      name: this.name,
      // An entry that only warns of override values is left out: its failures cost a warning, not a sidecar.
      webhooks: entries
        ?.filter((entry) => !entry.name.startsWith(OVERRIDE_CHECK_PREFIX))
        .map((entry) => ({ name: entry.name, failurePolicy: entry.failurePolicy as 'Ignore' | 'Fail', timeoutSeconds: entry.timeoutSeconds ?? 10 })),
      policies: this.backend === 'webhook' ? undefined : { names: admissionObjectNames(this).policies, failurePolicy: this.failurePolicy, apiVersion: this.admissionPolicyApiVersion },
      reconciler: this.reconciler !== undefined,
    };
  }

  /** Makes the namespace reader once some injection the webhook applies has an override that reads namespaces. */
  private addNamespaceReaderIfNeeded(): void {
    if (this.namespaceReader || !this.namespaceReaderSettings || !this.deployment) return;
    if (namespaceOverrideKeys(this.webhookConfig).size === 0) return;
    this.namespaceReader = namespaceReader(this, this.namespaceReaderSettings);
  }

  /**
   * Adds an injection, written as plain Kubernetes JSON or with cdk8s's `k8s.*` types (resolved to
   * Kubernetes JSON now). Throws, naming `injections[N]...` and the reason, when it is invalid, does
   * not match the Kubernetes schema, or clashes with one added before (a duplicate name, or a
   * container or volume another injection adds).
   */
  addInjection(injection: InjectionProps): void {
    if (this.revisions) {
      throw new SidecarInjectorPropsError([{ path: `injections[${this.injections.length}]`, message: 'this injector has revisions: every injection belongs to one, so give it in the revision\'s injections' }], this.node.path);
    }
    const resolved = resolveInjectionProps(injection);
    const issues = this.injectionIssues([resolved], this.injections.length);
    if (issues.length === 0) {
      const config = resolveInjectorConfig(this.configInput([...this.injections, resolved]));
      issues.push(...policyBackendIssues(this.backend, resolvedInjectionsOf(config, [resolved]), this.injections.length));
    }
    if (issues.length > 0) throw new SidecarInjectorPropsError(issues, this.node.path);
    this.injections.push(resolved);
    this.addPolicies([resolved]);
    this.addNamespaceReaderIfNeeded();
  }

  /** Makes the policies of the injections the policy backend applies (none with backend `webhook`). */
  private addPolicies(injections: readonly Injection[]): void {
    if (!this.admissionPolicies) return;
    for (const injection of resolvedInjectionsOf(this.config, injections)) {
      if (appliedByPolicy(this.backend, injection)) this.admissionPolicies.addInjection(injection);
    }
  }

  /** The config the webhook loads: every injection, or with `both-where-possible` those no policy applies.
   * @jsii ignore TypeScript only: `configJson()` is its text. */
  get webhookConfig(): ResolvedInjectorConfig {
    return webhookShareOf(this.backend, this.config);
  }

  /** The problems of `added` (at index `firstIndex` onwards), checked together with the injections held. */
  private injectionIssues(added: readonly Injection[], firstIndex: number): ConfigIssue[] {
    const issues = injectorConfigIssues(this.configInput([...this.injections, ...added]));
    if (!this.checkKubernetesSchema) return issues;
    const reported = new Set(issues.map((issue) => issue.path));
    added.forEach((injection, offset) => {
      for (const issue of injectionSchemaIssues(injection, firstIndex + offset)) {
        if (!reported.has(issue.path)) issues.push(issue);
      }
    });
    return issues;
  }

  /** The config as the webhook loads it: validated, defaults filled in.
   * @jsii ignore TypeScript only: `configJson()` is the webhook's share of it as text. */
  get config(): ResolvedInjectorConfig {
    try {
      return resolveInjectorConfig(this.configInput(this.injections));
    } catch (error) {
      if (error instanceof InjectorConfigError) throw new SidecarInjectorPropsError(error.issues);
      throw error;
    }
  }

  /**
   * What synth warns about: each check of Pod Security "restricted" that what an injection adds would
   * fail, for the injections with no required level (`podSecurity`, theirs or this injector's).
   * @jsii ignore TypeScript only (its items are the engine's `ConfigIssue`). */
  podSecurityWarnings(): ConfigIssue[] {
    return injectorConfigWarnings(this.configInput(this.injections));
  }

  private configInput(injections: readonly Injection[]) {
    const input = {
      annotationPrefix: this.annotationPrefix,
      enabled: this.enabled,
      injections,
      ...(this.revisions !== undefined ? { revisions: this.revisions } : {}),
      ...(this.tags !== undefined ? { tags: this.tags } : {}),
      // A label naming nothing served follows the failure policy: under Fail no pod runs without its sidecars.
      ...(this.revisions !== undefined ? { unservedRevision: this.failurePolicy === 'Fail' ? ('refuse' as const) : ('warn' as const) } : {}),
    };
    return this.podSecurity === undefined ? input : { ...input, podSecurity: this.podSecurity };
  }

  private readonly reportedWarnings = new Set<string>();

  /**
   * Runs at synth (a construct validation). cdk8s has no warning channel of its own, so each warning is
   * recorded as construct metadata and emitted once as a Node.js process warning (stderr; silenced by
   * `--disable-warning=SidecarInjectorPodSecurity`). Never fails synth: required levels fail earlier.
   */
  private reportPodSecurityWarnings(): string[] {
    for (const warning of this.podSecurityWarnings()) {
      const text = `${warning.path}: ${warning.message}`;
      if (this.reportedWarnings.has(text)) continue;
      this.reportedWarnings.add(text);
      this.node.addMetadata(POD_SECURITY_WARNING, text);
      process.emitWarning(`[${this.node.path}] ${text}`, { type: POD_SECURITY_WARNING });
    }
    return [];
  }

  /** The exact text of the ConfigMap's `config.json`. */
  configJson(): string {
    return JSON.stringify(this.webhookConfig, null, 2) + '\n';
  }

  private synthesizePodAnnotations(): Record<string, string> {
    // Without the tags: the webhook serves every revision whatever they point at (the webhook entries
    // do the choosing), so moving a tag restarts no webhook pod.
    const { tags, ...served } = this.webhookConfig;
    return { 'checksum/config': sha256(tags === undefined ? this.configJson() : JSON.stringify(served, null, 2) + '\n') };
  }
}
