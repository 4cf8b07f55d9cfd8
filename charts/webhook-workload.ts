import { Lazy } from 'cdk8s';
import { k8s } from 'cdk8s-plus-27';
import { Construct } from 'constructs';
import { LogLevel, RUNTIME_DEFAULTS, RUNTIME_ENV, memoryQuantityBytes, memorySizing } from '../webhook/config';
import { ResourceRequirementsProps } from './sidecar-injector-props';
import type { WebhookServerBinding } from './webhook-server';

const UID = 65532;
/** Seconds a terminating webhook pod keeps serving while its endpoint removal reaches every apiserver. */
const SHUTDOWN_DELAY_SECONDS = 5;
const TLS_MOUNT = RUNTIME_DEFAULTS.tlsDir;
const CONFIG_MOUNT = RUNTIME_DEFAULTS.configDir;

/** What the webhook's Deployment is made from. */
export interface WebhookDeploymentSettings {
  readonly metadata: k8s.ObjectMeta;
  readonly replicas: number;
  readonly selectorLabels: Record<string, string>;
  readonly podLabels: Record<string, string>;
  /** Called at synth: checksums of the config and TLS material, so a change rolls the pods. */
  readonly podAnnotations: () => Record<string, string>;
  readonly priorityClassName: string | undefined;
  /** Where the pods may run, as given in the props. */
  readonly scheduling: Pick<k8s.PodSpec, 'tolerations' | 'nodeSelector' | 'affinity'>;
  /** Names of the Secrets to pull the image with. */
  readonly imagePullSecrets: readonly string[] | undefined;
  readonly image: string;
  readonly imagePullPolicy: 'Always' | 'IfNotPresent' | 'Never';
  readonly port: number;
  /** The plain-HTTP port of /healthz, /readyz and /metrics. */
  readonly opsPort: number;
  readonly logLevel: LogLevel;
  readonly resources: ResourceRequirementsProps | undefined;
  readonly secretName: string;
  readonly configMapName: string;
  /** What the container runs (command, env, volumes beyond the image's); `image` is its image. */
  readonly server?: WebhookServerBinding;
  /** Called at synth: the ServiceAccount whose token the pods mount, when they read the API (namespace
   * defaults for overrides); undefined: no token. */
  readonly serviceAccountName?: () => string | undefined;
}

/** The pod security context of the injector's pods (the webhook's, the reconciler's): restricted, non-root. */
export const RESTRICTED_POD_SECURITY: k8s.PodSecurityContext = { runAsNonRoot: true, runAsUser: UID, runAsGroup: UID, fsGroup: UID, seccompProfile: { type: 'RuntimeDefault' } };

/** Their containers' security context: restricted, read-only root filesystem, no capabilities. */
export const RESTRICTED_CONTAINER_SECURITY: k8s.SecurityContext = {
  allowPrivilegeEscalation: false,
  readOnlyRootFilesystem: true,
  runAsNonRoot: true,
  capabilities: { drop: ['ALL'] },
  seccompProfile: { type: 'RuntimeDefault' },
};

/** Replicas spread across nodes where they can be (a node lost takes one, not all). */
export function spreadAcrossNodes(selectorLabels: Record<string, string>): k8s.TopologySpreadConstraint[] {
  return [{ maxSkew: 1, topologyKey: 'kubernetes.io/hostname', whenUnsatisfiable: 'ScheduleAnyway', labelSelector: { matchLabels: selectorLabels } }];
}

/** A probe on the `ops` port, plain HTTP: a full webhook port (connections, slow clients) cannot fail it. */
export function opsProbe(path: string, periodSeconds: number): k8s.Probe {
  return { httpGet: { path, port: k8s.IntOrString.fromString('ops'), scheme: 'HTTP' }, periodSeconds, timeoutSeconds: 2, failureThreshold: 3 };
}

/** Resource requirements as written in the props, as Kubernetes quantities. */
export function resourceRequirements(resources: ResourceRequirementsProps): k8s.ResourceRequirements {
  const quantities = (map: Record<string, string> | undefined) => map && Object.fromEntries(Object.entries(map).map(([key, value]) => [key, k8s.Quantity.fromString(value)]));
  return { requests: quantities(resources.requests), limits: quantities(resources.limits) };
}

