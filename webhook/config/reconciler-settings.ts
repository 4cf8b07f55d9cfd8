// The reconciler's settings: what the construct writes to the reconciler's ConfigMap (reconciler.json)
// and the reconciler reads at start. One type and one validator, so a bad value fails `cdk8s synth`
// naming the prop, and the reconciler refuses the same file with the same words.

import type { ConfigIssue } from './config-issues';

/** What the reconciler does about pods that miss an injection (admitted while the injector was down). */
export const MISSING_ACTIONS = ['report', 'restart'] as const;
/** `report` or `restart`: see ReconcilerSettings.missing. */
export type MissingAction = (typeof MISSING_ACTIONS)[number];

/** What it does about pods running an injection that is no longer the configured one. */
export const OUTDATED_ACTIONS = ['report', 'restart', 'in-place'] as const;
/** `report`, `restart` or `in-place`: see ReconcilerSettings.outdated. */
export type OutdatedAction = (typeof OUTDATED_ACTIONS)[number];

/** Where the injector lives, so the reconciler can read it and tell whether it can inject now. */
export type ReconcilerInjector =
  | {
      /** The webhook backend. */
      readonly backend: 'webhook';
      /** The ConfigMap holding config.json, in the reconciler's namespace. */
      readonly configMapName: string;
      /** The webhook's Service, in the reconciler's namespace: its EndpointSlices must have a ready endpoint. */
      readonly serviceName: string;
      /** The MutatingWebhookConfiguration, read by name. */
      readonly webhookConfigurationName: string;
    }
  | {
      /** The policy backend (MutatingAdmissionPolicies). */
      readonly backend: 'policy';
      /** The MutatingAdmissionPolicies and their bindings: every one must be loaded. */
      readonly policyNames: readonly string[];
      /** Their MutatingAdmissionPolicyBindings. */
      readonly bindingNames: readonly string[];
      /** With revisions: the ValidatingAdmissionPolicy for labels naming nothing served, and its bindings. */
      readonly validatingPolicyNames: readonly string[];
      /** Their ValidatingAdmissionPolicyBindings. */
      readonly validatingBindingNames: readonly string[];
    };

/** What the reconciler does and where the injector is: reconciler.json, written by the construct. */
export interface ReconcilerSettings {
  /** Pods missing an injection: `report` (Events, metrics, reports), or `restart` their workload once per config. */
  readonly missing: MissingAction;
  /** Pods running an outdated injection: `report`, `restart` their workload, or `in-place`: replace the
   * sidecar images in the running pods where only images differ (as `rollout --in-place`), restarting the rest. */
  readonly outdated: OutdatedAction;
  /** Seconds between passes over the cluster. */
  readonly intervalSeconds: number;
  /** The most workloads restarted (or pods upgraded in place) per minute, across the cluster. */
  readonly repairsPerMinute: number;
  /** Write a wgpolicyk8s.io PolicyReport per namespace where that CRD is installed. */
  readonly policyReports: boolean;
  /** Namespaces never touched or reported on (kube-system and the injector's own are always among them). */
  readonly excludedNamespaces: readonly string[];
  /** The coordination.k8s.io Lease one replica holds while it acts, in the reconciler's namespace. */
  readonly leaseName: string;
  /** How long the Lease holds without a renewal (it is renewed every third of it). */
  readonly leaseDurationSeconds: number;
  /** Where the injector lives. */
  readonly injector: ReconcilerInjector;
}

/** The reconciler's environment, set by the synthesized Deployment. */
export const RECONCILER_ENV = {
  /** The directory holding reconciler.json (the mounted ConfigMap). */
  settingsDir: 'RECONCILER_SETTINGS_DIR',
  /** The pod's name (downward API): its identity in the Lease and in Events. */
  podName: 'POD_NAME',
  /** The pod's namespace (downward API): the injector's, where the Lease is. */
  podNamespace: 'POD_NAMESPACE',
  /** The plain-HTTP port of /healthz, /readyz and /metrics. */
  opsPort: 'RECONCILER_OPS_PORT',
} as const;

/** Where the Deployment mounts reconciler.json. */
export const RECONCILER_DEFAULT_DIR = '/etc/sidecar-injector/reconciler';
/** The reconciler's ops port. */
export const RECONCILER_OPS_PORT = 8081;

/** The settings' file in the reconciler's ConfigMap. */
export const RECONCILER_SETTINGS_FILE = 'reconciler.json';

export const RECONCILER_DEFAULTS = {
  missing: 'restart' as MissingAction,
  outdated: 'report' as OutdatedAction,
  intervalSeconds: 30,
  repairsPerMinute: 4,
  policyReports: true,
  leaseDurationSeconds: 15,
} as const;

