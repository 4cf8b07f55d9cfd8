// The setups docs/monitoring.md's alert table lists, with every other prop at its default: the table
// is written from their rules (npm run docs) and test/docs/alert-table.test.ts checks the page holds it.
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { SidecarInjectorProps } from '../../charts';
import { alertTable, withAlertTable } from '../../charts/monitoring/alert-table';
import { ENVOY } from './monitoring-variants';
import { buildChart } from './synth-helpers';

const SETUPS: [string, SidecarInjectorProps][] = [
  ['webhook, Ignore, reconciler', { injections: [ENVOY], reconciler: {}, monitoring: {} }],
  ['webhook, Fail', { injections: [ENVOY], failurePolicy: 'Fail', monitoring: {} }],
  ['policies v1 or v1beta1', { injections: [ENVOY], backend: 'admissionPolicy', monitoring: {} }],
  ['policies v1 or v1beta1, Fail', { injections: [ENVOY], backend: 'admissionPolicy', failurePolicy: 'Fail', monitoring: {} }],
  ['policies v1alpha1, Fail', { injections: [ENVOY], backend: 'admissionPolicy', admissionPolicyApiVersion: 'v1alpha1', failurePolicy: 'Fail', monitoring: {} }],
];

export const MONITORING_PAGE = path.resolve(__dirname, '../../docs/monitoring.md');

/** The table as the rules of the setups write it. */
export function documentedAlertTable(): string {
  return alertTable(SETUPS.map(([label, props]) => ({ label, rules: buildChart(props).injector.monitoring!.rules() })));
}

/** docs/monitoring.md as it should be: the page with the table replaced. */
export function monitoringPageWithTable(): string {
  return withAlertTable(fs.readFileSync(MONITORING_PAGE, 'utf8'), documentedAlertTable());
}