/** The webhook server's Deployment: restricted pod security, no service-account token, spread across nodes. */
export function webhookDeployment(scope: Construct, settings: WebhookDeploymentSettings): k8s.KubeDeployment {
  const resources = settings.resources ?? { requests: { cpu: '50m', memory: '64Mi' }, limits: { memory: '192Mi' } };
  return new k8s.KubeDeployment(scope, 'Deployment', {
    metadata: settings.metadata,
    spec: {
      replicas: settings.replicas,
      selector: { matchLabels: settings.selectorLabels },
      strategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: k8s.IntOrString.fromNumber(0), maxSurge: k8s.IntOrString.fromNumber(1) } },
      template: {
        metadata: {
          labels: settings.podLabels,
          // A new config or certificate rolls the pods even where the file watch would miss it.
          annotations: Lazy.any({ produce: settings.podAnnotations }),
        },
        spec: {
          // No token unless the webhook reads namespaces (overrides' namespace defaults): then its own
          // ServiceAccount's projected, short-lived token, for list and watch on namespaces only.
          serviceAccountName: Lazy.any({ produce: () => settings.serviceAccountName?.() }),
          automountServiceAccountToken: Lazy.any({ produce: () => settings.serviceAccountName?.() !== undefined }),
          // Drain delay + in-flight timeout, with room to spare before the kubelet's SIGKILL.
          terminationGracePeriodSeconds: SHUTDOWN_DELAY_SECONDS + RUNTIME_DEFAULTS.shutdownTimeoutSeconds + 5,
          enableServiceLinks: false,
          priorityClassName: settings.priorityClassName,
          ...settings.scheduling,
          imagePullSecrets: settings.imagePullSecrets?.map((name) => ({ name })),
          securityContext: RESTRICTED_POD_SECURITY,
          topologySpreadConstraints: spreadAcrossNodes(settings.selectorLabels),
          containers: [
            {
              name: 'webhook',
              image: settings.image,
              imagePullPolicy: settings.imagePullPolicy,
              command: settings.server?.command,
              ports: [
                { name: 'https', containerPort: settings.port, protocol: 'TCP' },
                { name: 'ops', containerPort: settings.opsPort, protocol: 'TCP' },
              ],
              env: [
                { name: RUNTIME_ENV.listenPort, value: String(settings.port) },
                { name: RUNTIME_ENV.opsPort, value: String(settings.opsPort) },
                { name: RUNTIME_ENV.tlsDir, value: TLS_MOUNT },
                { name: RUNTIME_ENV.configDir, value: CONFIG_MOUNT },
                { name: RUNTIME_ENV.logLevel, value: settings.logLevel },
                { name: RUNTIME_ENV.shutdownTimeoutSeconds, value: String(RUNTIME_DEFAULTS.shutdownTimeoutSeconds) },
                { name: RUNTIME_ENV.shutdownDelaySeconds, value: String(SHUTDOWN_DELAY_SECONDS) },
                ...memoryEnv(resources.limits?.memory),
                ...(settings.server?.env ?? []),
              ],
              resources: resourceRequirements(resources),
              readinessProbe: opsProbe('/readyz', 5),
              livenessProbe: opsProbe('/healthz', 10),
              securityContext: RESTRICTED_CONTAINER_SECURITY,
              // Whole directories, not subPath: the kubelet updates them in place, subPath never.
              volumeMounts: [
                { name: 'tls', mountPath: TLS_MOUNT, readOnly: true },
                { name: 'config', mountPath: CONFIG_MOUNT, readOnly: true },
                ...(settings.server?.volumeMounts ?? []),
              ],
            },
          ],
          volumes: [
            { name: 'tls', secret: { secretName: settings.secretName, defaultMode: 0o440 } },
            { name: 'config', configMap: { name: settings.configMapName, defaultMode: 0o440 } },
            ...(settings.server?.volumes ?? []),
          ],
        },
      },
    },
  });
}

/**
 * The memory limit as the server sizes itself from it (webhook/config/runtime-settings.ts
 * `memorySizing`): the limit itself through the downward API, so the request-body budget follows the
 * limit the pod really has, and V8's heap and young-generation limits in NODE_OPTIONS, computed here from the same limit
 * because node reads it before any code runs. Without a memory limit the downward API gives the node's
 * allocatable memory, and V8 keeps its own default heap limit.
 */