/** Bounds of the numbers: a pass at most every 5 s and at least every hour; 1 to 60 repairs a minute. */
export const RECONCILER_BOUNDS = {
  intervalSeconds: [5, 3600],
  repairsPerMinute: [1, 60],
  leaseDurationSeconds: [5, 300],
} as const;

/**
 * What the reconciler's writes carry, in one place: the reconciler writes them, and its admission fence
 * (charts/reconciler-fence.ts) lets through only writes that carry them.
 */
export const RECONCILER_WRITES = {
  /** `reportingComponent` and `source.component` of every Event it writes. */
  eventComponent: 'sidecar-injector-reconciler',
  /** The name of its PolicyReport in each namespace (and the `policy` of the results). */
  policyReportName: 'sidecar-injector',
  /** The label on every PolicyReport it writes, and the selector it lists them by. */
  policyReportLabels: { 'app.kubernetes.io/managed-by': 'sidecar-injector-reconciler' },
  /** The pod-template annotation a restart sets, as `kubectl rollout restart` does. */
  restartedAtAnnotation: 'kubectl.kubernetes.io/restartedAt',
} as const;

/** The annotation on a workload's pod template that records the config it was last restarted for. */
export function repairedForAnnotation(prefix: string): string {
  return `${prefix}/repaired-for`;
}

const isRecord = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);
const isName = (value: unknown) => typeof value === 'string' && /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/.test(value);

/** The problems with a set of reconciler settings (paths as the construct's props name them, under `reconciler`). */
export function reconcilerSettingsIssues(settings: unknown, base = 'reconciler'): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  const at = (key: string) => `${base}.${key}`;
  if (!isRecord(settings)) return [{ path: base, message: 'must be an object' }];
  const oneOf = (key: string, allowed: readonly string[]) => {
    if (!allowed.includes(settings[key] as string)) issues.push({ path: at(key), message: `must be one of ${allowed.map((value) => `'${value}'`).join(', ')}, got ${JSON.stringify(settings[key])}` });
  };
  oneOf('missing', MISSING_ACTIONS);
  oneOf('outdated', OUTDATED_ACTIONS);
  for (const [key, [low, high]] of Object.entries(RECONCILER_BOUNDS)) {
    const value = settings[key];
    if (typeof value !== 'number' || !Number.isInteger(value) || value < low || value > high) issues.push({ path: at(key), message: `must be a whole number from ${low} to ${high}, got ${JSON.stringify(value)}` });
  }
  if (typeof settings.policyReports !== 'boolean') issues.push({ path: at('policyReports'), message: `must be true or false, got ${JSON.stringify(settings.policyReports)}` });
  if (!Array.isArray(settings.excludedNamespaces) || !settings.excludedNamespaces.every(isName)) {
    issues.push({ path: at('excludedNamespaces'), message: 'must be a list of namespace names' });
  }
  if (!isName(settings.leaseName)) issues.push({ path: at('leaseName'), message: `must be a Kubernetes object name, got ${JSON.stringify(settings.leaseName)}` });
  const injector = settings.injector;
  if (!isRecord(injector)) issues.push({ path: at('injector'), message: 'must be an object' });
  else if (injector.backend === 'webhook') {
    for (const key of ['configMapName', 'serviceName', 'webhookConfigurationName']) if (!isName(injector[key])) issues.push({ path: at(`injector.${key}`), message: 'must be a Kubernetes object name' });
  } else if (injector.backend === 'policy') {
    for (const key of ['policyNames', 'bindingNames', 'validatingPolicyNames', 'validatingBindingNames']) {
      const names = injector[key];
      if (!Array.isArray(names) || !names.every(isName)) issues.push({ path: at(`injector.${key}`), message: 'must be a list of object names' });
    }
    // The config rides on the MutatingAdmissionPolicies, or on the audit ValidatingAdmissionPolicies when every injection is in audit mode.
    if (Array.isArray(injector.policyNames) && injector.policyNames.length === 0 && Array.isArray(injector.validatingPolicyNames) && injector.validatingPolicyNames.length === 0) {
      issues.push({ path: at('injector.policyNames'), message: 'must name at least one policy (with validatingPolicyNames)' });
    }
  } else issues.push({ path: at('injector.backend'), message: `must be 'webhook' or 'policy', got ${JSON.stringify(injector.backend)}` });
  return issues;
}

/** Reads reconciler.json, or throws naming every problem. */
export function parseReconcilerSettings(text: string): ReconcilerSettings {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new Error(`${RECONCILER_SETTINGS_FILE} is not JSON: ${(error as Error).message}`);
  }
  const issues = reconcilerSettingsIssues(parsed);
  if (issues.length > 0) throw new Error(`${RECONCILER_SETTINGS_FILE} is invalid:\n${issues.map((issue) => `  ${issue.path}: ${issue.message}`).join('\n')}`);
  return parsed as ReconcilerSettings;
}
