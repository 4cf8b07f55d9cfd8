// `promtool test rules` cases with the props' defaults, timed: when each alert fires and resolves on
// series shaped like real outages (a single increment, a first-ever one, a sustained outage, a recovery),
// checked at every evaluation. The untimed firing and quiet cases, and the fixtures both use, are in
// promtool-cases.ts.
import { ENTRY, FAIL, IGNORE, POLICY, RECONCILER_A, RECONCILER_B, WEBHOOK_POD, calls, policyChecks, s, type InputSeries } from './promtool-cases';

/**
 * With the props' defaults (no `for:`, window or `keep_firing_for` set), what a counter alert does on
 * series shaped like real outages, scraped and evaluated every 30 s: each expected alert fires at
 * `firesAt` and resolves at `resolvesAt` (seconds; never, when absent), and promtool checks it at
 * every evaluation from 0 to `until`, so it cannot fire earlier, flap, or resolve later.
 */
export interface TimedCase {
  readonly alert: string;
  /** The variant whose rules are tested (a key of MONITORING_VARIANTS), at its defaults. */
  readonly variant: string;
  readonly scenario: 'a single increment' | 'a first-ever increment' | 'a sustained outage' | 'a recovery' | 'pods repaired by the reconciler';
  /** Series at `step` seconds apart, scraped and evaluated at that step. */
  readonly input: readonly InputSeries[];
  /** TIMED_STEP_SECONDS unless set (the slow burn's days-long cases). */
  readonly step?: number;
  /** When the first sample shows the fault, and when the last one shows a new event (or the repair). */
  readonly faultAt: number;
  readonly repairAt?: number;
  /** Each alert expected, with its labels (its severity among them) and when it fires and resolves. */
  readonly expect: readonly { readonly labels: Readonly<Record<string, string>>; readonly firesAt: number; readonly resolvesAt?: number }[];
  readonly until: number;
}

export const TIMED_STEP_SECONDS = 30;
/** The step a timed case is scraped, evaluated and checked at. */
export const stepOf = (timedCase: TimedCase): number => timedCase.step ?? TIMED_STEP_SECONDS;
const SLOW_BURN_STEP_SECONDS = 300;
const M = 60;
/** A counter that was there at 0, went to 3 at minute 1, then nothing (one burst of three pods). */
const SINGLE = '0 0 3x40';
/** The same burst on a series that did not exist: the apiserver creates it at the count. */
const FIRST_EVER = '_ _ 3x40';
/** One event every 30 s from minute 0.5 on, to the end. */
const SUSTAINED = '0 1+1x48';
/** One event every 30 s from minute 0.5 to 4.5, then nothing. */
const RECOVERY = '0 1+1x8 9x40';

/** The four scenarios of a counter alert, `series` its counter with the labels it fires with, and the expected alerts of each. */
function counterScenarios(
  alert: string,
  variant: string,
  series: (values: string) => InputSeries[],
  expect: Record<TimedCase['scenario'] & ('a single increment' | 'a first-ever increment' | 'a sustained outage' | 'a recovery'), TimedCase['expect']>,
): TimedCase[] {
  return [
    { alert, variant, scenario: 'a single increment', input: series(SINGLE), faultAt: 1 * M, repairAt: 1 * M, expect: expect['a single increment'], until: 16 * M },
    { alert, variant, scenario: 'a first-ever increment', input: series(FIRST_EVER), faultAt: 1 * M, repairAt: 1 * M, expect: expect['a first-ever increment'], until: 16 * M },
    { alert, variant, scenario: 'a sustained outage', input: series(SUSTAINED), faultAt: 0.5 * M, expect: expect['a sustained outage'], until: 20 * M },
    { alert, variant, scenario: 'a recovery', input: series(RECOVERY), faultAt: 0.5 * M, repairAt: 4.5 * M, expect: expect['a recovery'], until: 20 * M },
  ];
}

/**
 * A warning that fires on one event, and resolves 5 m (the window) plus 5 m (keep_firing_for) after
 * the last event is out of the window. Prometheus 2's ranges include their first instant, so the last
 * event's window ends with the sample after it (Prometheus 3's end 30 s sooner).
 */
