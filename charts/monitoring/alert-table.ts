// The alert table of docs/monitoring.md, written from the rules themselves (test/docs/alert-table.test.ts
// checks the page holds exactly this; `npm run docs` writes it): each alert once, its expression as the
// first setup that has it writes it, every severity it takes and why, its `for:` and `keep_firing_for`,
// the times the promtool cases measure, why it has that shape, and its runbook.

import type { MonitoringRules } from './monitoring-rules';

/** The markers around the table in docs/monitoring.md. */
export const ALERT_TABLE_MARKERS = { start: '<!-- alert-table:start -->', end: '<!-- alert-table:end -->' } as const;

/** A setup whose alerts the table lists, and what to call it. */
export interface TabledSetup {
  readonly label: string;
  readonly rules: MonitoringRules;
}

const cell = (text: string) => text.replace(/\|/g, '\\|').replace(/\n/g, ' ');

/** What the table says of one rule's timing (the promtool cases measure it; none: not measured). */
export type RuleTimings = (row: { readonly alert: string; readonly severity: string; readonly setup: string }) => string | undefined;

/**
 * The table: a row per alert and shape (a refusal's warning and its page are two rules of one alert),
 * with its expression as the first setup that has it writes it, every severity it takes and why, its
 * `for:` and `keep_firing_for`, what `timings` says of it and why it has that shape.
 */
export function alertTable(setups: readonly TabledSetup[], timings: RuleTimings = () => undefined): string {
  const rows = new Map<string, { alert: string; expr: string; setup: string; severities: Map<string, string>; for: string; keep: string; shape: string; timing?: string }>();
  for (const setup of setups) {
    for (const { rule, severityReason, shapeReason } of setup.rules.alerts) {
      const key = `${rule.alert}\n${rule.for ?? ''}\n${rule.keep_firing_for ?? ''}\n${shapeReason}`;
      let row = rows.get(key);
      if (!row) {
        const timing = timings({ alert: rule.alert, severity: rule.labels.severity, setup: setup.label });
        row = { alert: rule.alert, expr: rule.expr, setup: setup.label, severities: new Map(), for: rule.for ?? '(none)', keep: rule.keep_firing_for ?? '(none)', shape: shapeReason, timing };
        rows.set(key, row);
      }
      row.severities.set(`${rule.labels.severity}: ${severityReason}`, rule.labels.severity);
    }
  }
  const lines = [
    '| alert | expression (as the first setup that has it writes it) | severity, and why | for, keep_firing_for | with the defaults: fault → firing, last event or repair → resolved | why this shape | runbook |',
    '| --- | --- | --- | --- | --- | --- | --- |',
  ];
  for (const row of rows.values()) {
    const severities = [...row.severities.keys()].map(cell).join('<br>');
    lines.push(
      `| ${row.alert} | ${row.setup}: \`${cell(row.expr)}\` | ${severities} | ${row.for}, ${row.keep} | ${cell(row.timing ?? '(not measured)')} | ${cell(row.shape)} | [runbook](runbooks/alerts.md#${row.alert.toLowerCase()}) |`,
    );
  }
  return lines.join('\n');
}

/** `page` with the text between the markers replaced by `table`. */
export function withAlertTable(page: string, table: string): string {
  const start = page.indexOf(ALERT_TABLE_MARKERS.start);
  const end = page.indexOf(ALERT_TABLE_MARKERS.end);
  if (start < 0 || end < start) throw new Error(`the page has no ${ALERT_TABLE_MARKERS.start} ... ${ALERT_TABLE_MARKERS.end}`);
  return `${page.slice(0, start + ALERT_TABLE_MARKERS.start.length)}\n${table}\n${page.slice(end)}`;
}
