// The `monitoring` prop: what the alerts, SLO and dashboard are made from, its defaults and its checks.
// Every check names the prop under `monitoring.` and says why, like the rest of SidecarInjectorProps.

import { Duration } from 'cdk8s';
import type { ConfigIssue } from '../../webhook/config';
import { labelValueError, qualifiedNameError } from '../../webhook/config';
import { PACKAGE_VERSION } from '../version';
import { APISERVER_WEBHOOK_LATENCY_BOUNDS } from './apiserver-metrics';

/** The service level objective of the webhook's admissions, per webhook entry, over 30 days. */
export interface SloProps {
  /**
   * The share of admissions, per webhook entry, that the apiserver must get an answer to within
   * `latencySeconds`, without failing open and without being refused for a failed call; with the policy
   * backend, the share of each policy's evaluations that end without an error. Above 0.93:
   * below that even every admission failing would not burn the budget at 14.4 times its rate.
   * @default 0.999
   */
  readonly objective?: number;
  /**
   * An admission answered later than this counts against the objective. One of the bounds of the
   * apiserver's webhook latency histogram (0.005, 0.025, 0.1, 0.5, 1, 2.5, 10, 25), below `timeoutSeconds`.
   * @default 1 (0.5 with a timeoutSeconds of 1)
   */
  readonly latencySeconds?: number;
}

/** The Prometheus Operator's objects, made only when asked (their CRDs must be installed). */
export interface PrometheusOperatorProps {
  /** Labels on the PrometheusRule and the PodMonitor: what your Prometheus' `ruleSelector` and
   * `podMonitorSelector` select (kube-prometheus-stack: `release: <its release name>`). @default none */
  readonly labels?: Record<string, string>;
}

/**
 * Alerts, recording rules, an SLO and a Grafana dashboard, made from the same props as the injector
 * (its webhook entries, their failurePolicy and timeout, its policies, its reconciler). Without the
 * Prometheus Operator: a rule-file ConfigMap and `prometheus.io/*` scrape annotations on the pods.
 */
export interface MonitoringProps {
  /** How often Prometheus evaluates these rules (each rule group's `interval`). @default Prometheus' global `evaluation_interval` */
  readonly evaluationInterval?: Duration;
  /** How long a state must last before its alert fires (`for:`): the latency, target, reload, certificate,
   * Lease and reconciler-pass alerts. The alerts on a counter (fail-open, refusals, policy errors, connections
   * closed, repairs failed) fire on one increment and do not read it. @default Duration.minutes(5) */
  readonly alertAfter?: Duration;
  /** How long an alert on a counter keeps firing after its window no longer holds an increment
   * (`keep_firing_for`, Prometheus 2.42 and later): long enough for Alertmanager to notify an alert that
   * joins a group it has notified already, which waits `group_interval` (5m by default). @default Duration.minutes(5) */
  readonly keepFiringFor?: Duration;
  /** How long pods may stay missing or outdated, and repairs wait, before their alerts fire (`for:`). @default Duration.hours(1) */
  readonly staleAfter?: Duration;
  /** The window rates and increases are taken over: an alert on a counter stays firing this long after
   * the last event, and `keepFiringFor` more. At least four scrape intervals. @default Duration.minutes(5) */
  readonly rateWindow?: Duration;
  /** Time left on the serving certificate below which its alert fires: the generated store renews
   * 30 days ahead, cert-manager a third of the lifetime ahead. @default Duration.days(30) */
  readonly certificateRenewalWindow?: Duration;
  /** The SLO and its burn-rate alerts: the webhook's admissions per entry, or the policies' evaluations per
   * policy (from Kubernetes 1.34: admissionPolicyApiVersion v1beta1 or v1). @default objective 0.999, latencySeconds 1 */
  readonly slo?: SloProps;
  /**
   * PromQL label matchers that select the webhook pods' scraped series, e.g.
   * `kubernetes_namespace="x"` for a scrape config that names the label so.
   * @default `namespace="<namespace>", pod=~"<name>-<pod-template-hash>-<suffix>"`: the labels the
   * Prometheus example and Helm chart's annotation job and a PodMonitor give
   */
  readonly webhookSelector?: string;
  /** As `webhookSelector`, for the reconciler's pods. @default the same, for the `<name>-reconciler` pods */
  readonly reconcilerSelector?: string;
  /** Label matchers added to every selector of the apiserver's series (e.g. `job="apiserver"`, or a
   * `cluster` label when one Prometheus watches several). @default none: the webhook entries' and
   * policies' names are unique already */
  readonly apiServerSelector?: string;
  /** Labels added to every alert, e.g. `{ team: 'platform' }` for Alertmanager's routes. @default none */
  readonly alertLabels?: Record<string, string>;
  /** Where each alert's `runbook_url` points: the base the runbook file name and anchor are appended to.
   * @default the runbooks of this package's version on GitHub (docs/runbooks/) */
  readonly runbookBaseUrl?: string;
  /** Labels on the dashboard's ConfigMap, which Grafana's dashboard sidecar looks for. @default { grafana_dashboard: '1' } */
  readonly dashboardLabels?: Record<string, string>;
  /** Also a PrometheusRule and a PodMonitor for the Prometheus Operator. @default none: the plain ConfigMap and annotations only */
  readonly prometheusOperator?: PrometheusOperatorProps;
}