const onEvent = (labels: Record<string, string>) => ({
  'a single increment': [{ labels, firesAt: 1 * M, resolvesAt: 11 * M }],
  'a first-ever increment': [{ labels, firesAt: 1 * M, resolvesAt: 11 * M }],
  'a sustained outage': [{ labels, firesAt: 0.5 * M }],
  'a recovery': [{ labels, firesAt: 0.5 * M, resolvesAt: 14.5 * M }],
});

/** Under Fail: the warning on one event, and the page after 2 m of refusals, resolving 2 m (its window) plus 5 m after the last. */
const refusals = (labels: Record<string, string>) => {
  const warning = onEvent({ ...labels, severity: 'warning' });
  const critical = { ...labels, severity: 'critical' };
  return {
    'a single increment': warning['a single increment'],
    'a first-ever increment': warning['a first-ever increment'],
    'a sustained outage': [...warning['a sustained outage'], { labels: critical, firesAt: 2.5 * M }],
    'a recovery': [...warning['a recovery'], { labels: critical, firesAt: 2.5 * M, resolvesAt: 11.5 * M }],
  };
};

/**
 * A state alert's two scenarios: `bad` from minute 1 on (a sustained outage), and from minute 1 to 11
 * then `good` again (a recovery); `series` makes the input from the values.
 */
function stateScenarios(
  alert: string,
  variant: string,
  series: (values: string) => InputSeries[],
  [good, bad]: [string, string],
  labels: Record<string, string>,
  [firesAt, resolvesAt]: [number, number],
  hours = 0,
): TimedCase[] {
  // For the alerts of staleAfter (1h), the repair comes an hour later, and the case runs an hour longer.
  const repairAt = (11.5 + hours * 60) * M;
  const steps = (seconds: number) => seconds / TIMED_STEP_SECONDS;
  const until = (20 + hours * 60) * M;
  return [
    { alert, variant, scenario: 'a sustained outage', input: series(`${good} ${good} ${bad}x${steps(until) - 2}`), faultAt: 1 * M, expect: [{ labels, firesAt }], until },
    {
      alert,
      variant,
      scenario: 'a recovery',
      input: series(`${good} ${good} ${bad}x${steps(repairAt) - 3} ${good}x${steps(until - repairAt)}`),
      faultAt: 1 * M,
      repairAt,
      expect: [{ labels, firesAt, resolvesAt }],
      until,
    },
  ];
}

