// Alerts per webhook entry of the synthesized MutatingWebhookConfiguration, read from the apiserver's
// own series, with the severity the entry's failurePolicy gives: under Ignore a failed call admits the
// pod without its sidecars (a ticket), under Fail it refuses the pod (a page).

import { APISERVER_METRICS, APISERVER_WEBHOOK_LATENCY_BOUNDS } from './apiserver-metrics';
import { durationSeconds, type MonitoringSettings } from './monitoring-props';
import { type AlertContext, type AlertSeverity, type DescribedAlert, counterIncreased, describedAlert, leMatcher, selector } from './rule-types';

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

/** How long refusals must go on before they page, and the window each evaluation looks back over: no
 * longer than `rateWindow`. A window no longer than its `for:` holds one refusal for less than the `for:`. */
export function sustainedWindow(settings: MonitoringSettings): string {
  return durationSeconds(settings.rateWindow) < 120 ? settings.rateWindow : '2m';
}

/** Why a counter alert fires on one increment and keeps firing (the alert table's column). */
export function onEventShape(settings: MonitoringSettings): string {
  return (
    `one increment is the event: no \`for:\`, an increase within ${settings.rateWindow} or a series created above 0 (the apiserver creates it at the first event, ` +
    `where increase() sees nothing), so it fires at the next evaluation; \`keep_firing_for: ${settings.keepFiringFor}\` so Alertmanager notifies it even into a group mid-\`group_interval\``
  );
}

/** What refusing an object looks like to an alert: the series counted, the labels kept, and the words. */
export interface RefusalAlertSpec {
  readonly alert: string;
  /** The counter with its selector. */
  readonly series: string;
  /** The labels summed by. */
  readonly by: string;
  /** Why the page is a page. */
  readonly severityReason: string;
  readonly summary: string;
  /** The description, for a window. */
  description(window: string): string;
}

/** Refusals under failurePolicy Fail: a warning for one, a page once they go on for `sustainedWindow`. */
export function refusalAlerts(spec: RefusalAlertSpec, settings: MonitoringSettings, context: AlertContext): DescribedAlert[] {
  const sustained = sustainedWindow(settings);
  return [
    describedAlert(context, {
      alert: spec.alert,
      expr: counterIncreased(spec.series, spec.by, settings.rateWindow),
      keepFiringFor: settings.keepFiringFor,
      severity: 'warning',
      severityReason: 'one refused request: a controller or the user retries; a ticket, the page comes if refusals go on',
      shapeReason: onEventShape(settings),
      summary: spec.summary,
      description: spec.description(settings.rateWindow),
    }),
    describedAlert(context, {
      alert: spec.alert,
      expr: counterIncreased(spec.series, spec.by, sustained),
      for: sustained,
      keepFiringFor: settings.keepFiringFor,
      severity: 'critical',
      severityReason: `${spec.severityReason}, for ${sustained} and on`,
      shapeReason:
        `refusals in every evaluation for ${sustained}, each over a ${sustained} window: a window no longer than its \`for:\` holds one refusal for less than that, ` +
        `so a single refused request never pages and a sustained outage pages ${sustained} in; \`keep_firing_for: ${settings.keepFiringFor}\` as the warning`,
      summary: spec.summary,
      description: `${spec.description(sustained)} Refusals have gone on for ${sustained}.`,
    }),
  ];
}

/** The pods the acting reconciler counts without an injection they should have. */
export function missingPods(settings: MonitoringSettings): string {
  const pods = settings.reconcilerSelector;
  return `sum(sidecar_injector_reconciler_pods_missing_injection${selector(pods)} and on (instance) (sidecar_injector_reconciler_leader${selector(pods)} == 1))`;
}

/** The alerts of one webhook entry: fail-open (Ignore) or refusals (Fail), and latency near its timeout. */
export function webhookEntryAlerts(entry: WebhookEntry, settings: MonitoringSettings, context: AlertContext, reconciler = false): DescribedAlert[] {
  const window = settings.rateWindow;
  const entrySelector = (...more: string[]) => selector(settings.apiServerSelector, `name="${entry.name}"`, ...more);
  const { severity, why } = failureSeverity(entry.failurePolicy);
  const alerts: DescribedAlert[] = [];
  if (entry.failurePolicy === 'Ignore') {
    const failOpen = `${APISERVER_METRICS.webhookFailOpen.name}${entrySelector()}`;
    const event = counterIncreased(failOpen, 'name', window);
    // With the reconciler, the pods admitted bare are a state it counts: firing while it counts any, for a fail-open within staleAfter.
    const state = `(${counterIncreased(failOpen, 'name', settings.staleAfter)}) * 0 + on () group_left () (${missingPods(settings)} > 0)`;
    alerts.push(
      describedAlert(context, {
        alert: 'SidecarInjectorWebhookFailingOpen',
        expr: reconciler ? `${event} or ${state}` : event,
        keepFiringFor: settings.keepFiringFor,
        severity,
        severityReason: why,
        shapeReason: reconciler
          ? `${onEventShape(settings)}; and while the reconciler counts pods without their sidecars after a fail-open within ${settings.staleAfter} (then SidecarInjectorPodsStale's \`for: ${settings.staleAfter}\` takes over), so it resolves when they are repaired`
          : onEventShape(settings),
        summary: 'Pods are admitted without their sidecars: the apiserver cannot call the injector.',
        description: reconciler
          ? `The apiserver failed to call webhook {{ $labels.name }} and, under failurePolicy Ignore, admitted those objects without it. ` +
            `{{ with query \`${missingPods(settings)}\` }}{{ . | first | value | humanize }}{{ else }}No{{ end }} pods run without an injection they should have, as the reconciler counted them at its last pass; ` +
            `it repairs them as its settings say (missing: restart), and this alert resolves once none is left and the last fail-open is ${window} behind.`
          : `The apiserver failed to call webhook {{ $labels.name }} {{ $value | humanize }} times in the last ${window} and, under failurePolicy Ignore, ` +
            'admitted those objects without it: they run without the sidecars they should have until they are recreated. No reconciler runs to repair them: ' +
            '`npx cdk8s-sidecar-injector status -A` lists them.',
      }),
    );
  } else {
    alerts.push(
      ...refusalAlerts(
        {
          alert: 'SidecarInjectorWebhookRefusingAdmissions',
          series: `${APISERVER_METRICS.webhookRejections.name}${entrySelector('error_type=~"calling_webhook_error|apiserver_internal_error"')}`,
          by: 'name, operation',
          severityReason: why,
          summary: 'Pod creation is refused: the apiserver cannot call the injector.',
          description: (over) =>
            `The apiserver failed to call webhook {{ $labels.name }} {{ $value | humanize }} times in the last ${over} ({{ $labels.operation }}) and, ` +
            'under failurePolicy Fail, refused those objects: pods are not being created.',
        },
        settings,
        context,
      ),
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
      shapeReason: `a share of calls over ${window}, a state: \`for: ${settings.alertAfter}\` so a few slow calls do not fire it`,
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
    shapeReason: `a state: \`for: ${settings.alertAfter}\` so a rollout's restarts or a missed scrape do not fire it; the fail-open and refusal alerts tell the outage first`,
    summary: 'No webhook pod of the injector is scraped and up.',
    description:
      `Prometheus has scraped no webhook pod (${settings.webhookSelector}) successfully for ${settings.alertAfter}: the pods are gone, not ready, or not scraped. ` +
      `If they are gone, ${affected} every object they should inject.`,
  });
}

