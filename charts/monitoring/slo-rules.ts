// The SLO of the webhook's admissions, per webhook entry, and its multiwindow, multi-burn-rate alerts as
// the SRE workbook writes them (chapter 5, "Alerting on SLOs"): a page when the budget of 30 days burns
// at 14.4x over 1 h (and 5 m) or 6x over 6 h (and 30 m), a ticket at 3x over 1 d (and 2 h) or 1x over
// 3 d (and 6 h). The short window makes the alert resolve soon after the burn stops.
//
// An admission is good when the apiserver got an answer within `latencySeconds` and neither failed open
// nor was refused for a failed call. The apiserver observes every call, failed ones too, in its latency
// histogram; a timed-out call is both slow and failed, so it is counted twice, and the ratio is capped
// at 1: the ratio is pessimistic by at most the share of timeouts.

import { APISERVER_METRICS } from './apiserver-metrics';
import type { MonitoringSettings } from './monitoring-props';
import type { MonitoredPolicies } from './policy-rules';
import { type AlertContext, type DescribedAlert, type RecordingRule, alternation, describedAlert, leMatcher, ruleNumber, selector } from './rule-types';
import type { WebhookEntry } from './webhook-rules';

/** The windows the error ratio is recorded over. */
export const SLO_WINDOWS = ['5m', '30m', '1h', '2h', '6h', '1d', '3d'] as const;
export type SloWindow = (typeof SLO_WINDOWS)[number];

/** The recorded error ratio over `window`, by webhook entry (`name`). */
export function sloErrorRatio(window: SloWindow): string {
  return `sidecar_injector:admission_slo_errors:ratio_rate${window}`;
}

/** The recording rules: per window, the share of each entry's admissions that were not good. */
export function sloRecordingRules(entries: readonly WebhookEntry[], settings: MonitoringSettings): RecordingRule[] {
  const names = `name=~"${alternation(entries.map((entry) => entry.name))}"`;
  const duration = APISERVER_METRICS.webhookAdmissionDuration.name;
  return SLO_WINDOWS.map((window) => {
    const rate = (series: string, ...matchers: string[]) => `sum by (name) (rate(${series}${selector(settings.apiServerSelector, names, ...matchers)}[${window}]))`;
    const calls = rate(`${duration}_count`);
    // A term with no series yet (no entry ever failed open) would drop every entry from the sum: 0 instead.
    const orNone = (term: string) => `(${term} or 0 * ${calls})`;
    const failedOpen = orNone(rate(APISERVER_METRICS.webhookFailOpen.name));
    const refused = orNone(rate(APISERVER_METRICS.webhookRejections.name, 'error_type=~"calling_webhook_error|apiserver_internal_error"'));
    const slow = `(${calls} - ${rate(`${duration}_bucket`, leMatcher(settings.latencySeconds))})`;
    return { record: sloErrorRatio(window), expr: `clamp_max((${failedOpen} + ${refused} + ${slow}) / ${calls}, 1)` };
  });
}

/** The recorded error ratio of the policies over `window`, by policy. */
export function policySloErrorRatio(window: SloWindow): string {
  return `sidecar_injector:policy_slo_errors:ratio_rate${window}`;
}

/**
 * The policy backend's SLO (from 1.34, whose apiserver counts every evaluation of a policy by error
 * type, `no_error` among them): per window, the share of each policy's evaluations that failed. There is
 * no call to time: a CEL mutation runs in the apiserver, bounded by its cost budget (`out_of_budget`).
 */
export function policySloRecordingRules(policies: MonitoredPolicies, settings: MonitoringSettings): RecordingRule[] {
  const names = `policy=~"${alternation(policies.names)}"`;
  return SLO_WINDOWS.map((window) => {
    const rate = (...matchers: string[]) => `sum by (policy) (rate(${APISERVER_METRICS.mutatingPolicyChecks.name}${selector(settings.apiServerSelector, names, ...matchers)}[${window}]))`;
    const evaluations = rate();
    return { record: policySloErrorRatio(window), expr: `(${rate('error_type!="no_error"')} or 0 * ${evaluations}) / ${evaluations}` };
  });
}

/** What the burn-rate alerts are about: the webhook's admissions per entry, or the policies' evaluations. */
export interface SloSubject {
  /** The recorded ratio's name for a window. */
  ratio(window: SloWindow): string;
  /** Who fails, with the label that names it. */
  readonly who: string;
  /** What a good event is, after the objective's percentage. */
  readonly good: string;
  /** Added to the shape's reason. */
  readonly over: string;
}

/** The webhook's SLO subject. */
export function webhookSloSubject(settings: MonitoringSettings): SloSubject {
  return { ratio: sloErrorRatio, who: 'Webhook {{ $labels.name }}', good: `of admissions answered within ${settings.latencySeconds}s, without failing open or being refused`, over: '' };
}

/** The policies' SLO subject. */
export const POLICY_SLO_SUBJECT: SloSubject = {
  ratio: policySloErrorRatio,
  who: 'MutatingAdmissionPolicy {{ $labels.policy }}',
  good: 'of evaluations without an error',
  over: ', over the policies\' evaluations (error_type per evaluation, from 1.34)',
};

/** The two burn-rate alerts on the recorded ratios. */
export function sloAlerts(settings: MonitoringSettings, context: AlertContext, subject: SloSubject = webhookSloSubject(settings)): DescribedAlert[] {
  const budget = 1 - settings.objective;
  const burning = (long: SloWindow, short: SloWindow, factor: number) =>
    `(${subject.ratio(long)} > ${ruleNumber(factor * budget)} and ${subject.ratio(short)} > ${ruleNumber(factor * budget)})`;
  const objective = `${ruleNumber(settings.objective * 100)}% ${subject.good}`;
  return [
    describedAlert(context, {
      alert: 'SidecarInjectorErrorBudgetBurningFast',
      expr: `${burning('1h', '5m', 14.4)} or ${burning('6h', '30m', 6)}`,
      severity: 'critical',
      severityReason: 'at this rate the 30-day error budget is gone within 2 (14.4x) or 5 (6x) days',
      shapeReason: `the SRE workbook's multiwindow burn rate: the long window says the budget burns, the short one that it still does, so no \`for:\` is needed and it resolves soon after the burn stops${subject.over}`,
      summary: 'The injector is burning its error budget fast.',
      description:
        `${subject.who} fails its SLO (${objective}) at 6 or more times the rate its 30-day error budget allows: ` +
        '{{ $value | humanizePercentage }} were not good.',
    }),
    describedAlert(context, {
      alert: 'SidecarInjectorErrorBudgetBurningSlowly',
      expr: `${burning('1d', '2h', 3)} or ${burning('3d', '6h', 1)}`,
      severity: 'warning',
      severityReason: 'at this rate the 30-day error budget is gone within 10 (3x) or 30 (1x) days: a ticket, not a page',
      shapeReason: `as the fast burn, over longer windows${subject.over}`,
      summary: 'The injector is burning its error budget.',
      description:
        `${subject.who} fails its SLO (${objective}) at 1 or more times the rate its 30-day error budget allows: ` +
        '{{ $value | humanizePercentage }} were not good.',
    }),
  ];
}