export const TIMED_CASES: readonly TimedCase[] = [
  ...counterScenarios('SidecarInjectorWebhookFailingOpen', 'webhook, Ignore', (values) => [s('apiserver_admission_webhook_fail_open_count', { name: ENTRY, type: 'admit' }, values)], onEvent({ name: ENTRY, severity: 'warning' })),
  ...counterScenarios(
    'SidecarInjectorWebhookFailingOpen',
    IGNORE,
    (values) => [s('apiserver_admission_webhook_fail_open_count', { name: ENTRY, type: 'admit' }, values), s('sidecar_injector_reconciler_leader', RECONCILER_A, '1x48')],
    onEvent({ name: ENTRY, severity: 'warning' }),
  ),
  {
    alert: 'SidecarInjectorWebhookFailingOpen',
    variant: IGNORE,
    scenario: 'pods repaired by the reconciler',
    input: [
      s('apiserver_admission_webhook_fail_open_count', { name: ENTRY, type: 'admit' }, FIRST_EVER),
      // Its next pass counts the three pods admitted bare; a restart repairs them at minute 12.
      s('sidecar_injector_reconciler_pods_missing_injection', RECONCILER_A, '0 0 0 3x20 0x30'),
      s('sidecar_injector_reconciler_leader', RECONCILER_A, '1x54'),
      s('sidecar_injector_reconciler_pods_missing_injection', RECONCILER_B, '5x54'),
      s('sidecar_injector_reconciler_leader', RECONCILER_B, '0x54'),
    ],
    faultAt: 1 * M,
    repairAt: 12 * M,
    expect: [{ labels: { name: ENTRY, severity: 'warning' }, firesAt: 1 * M, resolvesAt: 17 * M }],
    until: 26 * M,
  },
  ...counterScenarios(
    'SidecarInjectorWebhookRefusingAdmissions',
    FAIL,
    (values) => [s('apiserver_admission_webhook_rejection_count', { name: ENTRY, type: 'admit', operation: 'CREATE', error_type: 'calling_webhook_error', rejection_code: '500' }, values)],
    refusals({ name: ENTRY, operation: 'CREATE' }),
  ),
  ...counterScenarios('SidecarInjectorConnectionsClosed', 'webhook, Ignore', (values) => [s('sidecar_injector_connections_closed_total', { ...WEBHOOK_POD, reason: 'evicted' }, values)], onEvent({ reason: 'evicted', severity: 'warning' })),
  ...counterScenarios(
    'SidecarInjectorRepairsFailing',
    IGNORE,
    (values) => [s('sidecar_injector_reconciler_repairs_total', { ...RECONCILER_A, action: 'restart', result: 'failed' }, values)],
    onEvent({ action: 'restart', severity: 'warning' }),
  ),
  ...counterScenarios(
    'SidecarInjectorPolicyErrors',
    'policies v1beta1, Ignore',
    (values) => [s('apiserver_mutating_admission_policy_check_total', { policy: POLICY, policy_binding: POLICY, error_type: 'invalid_error' }, values)],
    onEvent({ policy: POLICY, policy_binding: POLICY, error_type: 'invalid_error', severity: 'warning' }),
  ),
  ...counterScenarios(
    'SidecarInjectorPolicyErrors',
    'policies v1, Fail, reconciler',
    (values) => [s('apiserver_mutating_admission_policy_check_total', { policy: POLICY, policy_binding: POLICY, error_type: 'invalid_error' }, values)],
    refusals({ policy: POLICY, policy_binding: POLICY, error_type: 'invalid_error' }),
  ),
  ...counterScenarios(
    'SidecarInjectorPolicyRefusingAdmissions',
    'policies v1alpha1, Fail',
    (values) => [s('apiserver_admission_controller_admission_duration_seconds_count', { name: 'MutatingAdmissionPolicy', type: 'admit', operation: 'CREATE', rejected: 'true' }, values)],
    refusals({ operation: 'CREATE' }),
  ),
  ...stateScenarios('SidecarInjectorWebhookTargetMissing', 'webhook, Ignore', (values) => [s('up', WEBHOOK_POD, values)], ['1', '0'], { severity: 'warning' }, [6 * M, 11.5 * M]),
  ...stateScenarios('SidecarInjectorWebhookTargetMissing', FAIL, (values) => [s('up', WEBHOOK_POD, values)], ['1', '0'], { severity: 'critical' }, [6 * M, 11.5 * M]),
  ...stateScenarios(
    'SidecarInjectorConfigReloadFailing',
    'webhook, Ignore',
    (values) => [s('sidecar_injector_config_last_reload_successful', WEBHOOK_POD, values)],
    ['1', '0'],
    { ...WEBHOOK_POD, severity: 'warning' },
    [6 * M, 11.5 * M],
  ),
  ...stateScenarios(
    'SidecarInjectorCertificateExpiring',
    'webhook, Ignore',
    (values) => [s('sidecar_injector_serving_certificate_expiration_timestamp_seconds', WEBHOOK_POD, values)],
    ['31536000', '86400'],
    { ...WEBHOOK_POD, severity: 'warning' },
    [6 * M, 11.5 * M],
  ),
  // 10% of calls slower than 2.5 s; the share over the 5-minute window falls below 1% 4 minutes after.
  ...stateScenarios('SidecarInjectorWebhookSlow', 'webhook, Ignore', (values) => calls(countEvery30s(values), '2.5', fastEvery30s(values)), ['100', '90'], { name: ENTRY, severity: 'warning' }, [6 * M, 15.5 * M]),
  ...stateScenarios('SidecarInjectorReconcilerLeaseNotHeld', IGNORE, (values) => [s('sidecar_injector_reconciler_leader', RECONCILER_A, values)], ['1', '0'], { severity: 'warning' }, [6 * M, 11.5 * M]),
  // Every pass fails (one a step), none succeeds; in the recovery passes succeed again (the first passes, before the fault, are 15 minutes back).
  ...stateScenarios(
    'SidecarInjectorReconcilerPassesFailing',
    IGNORE,
    (values) => [s('sidecar_injector_reconciler_passes_total', { ...RECONCILER_A, result: 'failed' }, cumulative(values, 'fail')), s('sidecar_injector_reconciler_passes_total', { ...RECONCILER_A, result: 'done' }, cumulative(values, 'done'))],
    ['done', 'fail'],
    { severity: 'warning' },
    [6 * M, 11.5 * M],
  ),
  ...stateScenarios(
    'SidecarInjectorRepairsWaiting',
    IGNORE,
    (values) => [s('sidecar_injector_reconciler_waiting_workloads', { ...RECONCILER_A, reason: 'disruption-budget' }, values), s('sidecar_injector_reconciler_leader', RECONCILER_A, `1x${values.split(' ').reduce((n, step) => n + stepCount(step), -1)}`)],
    ['0', '2'],
    { reason: 'disruption-budget', severity: 'warning' },
    [61 * M, 71.5 * M],
    1,
  ),
  ...stateScenarios(
    'SidecarInjectorPodsStale',
    IGNORE,
    (values) => [s('sidecar_injector_reconciler_pods', { ...RECONCILER_A, state: 'stale' }, values), s('sidecar_injector_reconciler_leader', RECONCILER_A, `1x${values.split(' ').reduce((n, step) => n + stepCount(step), -1)}`)],
    ['0', '3'],
    { severity: 'warning' },
    [61 * M, 71.5 * M],
    1,
  ),
  // A healthy hour, then 10% of admissions failing open from minute 60.5 (to 70.5 in the recovery): the 1h
  // window crosses 14.4x the budget 3.5 minutes in; the 30m window keeps the 6x pair above its bound for 28.5 after.
  {
    alert: 'SidecarInjectorErrorBudgetBurningFast',
    variant: 'webhook, Ignore',
    scenario: 'a sustained outage',
    input: [...calls('0+100x240', '1', '0+100x240'), s('apiserver_admission_webhook_fail_open_count', { name: ENTRY, type: 'admit' }, '0x120 10+10x119')],
    faultAt: 60.5 * M,
    expect: [{ labels: { name: ENTRY, severity: 'critical' }, firesAt: 64 * M }],
    until: 110 * M,
  },
  {
    alert: 'SidecarInjectorErrorBudgetBurningFast',
    variant: 'webhook, Ignore',
    scenario: 'a recovery',
    input: [...calls('0+100x240', '1', '0+100x240'), s('apiserver_admission_webhook_fail_open_count', { name: ENTRY, type: 'admit' }, '0x120 10+10x20 210x98')],
    faultAt: 60.5 * M,
    repairAt: 70.5 * M,
    expect: [{ labels: { name: ENTRY, severity: 'critical' }, firesAt: 64 * M, resolvesAt: 99 * M }],
    until: 110 * M,
  },
  // The policies' SLO: the same hour of health, then 10 of every 110 evaluations failing.
  {
    alert: 'SidecarInjectorErrorBudgetBurningFast',
    variant: 'policies v1beta1, Ignore',
    scenario: 'a sustained outage',
    input: policyChecks('0+100x240', '0x120 10+10x119'),
    faultAt: 60.5 * M,
    expect: [{ labels: { policy: POLICY, severity: 'critical' }, firesAt: 64 * M }],
    until: 110 * M,
  },
  {
    alert: 'SidecarInjectorErrorBudgetBurningFast',
    variant: 'policies v1beta1, Ignore',
    scenario: 'a recovery',
    input: policyChecks('0+100x240', '0x120 10+10x20 210x98'),
    faultAt: 60.5 * M,
    repairAt: 70.5 * M,
    expect: [{ labels: { policy: POLICY, severity: 'critical' }, firesAt: 64 * M, resolvesAt: 99 * M }],
    until: 110 * M,
  },
  ...slowBurn('webhook, Ignore', ({ all, failing }) => [...calls(all, '1', all), s('apiserver_admission_webhook_fail_open_count', { name: ENTRY, type: 'admit' }, failing)], { name: ENTRY, severity: 'warning' }),
  ...slowBurn('policies v1beta1, Ignore', ({ good, failing }) => policyChecks(good, failing), { policy: POLICY, severity: 'warning' }),
];

