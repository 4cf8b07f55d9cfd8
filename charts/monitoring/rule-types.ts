// Prometheus rule files as data (the shape `promtool check rules` reads), and how every alert of
// ours is written: a severity that says who must wake up, a label naming the injector, a summary, a
// description with the labels that say where, and a runbook_url into docs/runbooks/.

/** Who must act: `critical` pages (pods refused, or the budget burning fast), `warning` is a ticket. */
export type AlertSeverity = 'critical' | 'warning';

/** A Prometheus alerting rule. */
export interface AlertRule {
  /** The alert's name. */
  readonly alert: string;
  /** The PromQL expression; each series it returns is an alert. */
  readonly expr: string;
  /** How long the expression must hold before the alert fires. */
  readonly for?: string;
  /** How long the alert stays firing after the expression stops holding (Prometheus 2.42 and later). */
  readonly keep_firing_for?: string;
  /** Labels of the alert: `severity`, `sidecar_injector` (`<namespace>/<name>`), and `alertLabels`. */
  readonly labels: Readonly<Record<string, string>>;
  /** `summary`, `description` and `runbook_url`. */
  readonly annotations: Readonly<Record<'summary' | 'description' | 'runbook_url', string>>;
}

/** A Prometheus recording rule. */
export interface RecordingRule {
  /** The name of the series it records. */
  readonly record: string;
  /** The PromQL expression recorded. */
  readonly expr: string;
}

/** A group of rules Prometheus evaluates together, at the group's interval. */
export interface RuleGroup {
  /** Unique in its file. */
  readonly name: string;
  /** How often the group is evaluated; Prometheus' global `evaluation_interval` when undefined. */
  readonly interval?: string;
  /** Its rules, evaluated in order (recording rules before the alerts that read them). */
  readonly rules: readonly (AlertRule | RecordingRule)[];
}

/** The docs page whose sections are the runbooks, one per alert (its anchor is the alert's name in lower case). */
export const RUNBOOK_FILE = 'alerts.md';

/** An alert rule and why its severity is what it is (for the alert table in docs/monitoring.md). */
export interface DescribedAlert {
  /** The rule as the rule file holds it. */
  readonly rule: AlertRule;
  /** Why its severity is what it is (the alert table's column). */
  readonly severityReason: string;
  /** Why its expression, `for:` and `keep_firing_for` are what they are (the alert table's column). */
  readonly shapeReason: string;
}

/** What every alert of one injector shares. */
export interface AlertContext {
  /** `<namespace>/<name>` of the injector. */
  readonly injector: string;
  readonly alertLabels: Readonly<Record<string, string>>;
  readonly runbookBaseUrl: string;
}

/** What one alert says. */
export interface AlertSpec {
  readonly alert: string;
  readonly expr: string;
  readonly for?: string;
  readonly keepFiringFor?: string;
  readonly severity: AlertSeverity;
  readonly severityReason: string;
  readonly shapeReason: string;
  readonly summary: string;
  readonly description: string;
}

/** An alert as every alert of ours is written. */
export function describedAlert(context: AlertContext, spec: AlertSpec): DescribedAlert {
  return {
    rule: {
      alert: spec.alert,
      expr: spec.expr,
      ...(spec.for !== undefined && spec.for !== '0s' ? { for: spec.for } : {}),
      ...(spec.keepFiringFor !== undefined && spec.keepFiringFor !== '0s' ? { keep_firing_for: spec.keepFiringFor } : {}),
      labels: { ...context.alertLabels, severity: spec.severity, sidecar_injector: context.injector },
      annotations: {
        summary: spec.summary,
        description: `${spec.description} (injector ${context.injector})`,
        runbook_url: `${context.runbookBaseUrl}${RUNBOOK_FILE}#${spec.alert.toLowerCase()}`,
      },
    },
    severityReason: spec.severityReason,
    shapeReason: spec.shapeReason,
  };
}

/**
 * A counter went up within `window`, summed by `by`: an increase between two samples, or a series that
 * appeared at a count above 0. The apiserver creates a series at its first event, already at its count,
 * and a pod's series start with the pod; `increase()` needs two samples, so it misses that first event.
 */
export function counterIncreased(series: string, by: string, window: string): string {
  return `sum by (${by}) (increase(${series}[${window}])) > 0 or sum by (${by}) (${series} > 0 unless ${series} offset ${window})`;
}

/** `{a, b}` of the non-empty matcher lists given (an empty selector is `{}`, which PromQL refuses alone). */
export function selector(...matchers: string[]): string {
  return `{${matchers.map((part) => part.trim().replace(/,$/, '')).filter((part) => part !== '').join(', ')}}`;
}

/** A regular expression matching exactly `values`, escaped, as a PromQL string's content. */
export function alternation(values: readonly string[]): string {
  return values.map((value) => value.replace(/[.*+?^${}()|[\]\\]/g, (char) => `\\\\${char}`)).join('|');
}

/** The matcher of a histogram bucket's `le`: Prometheus 3 writes a whole bound as `1.0`, Prometheus 2 as `1`. */
export function leMatcher(bound: number): string {
  return Number.isInteger(bound) ? `le=~"${bound}(\\\\.0)?"` : `le="${bound}"`;
}

/** A number as a rule writes it: no floating-point noise (`1 - 0.999` is 0.0010000000000000009). */
export function ruleNumber(value: number): string {
  return String(Number(value.toPrecision(10)));
}
