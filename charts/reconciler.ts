// The opt-in reconciler (`reconciler` prop): its own Deployment (two replicas, one acting under a
// Lease), ServiceAccount, the least RBAC its code calls (rules derived from the settings: a
// report-only reconciler can patch nothing), an admission fence on that ServiceAccount (what RBAC
// cannot say: dry runs only, these fields only), a PodDisruptionBudget and a NetworkPolicy (egress to the
// apiserver only). It runs the webhook's image (or the image-free Node image with its own bundle
// ConfigMap) with restricted pod security. The webhook keeps no RBAC and no token.

import { ApiObject, Lazy } from 'cdk8s';
import { k8s } from 'cdk8s-plus-27';
import { Construct } from 'constructs';
import {
  type ConfigIssue,
  RECONCILER_DEFAULT_DIR,
  RECONCILER_DEFAULTS,
  RECONCILER_ENV,
  RECONCILER_OPS_PORT,
  RECONCILER_SETTINGS_FILE,
  type ReconcilerInjector,
  type ReconcilerSettings,
  reconcilerSettingsIssues,
  memoryQuantityBytes,
} from '../webhook/config';
import type { ReconcilerProps } from './sidecar-injector-props';
import { type FencedSidecars, ReconcilerFence } from './reconciler-fence';
import { sha256 } from './webhook-tls';
import type { WebhookServer } from './webhook-server';
import { RESTRICTED_CONTAINER_SECURITY, RESTRICTED_POD_SECURITY, opsProbe, resourceRequirements, spreadAcrossNodes, oneAtATimeDisruptionBudget } from './webhook-workload';

/** What the SidecarInjector tells its reconciler: names, labels, where the injector lives, how to run. */
export interface ReconcilerTarget {
  /** The injector's name; the reconciler's objects are `<name>-reconciler`. */
  readonly name: string;
  /** The injector's namespace, where the reconciler runs and holds its Lease. */
  readonly namespace: string;
  /** Labels for its objects. */
  readonly labels: Record<string, string>;
  /** The label that keeps pods away from the injector (its own pods carry it). */
  readonly exclusionLabel: string;
  /** Namespaces it never judges or touches. */
  readonly excludedNamespaces: readonly string[];
  /** Called at synth: where the injector lives. */
  readonly injector: () => ReconcilerInjector;
  /** The webhook's code source: the reconciler runs from the same image, or its own bundle. */
  readonly server: WebhookServer;
  /** As the webhook's. */
  readonly imagePullPolicy: 'Always' | 'IfNotPresent' | 'Never';
  /** As the webhook's. */
  readonly imagePullSecrets?: readonly string[];
  /** The apiserver's addresses, for its egress rule; any address when not given. */
  readonly apiServerCidrs?: readonly string[];
  /** The apiserver's ports, for its egress rule. */
  readonly apiServerPorts: readonly number[];
  /** Who may scrape its metrics. */
  readonly metricsSourceCidrs?: readonly string[];
  /** Called at synth: the sidecars the injector adds, which in place the reconciler may give only their configured images. */
  readonly sidecars: () => FencedSidecars;
  /** Annotations on its pods (a plain Prometheus's scrape annotations, with `monitoring`). */
  readonly podAnnotations?: Record<string, string>;
}

/** The settings the props give, with the defaults filled in (validated by the shared validator). */
export function reconcilerSettings(props: ReconcilerProps, leaseName: string, excludedNamespaces: readonly string[], injector: ReconcilerInjector): ReconcilerSettings {
  return {
    missing: props.missing ?? RECONCILER_DEFAULTS.missing,
    outdated: props.outdated ?? RECONCILER_DEFAULTS.outdated,
    intervalSeconds: props.intervalSeconds ?? RECONCILER_DEFAULTS.intervalSeconds,
    repairsPerMinute: props.repairsPerMinute ?? RECONCILER_DEFAULTS.repairsPerMinute,
    policyReports: props.policyReports ?? RECONCILER_DEFAULTS.policyReports,
    excludedNamespaces: [...excludedNamespaces],
    leaseName,
    leaseDurationSeconds: RECONCILER_DEFAULTS.leaseDurationSeconds,
    injector,
  };
}