/**
 * The slow burn: three healthy days (the longest window, 3d, full of them), then one admission in 200
 * failing (0.5%: over the 3x and 1x bounds, 0.3% and 0.1%, and under the fast burn's 6x, 0.6%).
 * Both long windows cross their bound about 14.4 h in (the 1d one at 0.5% x t / 24 h = 0.3%, the 3d one at
 * 0.5% x t / 72 h = 0.1%). In the recovery the burn stops after 20 h; the 2h pair drops about 48 m later,
 * the 6h one (its 3d window still over 0.1%) about 4.8 h later.
 * `series` makes the input from the values of all calls, the good ones and the failures.
 *
 * Scraped and evaluated every 5 minutes, not 30 s: four days at 30 s take promtool six minutes, and the
 * windows (2h to 3d) hold 24 to 864 samples at 5 m, so the times are the same to within a step.
 */
function slowBurn(variant: string, series: (values: { all: string; good: string; failing: string }) => InputSeries[], labels: Record<string, string>): TimedCase[] {
  const H = 60 * M;
  const step = SLOW_BURN_STEP_SECONDS;
  const steps = (seconds: number) => seconds / step;
  const healthy = steps(72 * H);
  const faultAt = 72 * H + step;
  // The k-th step of the burn puts k failures in a window of n steps (n x 200 calls): over `bound` from k > bound x n x 200.
  const firstOver = (bound: number, window: number) => Math.floor(bound * steps(window) * 200) + 1;
  const pair = (bound: number, long: number, short: number) => Math.max(firstOver(bound, long), firstOver(bound, short));
  const firesAt = faultAt + (Math.min(pair(0.003, 24 * H, 2 * H), pair(0.001, 72 * H, 6 * H)) - 1) * step;
  // j steps after the burn, a window of n steps holds n - j of its failures: under the bound from j >= n - bound x n x 200.
  const lastOver = (bound: number, window: number) => Math.ceil(steps(window) - bound * steps(window) * 200);
  const burn = steps(20 * H);
  const sustainedUntil = firesAt + 2 * H;
  const recoveryUntil = faultAt + 20 * H + 6 * H;
  const burning = (until: number, stopsAfter: number) => {
    const burnt = Math.min(stopsAfter, steps(until) - healthy);
    const calmAgain = steps(until) - healthy - burnt;
    const failing = `0x${healthy} 1+1x${burnt - 1}` + (calmAgain > 0 ? ` ${burnt}x${calmAgain}` : '');
    const good = `0+200x${healthy} ${200 * healthy + 199}+199x${burnt - 1}` + (calmAgain > 0 ? ` ${200 * healthy + 199 * burnt + 200}+200x${calmAgain - 1}` : '');
    return series({ all: `0+200x${steps(until)}`, good, failing });
  };
  return [
    {
      alert: 'SidecarInjectorErrorBudgetBurningSlowly',
      variant,
      scenario: 'a sustained outage',
      input: burning(sustainedUntil, Infinity),
      faultAt,
      expect: [{ labels, firesAt }],
      until: sustainedUntil,
      step,
    },
    {
      alert: 'SidecarInjectorErrorBudgetBurningSlowly',
      variant,
      scenario: 'a recovery',
      input: burning(recoveryUntil, burn),
      faultAt,
      repairAt: faultAt + 20 * H,
      expect: [{ labels, firesAt, resolvesAt: faultAt + 20 * H + (Math.max(lastOver(0.003, 2 * H), lastOver(0.001, 6 * H)) - 1) * step }],
      until: recoveryUntil,
      step,
    },
  ];
}

/** How many samples a promtool values step stands for: `3` one, `3x20` 21. */
function stepCount(step: string): number {
  const times = /x(\d+)$/.exec(step);
  return times ? Number(times[1]) + 1 : 1;
}

/** The words of a state case's values (`done`, `fail`), one a step, expanded. */
function expand(values: string): string[] {
  return values.split(' ').flatMap((step) => Array<string>(stepCount(step)).fill(step.replace(/x\d+$/, '')));
}

/** A counter of passes of `result`, one each step whose word is `result`, after the first failure (the passes before it are long past). */
function cumulative(values: string, result: string): string {
  let count = 0;
  let failed = false;
  return expand(values)
    .map((word) => {
      failed ||= word === 'fail';
      return (count += failed && word === result ? 1 : 0);
    })
    .join(' ');
}

/** 100 calls a step. */
function countEvery30s(values: string): string {
  return expand(values).map((_, i) => String(100 * i)).join(' ');
}

/** Of them, as many answered within the bound as the step's word says. */
function fastEvery30s(values: string): string {
  let count = 0;
  return expand(values).map((word, i) => String(i === 0 ? 0 : (count += Number(word)))).join(' ');
}
