// Alerts per webhook entry of the synthesized MutatingWebhookConfiguration, read from the apiserver's
// own series, with the severity the entry's failurePolicy gives: under Ignore a failed call admits the
// pod without its sidecars (a ticket), under Fail it refuses the pod (a page).

import { APISERVER_METRICS, APISERVER_WEBHOOK_LATENCY_BOUNDS } from './apiserver-metrics';
import type { MonitoringSettings } from './monitoring-props';
import { type AlertContext, type AlertSeverity, type DescribedAlert, describedAlert, leMatcher, selector } from './rule-types';

/** One entry of the MutatingWebhookConfiguration, as the apiserver calls it. */
export interface WebhookEntry {
  /** The entry's name: the `name` label of the apiserver's webhook series. */
  readonly name: string;
  /** What the apiserver does when the call fails: the alerts' severity. */
  readonly failurePolicy: 'Ignore' | 'Fail';
  /** How long the apiserver waits for the answer. */
  readonly timeoutSeconds: number;
}

/** What a failed call does to the object, by failurePolicy: the severity and why. */
export function failureSeverity(failurePolicy: 'Ignore' | 'Fail'): { severity: AlertSeverity; why: string } {
  return failurePolicy === 'Fail'
    ? { severity: 'critical', why: 'failurePolicy Fail: a failed call refuses the pod, so workloads cannot start or scale' }
    : { severity: 'warning', why: 'failurePolicy Ignore: a failed call admits the pod without its sidecars, nobody is blocked' };
}

/** The last bound of the apiserver's latency histogram below `timeoutSeconds`: "near the timeout". */
export function nearTimeoutBound(timeoutSeconds: number): number {
  return [...APISERVER_WEBHOOK_LATENCY_BOUNDS].reverse().find((bound) => bound < timeoutSeconds) ?? APISERVER_WEBHOOK_LATENCY_BOUNDS[0];
}

/** The alerts of one webhook entry: fail-open (Ignore) or refusals (Fail), and latency near its timeout. */
export function webhookEntryAlerts(entry: WebhookEntry, settings: MonitoringSettings, context: AlertContext): DescribedAlert[] {
  const window = settings.rateWindow;
  const entrySelector = (...more: string[]) => selector(settings.apiServerSelector, `name="${entry.name}"`, ...more);
  const { severity, why } = failureSeverity(entry.failurePolicy);
  const alerts: DescribedAlert[] = [];
  if (entry.failurePolicy === 'Ignore') {
    alerts.push(
      describedAlert(context, {
        alert: 'SidecarInjectorWebhookFailingOpen',
        expr: `sum by (name) (increase(${APISERVER_METRICS.webhookFailOpen.name}${entrySelector()}[${window}])) > 0`,
        for: settings.alertAfter,
        severity,
        severityReason: why,
        summary: 'Pods are admitted without their sidecars: the apiserver cannot call the injector.',
        description:
          `The apiserver failed to call webhook {{ $labels.name }} {{ $value | humanize }} times in the last ${window} and, under failurePolicy Ignore, ` +
          'admitted those objects without it: they run without the sidecars they should have.',
      }),
    );
  } else {
    alerts.push(
      describedAlert(context, {
        alert: 'SidecarInjectorWebhookRefusingAdmissions',
        expr:
          `sum by (name, operation) (increase(${APISERVER_METRICS.webhookRejections.name}` +
          `${entrySelector('error_type=~"calling_webhook_error|apiserver_internal_error"')}[${window}])) > 0`,
        for: settings.alertAfter,
        severity,
        severityReason: why,
        summary: 'Pod creation is refused: the apiserver cannot call the injector.',
        description:
          `The apiserver failed to call webhook {{ $labels.name }} {{ $value | humanize }} times in the last ${window} ({{ $labels.operation }}) and, ` +
          'under failurePolicy Fail, refused those objects: pods are not being created.',
      }),
    );
  }
  const bound = nearTimeoutBound(entry.timeoutSeconds);
  const calls = `sum by (name) (rate(${APISERVER_METRICS.webhookAdmissionDuration.name}_count${entrySelector()}[${window}]))`;
  const fast = `sum by (name) (rate(${APISERVER_METRICS.webhookAdmissionDuration.name}_bucket${entrySelector(leMatcher(bound))}[${window}]))`;
  alerts.push(
    describedAlert(context, {
      alert: 'SidecarInjectorWebhookSlow',
      expr: `(${calls} - ${fast}) / ${calls} > 0.01`,
      for: settings.alertAfter,
      severity,
      severityReason: `${why}; a call past the timeout (${entry.timeoutSeconds}s) fails`,
      summary: 'The injector answers the apiserver close to its timeout.',
      description:
        `{{ $value | humanizePercentage }} of the apiserver's calls to webhook {{ $labels.name }} took longer than ${bound}s in the last ${window}, ` +
        `close to its timeoutSeconds (${entry.timeoutSeconds}s), past which a call fails (failurePolicy ${entry.failurePolicy}).`,
    }),
  );
  return alerts;
}

/** No webhook pod is scraped and up: its severity from the entries' failurePolicy (any Fail: a page). */
export function webhookTargetAlert(entries: readonly WebhookEntry[], settings: MonitoringSettings, context: AlertContext): DescribedAlert {
  const failing = entries.filter((entry) => entry.failurePolicy === 'Fail').map((entry) => entry.name);
  const { severity, why } = failureSeverity(failing.length > 0 ? 'Fail' : 'Ignore');
  const affected = failing.length > 0 ? `webhook entries ${failing.join(', ')} (failurePolicy Fail) refuse` : 'every webhook entry (failurePolicy Ignore) admits without sidecars';
  return describedAlert(context, {
    alert: 'SidecarInjectorWebhookTargetMissing',
    expr: `absent(up${selector(settings.webhookSelector)} == 1)`,
    for: settings.alertAfter,
    severity,
    severityReason: failing.length > 0 ? `some entry has ${why}` : why,
    summary: 'No webhook pod of the injector is scraped and up.',
    description:
      `Prometheus has scraped no webhook pod (${settings.webhookSelector}) successfully for ${settings.alertAfter}: the pods are gone, not ready, or not scraped. ` +
      `If they are gone, ${affected} every object they should inject.`,
  });
}

