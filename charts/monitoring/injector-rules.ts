// Alerts on our own series (webhook/server/metrics.ts and webhook/reconciler/reconciler-process.ts):
// the config and certificate the webhook pods serve, their connection table, and the reconciler.

import { durationSeconds, type MonitoringSettings } from './monitoring-props';
import { type AlertContext, type DescribedAlert, counterIncreased, describedAlert, selector } from './rule-types';
import { onEventShape } from './webhook-rules';

/** Closes that can hit the apiserver's pooled connections: the table was full, or a body came too slowly. */
export const CONNECTION_CLOSES_ALERTED = ['evicted', 'displaced', 'over_share', 'slow_body'] as const;

/** The webhook pods' own alerts: config reload, certificate expiry, connections closed. */
export function webhookPodAlerts(settings: MonitoringSettings, context: AlertContext): DescribedAlert[] {
  const pods = settings.webhookSelector;
  return [
    describedAlert(context, {
      alert: 'SidecarInjectorConfigReloadFailing',
      expr: `sidecar_injector_config_last_reload_successful${selector(pods)} == 0`,
      for: settings.alertAfter,
      severity: 'warning',
      severityReason: 'the last good config keeps serving: admissions go on, but the edit is not in force',
      shapeReason: `a state (a gauge): \`for: ${settings.alertAfter}\` so an edit fixed within it does not fire`,
      summary: 'A webhook pod refuses its new config and keeps serving the last good one.',
      description:
        'Webhook pod {{ $labels.instance }} could not load the config mounted from its ConfigMap: the last good config keeps serving, ' +
        'and the edit is not in force. Its log says why ("invalid config ignored").',
    }),
    describedAlert(context, {
      alert: 'SidecarInjectorCertificateExpiring',
      expr: `sidecar_injector_serving_certificate_expiration_timestamp_seconds${selector(pods)} - time() < ${durationSeconds(settings.certificateRenewalWindow)}`,
      for: settings.alertAfter,
      severity: 'warning',
      severityReason: 'the certificate still serves; once it expires, the apiserver\'s calls fail and the webhook alerts fire with the entries\' own severity',
      shapeReason: `a state (a gauge): \`for: ${settings.alertAfter}\` so a renewal on its way does not fire`,
      summary: 'The webhook serves a certificate inside its renewal window.',
      description:
        `Webhook pod {{ $labels.instance }} serves a certificate that expires in {{ $value | humanizeDuration }}, within ${settings.certificateRenewalWindow}: ` +
        'it was not renewed, or the renewed Secret has not reached the pod.',
    }),
    describedAlert(context, {
      alert: 'SidecarInjectorConnectionsClosed',
      expr: counterIncreased(`sidecar_injector_connections_closed_total${selector(pods, `reason=~"${CONNECTION_CLOSES_ALERTED.join('|')}"`)}`, 'reason', settings.rateWindow),
      keepFiringFor: settings.keepFiringFor,
      shapeReason: `${onEventShape(settings)} (a webhook pod's series start at 0, but its first scrape can hold closes already)`,
      severity: 'warning',
      severityReason: 'the apiserver retries on a new connection; a full table means someone else holds connections to the webhook port',
      summary: 'The webhook\'s connection table is closing connections, the apiserver\'s among them.',
      description:
        `The webhook pods closed {{ $value | humanize }} connections in the last ${settings.rateWindow} for reason {{ $labels.reason }}: ` +
        'the connection table is full (evicted, displaced, over_share) or bodies arrive too slowly (slow_body).',
    }),
  ];
}