/** The settings after defaults, as the rules and the dashboard read them. */
export interface MonitoringSettings {
  /** `evaluationInterval`; undefined: Prometheus' global one. */
  readonly evaluationInterval?: string;
  /** `alertAfter`. */
  readonly alertAfter: string;
  /** `keepFiringFor`. */
  readonly keepFiringFor: string;
  /** `staleAfter`. */
  readonly staleAfter: string;
  /** `rateWindow`. */
  readonly rateWindow: string;
  /** `certificateRenewalWindow`. */
  readonly certificateRenewalWindow: string;
  /** `slo.objective`. */
  readonly objective: number;
  /** `slo.latencySeconds`. */
  readonly latencySeconds: number;
  /** `webhookSelector`. */
  readonly webhookSelector: string;
  /** `reconcilerSelector`. */
  readonly reconcilerSelector: string;
  /** `apiServerSelector` ('' for none). */
  readonly apiServerSelector: string;
  /** `alertLabels`. */
  readonly alertLabels: Readonly<Record<string, string>>;
  /** `runbookBaseUrl`. */
  readonly runbookBaseUrl: string;
  /** `dashboardLabels`. */
  readonly dashboardLabels: Readonly<Record<string, string>>;
}

export const DEFAULT_RUNBOOK_BASE_URL = `https://github.com/cdk8s-sidecar-injector/cdk8s-sidecar-injector/blob/v${PACKAGE_VERSION}/docs/runbooks/`;

/** The labels a Deployment's pods are scraped with: its namespace, and a pod name `<deployment>-<hash>-<suffix>`. */
export function deploymentPodSelector(namespace: string, deployment: string): string {
  return `namespace="${namespace}", pod=~"${deployment}-[a-z0-9]+-[a-z0-9]+"`;
}

/** The props with every default filled in, for the injector `name` in `namespace`. */
export function monitoringSettings(props: MonitoringProps, injector: { readonly namespace: string; readonly name: string; readonly timeoutSeconds: number }): MonitoringSettings {
  return {
    evaluationInterval: durationText(props.evaluationInterval),
    alertAfter: durationText(props.alertAfter ?? '5m'),
    keepFiringFor: durationText(props.keepFiringFor ?? '5m'),
    staleAfter: durationText(props.staleAfter ?? '1h'),
    rateWindow: durationText(props.rateWindow ?? '5m'),
    certificateRenewalWindow: durationText(props.certificateRenewalWindow ?? '30d'),
    objective: props.slo?.objective ?? 0.999,
    latencySeconds: props.slo?.latencySeconds ?? (injector.timeoutSeconds > 1 ? 1 : 0.5),
    webhookSelector: props.webhookSelector ?? deploymentPodSelector(injector.namespace, injector.name),
    reconcilerSelector: props.reconcilerSelector ?? deploymentPodSelector(injector.namespace, `${injector.name}-reconciler`),
    apiServerSelector: props.apiServerSelector ?? '',
    alertLabels: props.alertLabels ?? {},
    runbookBaseUrl: props.runbookBaseUrl ?? DEFAULT_RUNBOOK_BASE_URL,
    dashboardLabels: props.dashboardLabels ?? { grafana_dashboard: '1' },
  };
}

