// The alert table of docs/monitoring.md, written from the rules themselves (test/docs/alert-table.test.ts
// checks the page holds exactly this; `npm run docs` writes it): each alert once, its expression as the
// first setup that has it writes it, every severity it takes and why, its `for:` and its runbook.

import type { MonitoringRules } from './monitoring-rules';

/** The markers around the table in docs/monitoring.md. */
export const ALERT_TABLE_MARKERS = { start: '<!-- alert-table:start -->', end: '<!-- alert-table:end -->' } as const;

/** A setup whose alerts the table lists, and what to call it. */
export interface TabledSetup {
  readonly label: string;
  readonly rules: MonitoringRules;
}

const cell = (text: string) => text.replace(/\|/g, '\\|').replace(/\n/g, ' ');

export function alertTable(setups: readonly TabledSetup[]): string {
  const rows = new Map<string, { expr: string; setup: string; severities: Map<string, string>; for: string; anchor: string }>();
  for (const setup of setups) {
    for (const { rule, severityReason } of setup.rules.alerts) {
      let row = rows.get(rule.alert);
      if (!row) {
        row = { expr: rule.expr, setup: setup.label, severities: new Map(), for: rule.for ?? '(none)', anchor: rule.alert.toLowerCase() };
        rows.set(rule.alert, row);
      }
      row.severities.set(`${rule.labels.severity}: ${severityReason}`, rule.labels.severity);
    }
  }
  const lines = ['| alert | expression (as the first setup that has it writes it) | severity, and why | for | runbook |', '| --- | --- | --- | --- | --- |'];
  for (const [alert, row] of rows) {
    const severities = [...row.severities.keys()].map(cell).join('<br>');
    lines.push(`| ${alert} | ${row.setup}: \`${cell(row.expr)}\` | ${severities} | ${row.for} | [runbook](runbooks/alerts.md#${row.anchor}) |`);
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