/** The props' problems, named under `reconciler` (the injector's names are checked by the construct). */
export function reconcilerPropsIssues(props: ReconcilerProps | undefined): ConfigIssue[] {
  if (props === undefined) return [];
  if (props === null || typeof props !== 'object' || Array.isArray(props)) return [{ path: 'reconciler', message: 'must be an object' }];
  const probe = reconcilerSettings(props, 'lease', [], { backend: 'webhook', configMapName: 'c', serviceName: 's', webhookConfigurationName: 'w' });
  const issues = reconcilerSettingsIssues(probe).filter((issue) => !issue.path.startsWith('reconciler.injector') && issue.path !== 'reconciler.leaseName');
  if (props.replicas !== undefined && (!Number.isInteger(props.replicas) || props.replicas < 1 || props.replicas > 5)) {
    issues.push({ path: 'reconciler.replicas', message: `must be a whole number from 1 to 5, got ${JSON.stringify(props.replicas)}` });
  }
  return issues;
}

/** Whether the settings let the reconciler change anything (else it only reads, and writes Events and reports). */
const repairs = (settings: ReconcilerSettings) => settings.missing !== 'report' || settings.outdated !== 'report';

/**
 * Exactly what webhook/reconciler/ calls, cluster-wide. Reading pods and namespaces, writing Events;
 * with repairs: reading and patching Deployments, StatefulSets and DaemonSets (the restart), listing
 * PodDisruptionBudgets, and a server-side dry-run create of a pod (RBAC cannot grant dry-run alone);
 * with in-place repairs: patching pods and pods/status and listing EndpointSlices; the injector's own
 * admission objects by name; and PolicyReports when written.
 */
export function reconcilerClusterRules(settings: ReconcilerSettings): k8s.PolicyRule[] {
  const rules: k8s.PolicyRule[] = [
    { apiGroups: [''], resources: ['namespaces'], verbs: ['list'] },
    { apiGroups: [''], resources: ['pods'], verbs: repairs(settings) ? ['list', 'watch', 'create', ...(settings.outdated === 'in-place' ? ['get', 'patch'] : [])] : ['list', 'watch'] },
    { apiGroups: [''], resources: ['events'], verbs: ['create'] },
  ];
  if (repairs(settings)) {
    rules.push({ apiGroups: ['apps'], resources: ['deployments', 'statefulsets', 'daemonsets'], verbs: ['get', 'patch'] });
    rules.push({ apiGroups: ['policy'], resources: ['poddisruptionbudgets'], verbs: ['list'] });
  }
  if (settings.outdated === 'in-place') {
    rules.push({ apiGroups: [''], resources: ['pods/status'], verbs: ['patch'] });
    rules.push({ apiGroups: ['discovery.k8s.io'], resources: ['endpointslices'], verbs: ['list'] });
  }
  const injector = settings.injector;
  if (injector.backend === 'webhook') {
    rules.push({ apiGroups: ['admissionregistration.k8s.io'], resources: ['mutatingwebhookconfigurations'], resourceNames: [injector.webhookConfigurationName], verbs: ['get'] });
  } else {
    rules.push({ apiGroups: ['admissionregistration.k8s.io'], resources: ['mutatingadmissionpolicies'], resourceNames: [...injector.policyNames], verbs: ['get'] });
    rules.push({ apiGroups: ['admissionregistration.k8s.io'], resources: ['mutatingadmissionpolicybindings'], resourceNames: [...injector.bindingNames], verbs: ['get'] });
    if (injector.validatingPolicyNames.length > 0) {
      rules.push({ apiGroups: ['admissionregistration.k8s.io'], resources: ['validatingadmissionpolicies'], resourceNames: [...injector.validatingPolicyNames], verbs: ['get'] });
      rules.push({ apiGroups: ['admissionregistration.k8s.io'], resources: ['validatingadmissionpolicybindings'], resourceNames: [...injector.validatingBindingNames], verbs: ['get'] });
    }
  }
  if (settings.policyReports) rules.push({ apiGroups: ['wgpolicyk8s.io'], resources: ['policyreports'], verbs: ['get', 'list', 'create', 'update'] });
  return rules;
}