/** The reconciler's alerts: nobody holds the Lease, passes or repairs fail, workloads wait, pods stay stale. */
export function reconcilerAlerts(settings: MonitoringSettings, context: AlertContext): DescribedAlert[] {
  const pods = settings.reconcilerSelector;
  const window = settings.rateWindow;
  // Only the replica acting holds the counts of the last pass; another keeps what it saw when it last acted.
  const acting = `on (instance) (sidecar_injector_reconciler_leader${selector(pods)} == 1)`;
  // Passes back off up to 10 minutes while they fail: a longer window than the rate's.
  const passWindow = durationSeconds(window) >= 900 ? window : '15m';
  return [
    describedAlert(context, {
      alert: 'SidecarInjectorReconcilerLeaseNotHeld',
      expr: `(sum(sidecar_injector_reconciler_leader${selector(pods)}) or on () vector(0)) < 1`,
      for: settings.alertAfter,
      severity: 'warning',
      severityReason: 'nothing is repaired meanwhile, but admissions are not affected',
      shapeReason: `a state: \`for: ${settings.alertAfter}\`, longer than a Lease hand-over`,
      summary: 'No reconciler replica holds the Lease: nothing is judged or repaired.',
      description: `No scraped reconciler pod (${pods}) has held its Lease for ${settings.alertAfter}: the pods are gone, not scraped, or cannot renew the Lease.`,
    }),
    describedAlert(context, {
      alert: 'SidecarInjectorReconcilerPassesFailing',
      expr:
        `sum(increase(sidecar_injector_reconciler_passes_total${selector(pods, 'result=~"failed|injector-unreadable"')}[${passWindow}])) > 0 ` +
        `unless on () sum(increase(sidecar_injector_reconciler_passes_total${selector(pods, 'result="done"')}[${passWindow}])) > 0`,
      for: settings.alertAfter,
      severity: 'warning',
      severityReason: 'nothing is repaired meanwhile, but admissions are not affected',
      shapeReason: `every pass failing is the event, not one failed pass: failures and no success over ${passWindow} (passes back off up to 10 minutes), \`for: ${settings.alertAfter}\`; the counters start at 0, so a first failure is an increase`,
      summary: 'The reconciler\'s passes fail: pods are not judged or repaired.',
      description: `Every reconciler pass in the last ${passWindow} failed or could not read the injector ({{ $value | humanize }} passes); its log says why ("pass failed").`,
    }),
    describedAlert(context, {
      alert: 'SidecarInjectorRepairsFailing',
      expr: counterIncreased(`sidecar_injector_reconciler_repairs_total${selector(pods, 'result="failed"')}`, 'action', window),
      keepFiringFor: settings.keepFiringFor,
      shapeReason: `${onEventShape(settings)} (the counters start at 0, but a new replica's first scrape can hold a failure already)`,
      severity: 'warning',
      severityReason: 'the pods keep running as they are; the reconciler tries again at its next pass',
      summary: 'The reconciler\'s repairs fail.',
      description: `{{ $value | humanize }} {{ $labels.action }} repairs failed in the last ${window}: the workloads' Events say which and why.`,
    }),
    describedAlert(context, {
      alert: 'SidecarInjectorRepairsWaiting',
      expr: `sum by (reason) (sidecar_injector_reconciler_waiting_workloads${selector(pods)} and ${acting}) > 0`,
      for: settings.staleAfter,
      severity: 'warning',
      severityReason: 'the pods keep running as they are; something holds the repair back',
      shapeReason: `a state: \`for: ${settings.staleAfter}\`; a repair waits for a rollout or a budget for minutes as a matter of course`,
      summary: 'Stale workloads have waited for their repair too long.',
      description: `{{ $value | humanize }} stale workloads have not been repaired for ${settings.staleAfter}, waiting for {{ $labels.reason }}.`,
    }),
    describedAlert(context, {
      alert: 'SidecarInjectorPodsStale',
      expr: `sum(sidecar_injector_reconciler_pods${selector(pods, 'state="stale"')} and ${acting}) > 0`,
      for: settings.staleAfter,
      severity: 'warning',
      severityReason: 'the pods run, without their sidecars or with old ones; no admission is affected',
      shapeReason: `a state: \`for: ${settings.staleAfter}\`; the reconciler repairs within it as a matter of course, and a fail-open's bare pods are SidecarInjectorWebhookFailingOpen's until then`,
      summary: 'Pods have run without their sidecars, or with outdated ones, too long.',
      description:
        `{{ $value | humanize }} pods have been missing an injection or running an outdated one for ${settings.staleAfter} ` +
        '(the reconciler reports them, as its settings say, or cannot repair them).',
    }),
  ];
}
