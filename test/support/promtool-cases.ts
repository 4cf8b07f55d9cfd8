// `promtool test rules` cases: for every alert, series that make it fire (and the labels it fires
// with) and series that must leave it quiet, on the variant of test/support/monitoring-variants.ts it
// belongs to. Scraped series carry the labels a `kubernetes-pods` job gives (namespace, pod, instance, job).

export interface InputSeries {
  readonly series: string;
  readonly values: string;
}

export interface AlertCase {
  readonly alert: string;
  /** The variant whose rules are tested (a key of MONITORING_VARIANTS). */
  readonly variant: string;
  readonly firing: { readonly input: readonly InputSeries[]; readonly at: string; readonly labels: readonly Record<string, string>[] };
  readonly quiet: { readonly input: readonly InputSeries[]; readonly at: string; readonly why: string };
}

export const ENTRY = 'inject.sidecar-injector.sidecar-injector.svc';
export const POLICY = 'sidecar-injector.sidecar-injector.pods';
export const WEBHOOK_POD = { namespace: 'sidecar-injector', pod: 'sidecar-injector-5d8f9c7b6-abcde', instance: '10.232.0.5:8081', job: 'kubernetes-pods' };
export const RECONCILER_A = { namespace: 'sidecar-injector', pod: 'sidecar-injector-reconciler-7c9d8f-fghij', instance: '10.232.0.6:8081', job: 'kubernetes-pods' };
export const RECONCILER_B = { ...RECONCILER_A, pod: 'sidecar-injector-reconciler-7c9d8f-klmno', instance: '10.232.0.7:8081' };
export const IGNORE = 'webhook, Ignore, reconciler';
export const FAIL = 'webhook, Fail, readiness gate';

export function s(name: string, labels: Record<string, string>, values: string): InputSeries {
  return { series: `${name}{${Object.entries(labels).map(([key, value]) => `${key}="${value}"`).join(', ')}}`, values };
}

/** A policy's evaluations: without an error, and failing at runtime. */
export const policyChecks = (good: string, failing: string) => [
  s('apiserver_mutating_admission_policy_check_total', { policy: POLICY, policy_binding: POLICY, error_type: 'no_error' }, good),
  s('apiserver_mutating_admission_policy_check_total', { policy: POLICY, policy_binding: POLICY, error_type: 'invalid_error' }, failing),
];

export const calls = (values: string, le: string, bucketValues: string) => [
  s('apiserver_admission_webhook_admission_duration_seconds_count', { name: ENTRY, type: 'admit', operation: 'CREATE', rejected: 'false' }, values),
  s('apiserver_admission_webhook_admission_duration_seconds_bucket', { name: ENTRY, type: 'admit', operation: 'CREATE', rejected: 'false', le }, bucketValues),
];