/** A Prometheus duration: `30s`, `5m`, `1h30m`, `30d` (units y w d h m s ms, largest first). */
const DURATION = /^(\d+y)?(\d+w)?(\d+d)?(\d+h)?(\d+m)?(\d+s)?(\d+ms)?$/;
/** Label matchers as PromQL writes them inside braces: `a="x", b=~"y.*"`. */
const MATCHERS = /^\s*[a-zA-Z_][a-zA-Z0-9_]*\s*(=~|!~|!=|=)\s*"(?:[^"\\\n]|\\.)*"\s*(,\s*[a-zA-Z_][a-zA-Z0-9_]*\s*(=~|!~|!=|=)\s*"(?:[^"\\\n]|\\.)*"\s*)*,?\s*$/;
/** Alert labels Prometheus or these rules set themselves. */
const RESERVED_ALERT_LABELS = ['alertname', 'severity', 'sidecar_injector', 'name', 'policy', 'reason', 'action'];

/** Every problem of the `monitoring` prop, each naming its path under `monitoring`. */
export function monitoringPropsIssues(props: MonitoringProps | undefined, timeoutSeconds: number): ConfigIssue[] {
  if (props === undefined) return [];
  if (props === null || typeof props !== 'object' || Array.isArray(props)) return [{ path: 'monitoring', message: 'must be an object' }];
  const issues: ConfigIssue[] = [];
  const duration = (prop: 'evaluationInterval' | 'alertAfter' | 'keepFiringFor' | 'staleAfter' | 'rateWindow' | 'certificateRenewalWindow') => {
    const value = durationText(props[prop]);
    if (value === undefined) return;
    if (typeof value !== 'string' || value === '' || !DURATION.test(value)) {
      issues.push({ path: `monitoring.${prop}`, message: `${JSON.stringify(value)} is not a Prometheus duration (like "30s", "5m" or "1h30m")` });
    } else if (prop === 'evaluationInterval' && durationSeconds(value) === 0) {
      issues.push({ path: `monitoring.${prop}`, message: 'must be longer than 0s' });
    }
  };
  (['evaluationInterval', 'alertAfter', 'keepFiringFor', 'staleAfter', 'rateWindow', 'certificateRenewalWindow'] as const).forEach(duration);
  const rateWindow = durationText(props.rateWindow);
  if (typeof rateWindow === 'string' && DURATION.test(rateWindow) && durationSeconds(rateWindow) < 60) {
    issues.push({ path: 'monitoring.rateWindow', message: `${JSON.stringify(rateWindow)} is shorter than 1m: a rate needs at least two scrapes in its window, four to be steady` });
  }
  issues.push(...sloIssues(props.slo, timeoutSeconds));
  for (const prop of ['webhookSelector', 'reconcilerSelector', 'apiServerSelector'] as const) {
    const value = props[prop];
    if (value === undefined || (prop === 'apiServerSelector' && value === '')) continue;
    if (typeof value !== 'string' || !MATCHERS.test(value)) {
      issues.push({ path: `monitoring.${prop}`, message: `${JSON.stringify(value)} is not a list of PromQL label matchers (like 'namespace="x", pod=~"y-.*"')` });
    }
  }
  if (props.runbookBaseUrl !== undefined && (typeof props.runbookBaseUrl !== 'string' || !/^https?:\/\/\S+\/$/.test(props.runbookBaseUrl))) {
    issues.push({ path: 'monitoring.runbookBaseUrl', message: `${JSON.stringify(props.runbookBaseUrl)} must be an http(s) URL ending in "/" (the runbook file name is appended)` });
  }
  for (const [prop, map] of [['alertLabels', props.alertLabels], ['dashboardLabels', props.dashboardLabels], ['prometheusOperator.labels', props.prometheusOperator?.labels]] as const) {
    for (const [key, value] of Object.entries(map ?? {})) {
      const keyError = prop === 'alertLabels' ? (/^[a-zA-Z_][a-zA-Z0-9_]*$/.test(key) ? undefined : 'is not a Prometheus label name ([a-zA-Z_][a-zA-Z0-9_]*)') : qualifiedNameError(key);
      if (keyError) issues.push({ path: `monitoring.${prop}["${key}"]`, message: `${JSON.stringify(key)} ${keyError}` });
      else if (prop === 'alertLabels' && RESERVED_ALERT_LABELS.includes(key)) issues.push({ path: `monitoring.${prop}["${key}"]`, message: `"${key}" is set by the rules themselves` });
      const valueError = prop === 'alertLabels' ? (typeof value === 'string' ? undefined : 'must be a string') : labelValueError(value);
      if (valueError) issues.push({ path: `monitoring.${prop}["${key}"]`, message: `${JSON.stringify(value)} ${valueError}` });
    }
  }
  return issues;
}

function sloIssues(slo: SloProps | undefined, timeoutSeconds: number): ConfigIssue[] {
  if (slo === undefined) return [];
  const issues: ConfigIssue[] = [];
  if (slo.objective !== undefined && (typeof slo.objective !== 'number' || !(slo.objective > 0.93 && slo.objective < 1))) {
    issues.push({
      path: 'monitoring.slo.objective',
      message: `must be a ratio above 0.93 and below 1 (like 0.999), got ${JSON.stringify(slo.objective)}: the fast burn-rate alert fires at 14.4 times the error budget, which must stay below every admission failing`,
    });
  }
  if (slo.latencySeconds !== undefined) {
    if (!APISERVER_WEBHOOK_LATENCY_BOUNDS.includes(slo.latencySeconds)) {
      issues.push({ path: 'monitoring.slo.latencySeconds', message: `must be a bound of the apiserver's webhook latency histogram (${APISERVER_WEBHOOK_LATENCY_BOUNDS.join(', ')}), got ${JSON.stringify(slo.latencySeconds)}` });
    } else if (slo.latencySeconds >= timeoutSeconds) {
      issues.push({ path: 'monitoring.slo.latencySeconds', message: `must be below timeoutSeconds (${timeoutSeconds}): an answer after the timeout is a failed call already, got ${slo.latencySeconds}` });
    }
  }
  return issues;
}

/** A duration as Prometheus writes it (`1h30m`, `30d`, `500ms`), from a cdk8s Duration or, in the JSON form, as written. */
export function durationText(duration: Duration | string): string;
export function durationText(duration: Duration | string | undefined): string | undefined;
export function durationText(duration: Duration | string | undefined): string | undefined {
  if (!(duration instanceof Duration)) return duration as string | undefined;
  let ms = duration.toMilliseconds();
  if (!Number.isFinite(ms) || ms < 0) return String(ms);
  if (ms === 0) return '0s';
  let text = '';
  for (const [unit, size] of [['d', 86_400_000], ['h', 3_600_000], ['m', 60_000], ['s', 1000], ['ms', 1]] as const) {
    const count = Math.floor(ms / size);
    if (count > 0) text += `${count}${unit}`;
    ms -= count * size;
  }
  return text;
}

/** A Prometheus duration in seconds (valid durations only). */
export function durationSeconds(duration: string): number {
  const units: Record<string, number> = { y: 365 * 86400, w: 7 * 86400, d: 86400, h: 3600, m: 60, s: 1, ms: 0.001 };
  let seconds = 0;
  for (const [, count, unit] of duration.matchAll(/(\d+)(ms|y|w|d|h|m|s)/g)) seconds += Number(count) * units[unit];
  return seconds;
}
