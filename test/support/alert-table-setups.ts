// The setups docs/monitoring.md's alert table lists, with every other prop at its default: the table
// is written from their rules (npm run docs) and test/docs/alert-table.test.ts checks the page holds it.
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { SidecarInjectorProps } from '../../charts/engine';
import { alertTable, withAlertTable } from '../../charts/monitoring/alert-table';
import { ENVOY } from './monitoring-variants';
import { TIMED_CASES } from './promtool-timed-cases';
import { buildChart } from './synth-helpers';

/** Each setup, its props, and the variant of test/support/monitoring-variants.ts whose timed promtool cases measure it. */
const SETUPS: [string, SidecarInjectorProps, string][] = [
  ['webhook, Ignore', { injections: [ENVOY], monitoring: {} }, 'webhook, Ignore'],
  ['webhook, Ignore, reconciler', { injections: [ENVOY], reconciler: {}, monitoring: {} }, 'webhook, Ignore, reconciler'],
  ['webhook, Fail', { injections: [ENVOY], failurePolicy: 'Fail', monitoring: {} }, 'webhook, Fail, readiness gate'],
  ['policies v1 or v1beta1', { injections: [ENVOY], backend: 'admissionPolicy', monitoring: {} }, 'policies v1beta1, Ignore'],
  ['policies v1 or v1beta1, Fail', { injections: [ENVOY], backend: 'admissionPolicy', failurePolicy: 'Fail', monitoring: {} }, 'policies v1, Fail, reconciler'],
  ['policies v1alpha1, Fail', { injections: [ENVOY], backend: 'admissionPolicy', admissionPolicyApiVersion: 'v1alpha1', failurePolicy: 'Fail', monitoring: {} }, 'policies v1alpha1, Fail'],
];

/** A time as the table writes it: `0 s`, `2 m`, `9.5 m`, `14.3 h`. */
function minutes(seconds: number): string {
  if (seconds >= 2 * 3600) return `${Number((seconds / 3600).toFixed(1))} h`;
  return seconds < 60 ? `${seconds} s` : `${Number((seconds / 60).toFixed(1))} m`;
}

/** What the timed promtool cases measured for an alert's rule of `severity`, in the setup's variant. */
export function measuredTimings(row: { alert: string; severity: string; setup: string }): string | undefined {
  const variant = SETUPS.find(([label]) => label === row.setup)![2];
  const parts: string[] = [];
  for (const timedCase of TIMED_CASES.filter((candidate) => candidate.variant === variant && candidate.alert === row.alert)) {
    const expected = timedCase.expect.find((alert) => alert.labels.severity === row.severity);
    if (!expected) {
      parts.push(`${timedCase.scenario}: never fires`);
      continue;
    }
    const resolved = expected.resolvesAt === undefined ? 'firing to the end' : `${minutes(expected.resolvesAt - (timedCase.repairAt ?? timedCase.faultAt))}`;
    parts.push(`${timedCase.scenario}: ${minutes(expected.firesAt - timedCase.faultAt)}, ${resolved}`);
  }
  return parts.length > 0 ? parts.join('; ') : undefined;
}

export const MONITORING_PAGE = path.resolve(__dirname, '../../docs/monitoring.md');

/** The table as the rules of the setups write it. */
export function documentedAlertTable(): string {
  return alertTable(
    SETUPS.map(([label, props]) => ({ label, rules: buildChart(props).injector.monitoring!.rules() })),
    measuredTimings,
  );
}

/** docs/monitoring.md as it should be: the page with the table replaced. */
export function monitoringPageWithTable(): string {
  return withAlertTable(fs.readFileSync(MONITORING_PAGE, 'utf8'), documentedAlertTable());
}