export const ALERT_CASES: readonly AlertCase[] = [
  {
    alert: 'SidecarInjectorWebhookFailingOpen',
    variant: IGNORE,
    firing: { input: [s('apiserver_admission_webhook_fail_open_count', { name: ENTRY, type: 'admit' }, '0x5 1+1x15')], at: '15m', labels: [{ name: ENTRY, severity: 'warning' }] },
    quiet: {
      input: [s('apiserver_admission_webhook_fail_open_count', { name: ENTRY, type: 'admit' }, '3x20'), s('apiserver_admission_webhook_fail_open_count', { name: 'other.example.com', type: 'admit' }, '0+5x20')],
      at: '15m',
      why: 'no new fail-open of ours; another webhook\'s are not ours',
    },
  },
  {
    alert: 'SidecarInjectorWebhookRefusingAdmissions',
    variant: FAIL,
    firing: {
      input: [s('apiserver_admission_webhook_rejection_count', { name: ENTRY, type: 'admit', operation: 'CREATE', error_type: 'calling_webhook_error', rejection_code: '500' }, '0+2x20')],
      at: '15m',
      labels: [{ name: ENTRY, operation: 'CREATE', severity: 'warning' }, { name: ENTRY, operation: 'CREATE', severity: 'critical' }],
    },
    quiet: {
      input: [s('apiserver_admission_webhook_rejection_count', { name: ENTRY, type: 'admit', operation: 'CREATE', error_type: 'no_error', rejection_code: '403' }, '0+2x20')],
      at: '15m',
      why: 'the webhook\'s own refusals are answers, not failed calls',
    },
  },
  {
    alert: 'SidecarInjectorWebhookSlow',
    variant: IGNORE,
    firing: { input: calls('0+100x20', '2.5', '0+90x20'), at: '15m', labels: [{ name: ENTRY, severity: 'warning' }] },
    quiet: { input: calls('0+100x20', '2.5', '0+100x20'), at: '15m', why: 'every call answered within 2.5s' },
  },
  {
    alert: 'SidecarInjectorWebhookTargetMissing',
    variant: IGNORE,
    firing: { input: [s('up', WEBHOOK_POD, '0x20'), s('up', RECONCILER_A, '1x20')], at: '15m', labels: [{ severity: 'warning' }] },
    quiet: { input: [s('up', WEBHOOK_POD, '1x20')], at: '15m', why: 'a webhook pod is up' },
  },
  {
    alert: 'SidecarInjectorConfigReloadFailing',
    variant: IGNORE,
    firing: { input: [s('sidecar_injector_config_last_reload_successful', WEBHOOK_POD, '1 1 0x18')], at: '15m', labels: [{ ...WEBHOOK_POD, severity: 'warning' }] },
    quiet: { input: [s('sidecar_injector_config_last_reload_successful', WEBHOOK_POD, '1x20')], at: '15m', why: 'the last reload succeeded' },
  },
  {
    alert: 'SidecarInjectorCertificateExpiring',
    variant: IGNORE,
    firing: { input: [s('sidecar_injector_serving_certificate_expiration_timestamp_seconds', WEBHOOK_POD, '86400x20')], at: '15m', labels: [{ ...WEBHOOK_POD, severity: 'warning' }] },
    quiet: { input: [s('sidecar_injector_serving_certificate_expiration_timestamp_seconds', WEBHOOK_POD, '31536000x20')], at: '15m', why: 'a year left' },
  },
  {
    alert: 'SidecarInjectorConnectionsClosed',
    variant: IGNORE,
    firing: {
      input: [s('sidecar_injector_connections_closed_total', { ...WEBHOOK_POD, reason: 'evicted' }, '0+3x20'), s('sidecar_injector_connections_closed_total', { ...WEBHOOK_POD, reason: 'silent' }, '0+3x20')],
      at: '15m',
      labels: [{ reason: 'evicted', severity: 'warning' }],
    },
    quiet: {
      input: [s('sidecar_injector_connections_closed_total', { ...WEBHOOK_POD, reason: 'evicted' }, '0x20'), s('sidecar_injector_connections_closed_total', { ...WEBHOOK_POD, reason: 'silent' }, '0+3x20')],
      at: '15m',
      why: 'idle connections closed after 120 s of silence are normal',
    },
  },
  {
    alert: 'SidecarInjectorReconcilerLeaseNotHeld',
    variant: IGNORE,
    firing: { input: [s('sidecar_injector_reconciler_leader', RECONCILER_A, '0x20'), s('sidecar_injector_reconciler_leader', RECONCILER_B, '0x20')], at: '15m', labels: [{ severity: 'warning' }] },
    quiet: { input: [s('sidecar_injector_reconciler_leader', RECONCILER_A, '1x20'), s('sidecar_injector_reconciler_leader', RECONCILER_B, '0x20')], at: '15m', why: 'one replica holds the Lease' },
  },
  {
    alert: 'SidecarInjectorReconcilerPassesFailing',
    variant: IGNORE,
    firing: {
      input: [s('sidecar_injector_reconciler_passes_total', { ...RECONCILER_A, result: 'failed' }, '0+1x30'), s('sidecar_injector_reconciler_passes_total', { ...RECONCILER_A, result: 'done' }, '5x30')],
      at: '25m',
      labels: [{ severity: 'warning' }],
    },
    quiet: {
      input: [s('sidecar_injector_reconciler_passes_total', { ...RECONCILER_A, result: 'failed' }, '0+1x30'), s('sidecar_injector_reconciler_passes_total', { ...RECONCILER_A, result: 'done' }, '0+1x30')],
      at: '25m',
      why: 'some passes succeed',
    },
  },
  {
    alert: 'SidecarInjectorRepairsFailing',
    variant: IGNORE,
    firing: { input: [s('sidecar_injector_reconciler_repairs_total', { ...RECONCILER_A, action: 'restart', result: 'failed' }, '0 0 0 1x17')], at: '5m', labels: [{ action: 'restart', severity: 'warning' }] },
    quiet: {
      input: [s('sidecar_injector_reconciler_repairs_total', { ...RECONCILER_A, action: 'restart', result: 'failed' }, '0x20'), s('sidecar_injector_reconciler_repairs_total', { ...RECONCILER_A, action: 'restart', result: 'done' }, '0+1x20')],
      at: '5m',
      why: 'repairs succeed',
    },
  },
  {
    alert: 'SidecarInjectorRepairsWaiting',
    variant: IGNORE,
    firing: {
      input: [s('sidecar_injector_reconciler_waiting_workloads', { ...RECONCILER_A, reason: 'disruption-budget' }, '2x80'), s('sidecar_injector_reconciler_leader', RECONCILER_A, '1x80')],
      at: '70m',
      labels: [{ reason: 'disruption-budget', severity: 'warning' }],
    },
    quiet: {
      input: [
        s('sidecar_injector_reconciler_waiting_workloads', { ...RECONCILER_A, reason: 'disruption-budget' }, '0x80'),
        s('sidecar_injector_reconciler_leader', RECONCILER_A, '1x80'),
        s('sidecar_injector_reconciler_waiting_workloads', { ...RECONCILER_B, reason: 'disruption-budget' }, '2x80'),
        s('sidecar_injector_reconciler_leader', RECONCILER_B, '0x80'),
      ],
      at: '70m',
      why: 'only a former leader still shows what it saw',
    },
  },
  {
    alert: 'SidecarInjectorPodsStale',
    variant: IGNORE,
    firing: { input: [s('sidecar_injector_reconciler_pods', { ...RECONCILER_A, state: 'stale' }, '3x80'), s('sidecar_injector_reconciler_leader', RECONCILER_A, '1x80')], at: '70m', labels: [{ severity: 'warning' }] },
    quiet: {
      input: [
        s('sidecar_injector_reconciler_pods', { ...RECONCILER_A, state: 'stale' }, '3x30 0x50'),
        s('sidecar_injector_reconciler_leader', RECONCILER_A, '1x80'),
        s('sidecar_injector_reconciler_pods', { ...RECONCILER_B, state: 'stale' }, '3x80'),
        s('sidecar_injector_reconciler_leader', RECONCILER_B, '0x80'),
      ],
      at: '70m',
      why: 'repaired after 30 minutes, and a former leader\'s count is not read',
    },
  },
  {
    alert: 'SidecarInjectorErrorBudgetBurningFast',
    variant: IGNORE,
    firing: { input: [...calls('0+100x80', '1', '0+100x80'), s('apiserver_admission_webhook_fail_open_count', { name: ENTRY, type: 'admit' }, '0+10x80')], at: '70m', labels: [{ name: ENTRY, severity: 'critical' }] },
    quiet: { input: [...calls('0+100x80', '1', '0+100x80'), s('apiserver_admission_webhook_fail_open_count', { name: ENTRY, type: 'admit' }, '0+0.5x80')], at: '70m', why: '0.5% bad burns at 5x: below 6x and 14.4x' },
  },
  {
    alert: 'SidecarInjectorErrorBudgetBurningSlowly',
    variant: IGNORE,
    firing: { input: [...calls('0+100x80', '1', '0+100x80'), s('apiserver_admission_webhook_fail_open_count', { name: ENTRY, type: 'admit' }, '0+0.5x80')], at: '70m', labels: [{ name: ENTRY, severity: 'warning' }] },
    quiet: { input: [...calls('0+100x80', '1', '0+99.95x80'), s('apiserver_admission_webhook_fail_open_count', { name: ENTRY, type: 'admit' }, '0x80')], at: '70m', why: '0.05% slow: half the budget\'s rate' },
  },
  {
    alert: 'SidecarInjectorPolicyErrors',
    variant: 'policies v1, Fail, reconciler',
    firing: {
      input: [s('apiserver_mutating_admission_policy_check_total', { policy: POLICY, policy_binding: POLICY, error_type: 'invalid_error' }, '0+1x20')],
      at: '15m',
      labels: [
        { policy: POLICY, policy_binding: POLICY, error_type: 'invalid_error', severity: 'warning' },
        { policy: POLICY, policy_binding: POLICY, error_type: 'invalid_error', severity: 'critical' },
      ],
    },
    quiet: {
      input: [
        s('apiserver_mutating_admission_policy_check_total', { policy: POLICY, policy_binding: POLICY, error_type: 'no_error' }, '0+1x20'),
        s('apiserver_mutating_admission_policy_check_total', { policy: 'someone-else', policy_binding: 'someone-else', error_type: 'invalid_error' }, '0+1x20'),
      ],
      at: '15m',
      why: 'our policies evaluate; another\'s errors are not ours',
    },
  },
  {
    alert: 'SidecarInjectorErrorBudgetBurningFast',
    variant: 'policies v1, Fail, reconciler',
    firing: { input: policyChecks('0+100x80', '0+10x80'), at: '70m', labels: [{ policy: POLICY, severity: 'critical' }] },
    quiet: { input: policyChecks('0+100x80', '0+0.5x80'), at: '70m', why: '0.5% of evaluations failing burns at 5x: below 6x and 14.4x' },
  },
  {
    alert: 'SidecarInjectorErrorBudgetBurningSlowly',
    variant: 'policies v1, Fail, reconciler',
    firing: { input: policyChecks('0+100x80', '0+0.5x80'), at: '70m', labels: [{ policy: POLICY, severity: 'warning' }] },
    quiet: { input: policyChecks('0+100x80', '0+0.05x80'), at: '70m', why: '0.05% failing: half the budget\'s rate' },
  },
  {
    alert: 'SidecarInjectorPolicyRefusingAdmissions',
    variant: 'policies v1alpha1, Fail',
    firing: {
      input: [s('apiserver_admission_controller_admission_duration_seconds_count', { name: 'MutatingAdmissionPolicy', type: 'admit', operation: 'CREATE', rejected: 'true' }, '0+1x20')],
      at: '15m',
      labels: [{ operation: 'CREATE', severity: 'warning' }, { operation: 'CREATE', severity: 'critical' }],
    },
    quiet: {
      input: [s('apiserver_admission_controller_admission_duration_seconds_count', { name: 'MutatingAdmissionPolicy', type: 'admit', operation: 'CREATE', rejected: 'false' }, '0+1x20')],
      at: '15m',
      why: 'the policies admit',
    },
  },
];