/** In its own namespace: its Lease (create; get and update by name), and for the webhook backend the
 * injector's ConfigMap by name and the webhook Service's EndpointSlices (is it ready?). */
export function reconcilerNamespaceRules(settings: ReconcilerSettings): k8s.PolicyRule[] {
  const rules: k8s.PolicyRule[] = [
    // `create` cannot be limited by name (the object does not exist yet).
    { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['create'] },
    { apiGroups: ['coordination.k8s.io'], resources: ['leases'], resourceNames: [settings.leaseName], verbs: ['get', 'update'] },
  ];
  if (settings.injector.backend === 'webhook') {
    rules.push({ apiGroups: [''], resources: ['configmaps'], resourceNames: [settings.injector.configMapName], verbs: ['get'] });
    if (settings.outdated !== 'in-place') rules.push({ apiGroups: ['discovery.k8s.io'], resources: ['endpointslices'], verbs: ['list'] });
  }
  return rules;
}

/** The reconciler's objects. */
export class InjectorReconciler extends Construct {
  /** Its ServiceAccount (the token is the pod's projected, short-lived one). */
  readonly serviceAccount: k8s.KubeServiceAccount;
  /** Its cluster-wide rules: {@link reconcilerClusterRules} of its settings. */
  readonly clusterRole: k8s.KubeClusterRole;
  /** Binds the ClusterRole to the ServiceAccount. */
  readonly clusterRoleBinding: k8s.KubeClusterRoleBinding;
  /** Its rules in its own namespace: {@link reconcilerNamespaceRules} (the Lease, the injector's ConfigMap). */
  readonly role: k8s.KubeRole;
  /** Binds the Role to the ServiceAccount. */
  readonly roleBinding: k8s.KubeRoleBinding;
  /** Holds reconciler.json. */
  readonly configMap: k8s.KubeConfigMap;
  /** Its Deployment: two replicas by default, one acting under the Lease. */
  readonly deployment: k8s.KubeDeployment;
  /** At most one of its pods down at a time through voluntary disruptions. */
  readonly podDisruptionBudget: k8s.KubePodDisruptionBudget;
  /** Egress to the apiserver only; ingress to its ops port from `metricsSourceCidrs`. */
  readonly networkPolicy: k8s.KubeNetworkPolicy;
  /**
   * The admission fence on its ServiceAccount: a ValidatingAdmissionPolicy and binding that refuse every
   * write but the ones the reconciler makes (dry-run pod creates, restart annotations, sidecar images in
   * place, its Events, Lease and reports), so a leaked token can do no more than the reconciler does.
   */
  readonly fence: ReconcilerFence;
  /** The settings written to reconciler.json (made at synth: the injector's object names are known then). */
  settings(): ReconcilerSettings {
    return reconcilerSettings(this.props, this.leaseName, this.target.excludedNamespaces, this.target.injector());
  }
  private readonly leaseName: string;