function memoryEnv(limit: string | undefined): k8s.EnvVar[] {
  const env: k8s.EnvVar[] = [
    { name: RUNTIME_ENV.memoryLimitBytes, valueFrom: { resourceFieldRef: { containerName: 'webhook', resource: 'limits.memory' } } },
  ];
  const bytes = limit === undefined ? undefined : memoryQuantityBytes(limit);
  if (bytes !== undefined) {
    const sizing = memorySizing(bytes);
    env.push({ name: 'NODE_OPTIONS', value: `--max-old-space-size=${sizing.heapLimitMiB} --max-semi-space-size=${sizing.semiSpaceMiB}` });
  }
  return env;
}

/** The Service the apiserver calls: port 443 to the pods' `https` port. */
export function webhookService(scope: Construct, metadata: k8s.ObjectMeta, selectorLabels: Record<string, string>): k8s.KubeService {
  return new k8s.KubeService(scope, 'Service', {
    metadata,
    spec: {
      selector: selectorLabels,
      ports: [{ name: 'https', port: 443, targetPort: k8s.IntOrString.fromString('https'), protocol: 'TCP' }],
    },
  });
}

/** At most one of the selected pods (the webhook's, the reconciler's) down at a time through voluntary disruptions (node drains). */
export function oneAtATimeDisruptionBudget(scope: Construct, metadata: k8s.ObjectMeta, selectorLabels: Record<string, string>): k8s.KubePodDisruptionBudget {
  return new k8s.KubePodDisruptionBudget(scope, 'PodDisruptionBudget', {
    metadata,
    spec: { maxUnavailable: k8s.IntOrString.fromNumber(1), selector: { matchLabels: selectorLabels } },
  });
}

/**
 * Ingress to the webhook port (from `sourceCidrs` when given) and to the ops port from
 * `metricsSourceCidrs` only (the node's kubelet reaches it regardless), and no egress but, when the
 * webhook reads namespaces (`apiserverEgress.needed()`), to the apiserver's ports.
 */
export function webhookNetworkPolicy(
  scope: Construct,
  metadata: k8s.ObjectMeta,
  selectorLabels: Record<string, string>,
  port: number,
  sourceCidrs?: readonly string[],
  opsPort?: number,
  metricsSourceCidrs?: readonly string[],
  apiserverEgress?: { readonly ports: readonly number[]; readonly needed: () => boolean },
): k8s.KubeNetworkPolicy {
  return new k8s.KubeNetworkPolicy(scope, 'NetworkPolicy', {
    metadata,
    spec: {
      podSelector: { matchLabels: selectorLabels },
      // Without source CIDRs (the apiserver's address is not known here) the webhook port is open to
      // all sources; nothing else is, and the webhook needs no egress at all (no Kubernetes API access,
      // no RBAC): Egress among the policy types with no egress rule denies it all. Not `egress: []`: the
      // apiserver stores no empty list, so every re-apply changed the object again (generation + 1,
      // "configured" on each `kubectl apply`, found on a real cluster).
      policyTypes: ['Ingress', 'Egress'],
      // Reading namespaces (overrides' namespace defaults) needs the apiserver: its addresses when
      // given (apiServerCidrs), on its ports. Made at synth, once the injections are known.
      egress: Lazy.any({
        produce: () =>
          apiserverEgress?.needed()
            ? [{ to: sourceCidrs?.length ? sourceCidrs.map((cidr) => ({ ipBlock: { cidr } })) : undefined, ports: apiserverEgress.ports.map((port) => ({ protocol: 'TCP', port: k8s.IntOrString.fromNumber(port) })) }]
            : undefined,
      }),
      ingress: [
        {
          from: sourceCidrs?.length ? sourceCidrs.map((cidr) => ({ ipBlock: { cidr } })) : undefined,
          ports: [{ protocol: 'TCP', port: k8s.IntOrString.fromNumber(port) }],
        },
        // The ops port is not open to every pod: a flood there could fail the probes. Traffic from the
        // node (the kubelet's probes) is allowed by every NetworkPolicy implementation regardless.
        ...(opsPort !== undefined && metricsSourceCidrs?.length
          ? [{ from: metricsSourceCidrs.map((cidr) => ({ ipBlock: { cidr } })), ports: [{ protocol: 'TCP', port: k8s.IntOrString.fromNumber(opsPort) }] }]
          : []),
      ],
    },
  });
}