  constructor(scope: Construct, id: string, private readonly props: ReconcilerProps, private readonly target: ReconcilerTarget) {
    super(scope, id);
    const name = `${target.name}-reconciler`;
    this.leaseName = name;
    const selectorLabels = { 'app.kubernetes.io/name': 'sidecar-injector-reconciler', 'sidecar-injector.io/deployment': name };
    const labels = { ...target.labels, ...selectorLabels };
    const metadata = { name, namespace: target.namespace, labels };
    const clusterName = `${target.namespace}.${name}`;
    this.serviceAccount = new k8s.KubeServiceAccount(this, 'ServiceAccount', { metadata, automountServiceAccountToken: false });
    this.clusterRole = new k8s.KubeClusterRole(this, 'ClusterRole', { metadata: { name: clusterName, labels }, rules: Lazy.any({ produce: () => reconcilerClusterRules(this.settings()) }) as any });
    this.clusterRoleBinding = new k8s.KubeClusterRoleBinding(this, 'ClusterRoleBinding', {
      metadata: { name: clusterName, labels },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: clusterName },
      subjects: [{ kind: 'ServiceAccount', name, namespace: target.namespace }],
    });
    this.role = new k8s.KubeRole(this, 'Role', { metadata, rules: Lazy.any({ produce: () => reconcilerNamespaceRules(this.settings()) }) as any });
    this.roleBinding = new k8s.KubeRoleBinding(this, 'RoleBinding', {
      metadata,
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
      subjects: [{ kind: 'ServiceAccount', name, namespace: target.namespace }],
    });
    // The reconciler reads this file with the same validator: what it would refuse at start fails synth.
    const settingsJson = () => {
      const settings = this.settings();
      const issues = reconcilerSettingsIssues(settings);
      if (issues.length > 0) throw new Error(`[${this.node.path}] ${RECONCILER_SETTINGS_FILE} would not load: ${issues.map((issue) => `${issue.path}: ${issue.message}`).join('; ')}`);
      return JSON.stringify(settings, null, 2) + '\n';
    };
    this.configMap = new k8s.KubeConfigMap(this, 'Settings', { metadata, data: { [RECONCILER_SETTINGS_FILE]: Lazy.any({ produce: settingsJson }) as unknown as string } });
    const code = target.server._bindReconciler(this, { name: target.name, namespace: target.namespace, labels });
    const resources = props.resources ?? { requests: { cpu: '20m', memory: '96Mi' }, limits: { memory: '256Mi' } };
    this.deployment = new k8s.KubeDeployment(this, 'Deployment', {
      metadata,
      spec: {
        replicas: props.replicas ?? 2,
        selector: { matchLabels: selectorLabels },
        template: {
          metadata: {
            labels: { ...labels, [target.exclusionLabel]: name },
            annotations: Lazy.any({ produce: () => ({ ...target.podAnnotations, ...code.podAnnotations, 'checksum/settings': sha256(settingsJson()) }) }),
          },
          spec: {
            serviceAccountName: name,
            // Its own ServiceAccount's projected, short-lived token: the reconciler calls the API.
            automountServiceAccountToken: true,
            enableServiceLinks: false,
            terminationGracePeriodSeconds: 30,
            imagePullSecrets: target.imagePullSecrets?.map((secret) => ({ name: secret })),
            securityContext: RESTRICTED_POD_SECURITY,
            topologySpreadConstraints: spreadAcrossNodes(selectorLabels),
            containers: [
              {
                name: 'reconciler',
                image: code.image,
                imagePullPolicy: target.imagePullPolicy,
                command: withNodeFlags(code.command, RECONCILER_NODE_FLAGS),
                ports: [{ name: 'ops', containerPort: RECONCILER_OPS_PORT, protocol: 'TCP' }],
                env: [
                  { name: RECONCILER_ENV.settingsDir, value: RECONCILER_DEFAULT_DIR },
                  { name: RECONCILER_ENV.opsPort, value: String(RECONCILER_OPS_PORT) },
                  { name: RECONCILER_ENV.podName, valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
                  { name: RECONCILER_ENV.podNamespace, valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
                  ...heapEnv(resources.limits?.memory),
                  ...code.env,
                ],
                resources: resourceRequirements(resources),
                readinessProbe: opsProbe('/readyz', 10),
                livenessProbe: opsProbe('/healthz', 20),
                securityContext: RESTRICTED_CONTAINER_SECURITY,
                volumeMounts: [{ name: 'settings', mountPath: RECONCILER_DEFAULT_DIR, readOnly: true }, ...code.volumeMounts],
              },
            ],
            volumes: [{ name: 'settings', configMap: { name, defaultMode: 0o440 } }, ...code.volumes],
          },
        },
      },
    });
    this.fence = new ReconcilerFence(this, 'Fence', {
      name: clusterName,
      labels,
      writer: { namespace: target.namespace, serviceAccountName: name },
      settings: () => this.settings(),
      sidecars: target.sidecars,
    });
    this.podDisruptionBudget = oneAtATimeDisruptionBudget(this, metadata, selectorLabels);
    this.networkPolicy = new k8s.KubeNetworkPolicy(this, 'NetworkPolicy', {
      metadata,
      spec: {
        podSelector: { matchLabels: selectorLabels },
        policyTypes: ['Ingress', 'Egress'],
        // The apiserver only (its addresses when given): the reconciler calls nothing else.
        egress: [
          {
            to: target.apiServerCidrs?.length ? target.apiServerCidrs.map((cidr) => ({ ipBlock: { cidr } })) : undefined,
            ports: target.apiServerPorts.map((port) => ({ protocol: 'TCP', port: k8s.IntOrString.fromNumber(port) })),
          },
        ],
        // Metrics from `metricsSourceCidrs` only; the kubelet's probes are allowed regardless.
        ingress: target.metricsSourceCidrs?.length
          ? [{ from: target.metricsSourceCidrs.map((cidr) => ({ ipBlock: { cidr } })), ports: [{ protocol: 'TCP', port: k8s.IntOrString.fromNumber(RECONCILER_OPS_PORT) }] }]
          : undefined,
      },
    });
  }
}

/**
 * Flags for the reconciler's node, before its script (V8's GC flags are not allowed in NODE_OPTIONS).
 * `--single-threaded-gc`: V8 collects on the main thread alone, with no helper threads marking, sweeping
 * and scavenging beside it. The reconciler asks for 20m of CPU and nothing waits on its pauses; the
 * helpers made the same work cost more CPU. Measured with `npm run bench:cluster` (docs/reconciler.md).
 */
const RECONCILER_NODE_FLAGS: readonly string[] = ['--single-threaded-gc'];

/** `command` with `flags` after its `node`; a command that does not start with node is left as it is. */
function withNodeFlags(command: string[] | undefined, flags: readonly string[]): string[] | undefined {
  return command && command[0] === 'node' ? [command[0], ...flags, ...command.slice(1)] : command;
}

/** The young generation's cap: V8's default (16 MiB semi-spaces) let a pass over 10,000 pods peak near 128 MiB of RSS; at 8 the
 * peak was 20 MiB lower for the same CPU (`npm run bench:cluster`). */
const RECONCILER_SEMI_SPACE_MIB = 8;

/**
 * V8's heap limit at 60% of the container's memory limit, so a full heap is an error in the reconciler's log, not an OOM
 * kill; and its young generation capped, which keeps a full pass's peak RSS down.
 */
function heapEnv(limit: string | undefined): k8s.EnvVar[] {
  const bytes = limit === undefined ? undefined : memoryQuantityBytes(limit);
  const semiSpace = `--max-semi-space-size=${RECONCILER_SEMI_SPACE_MIB}`;
  if (bytes === undefined) return [{ name: 'NODE_OPTIONS', value: semiSpace }];
  return [{ name: 'NODE_OPTIONS', value: `--max-old-space-size=${Math.max(64, Math.floor((bytes * 0.6) / (1024 * 1024)))} ${semiSpace}` }];
}

/** The policy backend's admission objects under `scope`, by kind: what the reconciler reads by name (not its own fence). */
export function admissionObjectNames(scope: Construct): Record<'policies' | 'bindings' | 'validatingPolicies' | 'validatingBindings', string[]> {
  const names = { policies: [] as string[], bindings: [] as string[], validatingPolicies: [] as string[], validatingBindings: [] as string[] };
  for (const child of scope.node.findAll()) {
    if (!(child instanceof ApiObject) || !child.apiVersion.startsWith('admissionregistration.k8s.io/')) continue;
    if (child.node.scopes.some((parent) => parent instanceof InjectorReconciler)) continue;
    const list =
      child.kind === 'MutatingAdmissionPolicy' ? names.policies
      : child.kind === 'MutatingAdmissionPolicyBinding' ? names.bindings
      : child.kind === 'ValidatingAdmissionPolicy' ? names.validatingPolicies
      : child.kind === 'ValidatingAdmissionPolicyBinding' ? names.validatingBindings
      : undefined;
    if (list && child.metadata.name) list.push(child.metadata.name);
  }
  return names;
}
