// The Grafana dashboard of one injector, from what it is made of (the same MonitoredInjector as the
// rules): panels for what exists (the webhook, the policies, the reconciler), each query on series the
// webhook, the reconciler or the apiserver export, or on the SLO's recording rules.

import { createHash } from 'node:crypto';
import { APISERVER_METRICS } from './apiserver-metrics';
import type { MonitoredInjector } from './monitoring-rules';
import type { MonitoringSettings } from './monitoring-props';
import { alternation, selector } from './rule-types';
import { sloErrorRatio } from './slo-rules';

/** One query of a panel, and how its series are named in the legend. */
export interface DashboardQuery {
  /** The PromQL query. */
  readonly expr: string;
  /** How Grafana names each series it returns (`{{label}}`). */
  readonly legendFormat: string;
}

/** A panel as the dashboard JSON carries it (the fields the code reads; Grafana's JSON model has more). */
export interface DashboardPanel {
  /** The panel's title. */
  readonly title: string;
  /** Grafana's panel type. */
  readonly type: 'timeseries' | 'stat';
  /** Grafana's unit of the values (`reqps`, `s`, `bytes`). */
  readonly unit: string;
  /** Its queries, each a target of the panel. */
  readonly queries: readonly DashboardQuery[];
}

const DATASOURCE = { type: 'prometheus', uid: '${datasource}' };

/** The panels, in order. */
export function dashboardPanels(injector: MonitoredInjector, settings: MonitoringSettings): DashboardPanel[] {
  const panels: DashboardPanel[] = [];
  if (injector.webhooks && injector.webhooks.length > 0) panels.push(...admissionPanels(injector, settings), ...webhookPodPanels(settings));
  if (injector.policies && injector.policies.names.length > 0) panels.push(...policyPanels(injector, settings));
  if (injector.reconciler) panels.push(...reconcilerPanels(settings));
  return panels;
}

/** The webhook's admissions, as the apiserver and the webhook see them. */
function admissionPanels(injector: MonitoredInjector, settings: MonitoringSettings): DashboardPanel[] {
  const w = settings.rateWindow;
  const pods = selector(settings.webhookSelector);
  const names = `name=~"${alternation(injector.webhooks!.map((entry) => entry.name))}"`;
  const entries = (...more: string[]) => selector(settings.apiServerSelector, names, ...more);
  const apiserverLatency = APISERVER_METRICS.webhookAdmissionDuration.name;
  return [
    {
      title: 'Admissions per second, by decision',
      type: 'timeseries',
      unit: 'reqps',
      queries: [
        { expr: `sum by (outcome) (rate(sidecar_injector_admission_requests_total${pods}[${w}]))`, legendFormat: 'webhook: {{outcome}}' },
        { expr: `sum by (name, rejected) (rate(${APISERVER_METRICS.webhookRequests.name}${entries()}[${w}]))`, legendFormat: 'apiserver: {{name}} rejected={{rejected}}' },
      ],
    },
    {
      title: 'Latency as the apiserver sees it (p50, p99)',
      type: 'timeseries',
      unit: 's',
      queries: [0.5, 0.99].map((quantile) => ({
        expr: `histogram_quantile(${quantile}, sum by (name, le) (rate(${apiserverLatency}_bucket${entries()}[${w}])))`,
        legendFormat: `p${quantile * 100} {{name}}`,
      })),
    },
    {
      title: 'Latency as the webhook sees it (p50, p99)',
      type: 'timeseries',
      unit: 's',
      queries: [0.5, 0.99].map((quantile) => ({ expr: `histogram_quantile(${quantile}, sum by (le) (rate(sidecar_injector_admission_duration_seconds_bucket${pods}[${w}])))`, legendFormat: `p${quantile * 100}` })),
    },
    {
      title: 'Failed open and refused',
      type: 'timeseries',
      unit: 'reqps',
      queries: [
        { expr: `sum by (name) (rate(${APISERVER_METRICS.webhookFailOpen.name}${entries()}[${w}]))`, legendFormat: 'failed open: {{name}}' },
        { expr: `sum by (name, error_type) (rate(${APISERVER_METRICS.webhookRejections.name}${entries()}[${w}]))`, legendFormat: 'refused: {{name}} {{error_type}}' },
      ],
    },
    {
      title: 'Injections per second, by injection and reason, and revision',
      type: 'timeseries',
      unit: 'reqps',
      queries: [
        { expr: `sum by (revision, injection, reason) (rate(sidecar_injector_injections_total${pods}[${w}]))`, legendFormat: '{{revision}} {{injection}}: {{reason}}' },
        { expr: `sum by (name) (rate(${apiserverLatency}_count${entries()}[${w}]))`, legendFormat: 'calls to {{name}}' },
      ],
    },
    {
      title: `SLO: admissions good over 1h (objective ${settings.objective})`,
      type: 'timeseries',
      unit: 'percentunit',
      queries: [{ expr: `1 - ${sloErrorRatio('1h')}${selector(names)}`, legendFormat: '{{name}}' }],
    },
  ];
}

/** What the webhook pods report of themselves: their certificate, connections and memory. */
function webhookPodPanels(settings: MonitoringSettings): DashboardPanel[] {
  const w = settings.rateWindow;
  const pods = selector(settings.webhookSelector);
  return [
    {
      title: 'Certificate time left',
      type: 'stat',
      unit: 's',
      queries: [{ expr: `min(sidecar_injector_serving_certificate_expiration_timestamp_seconds${pods}) - time()`, legendFormat: 'serving certificate' }],
    },
    {
      title: 'Connections closed per second, by reason',
      type: 'timeseries',
      unit: 'ops',
      queries: [
        { expr: `sum by (reason) (rate(sidecar_injector_connections_closed_total${pods}[${w}]))`, legendFormat: '{{reason}}' },
        { expr: `sum(sidecar_injector_connections_open${pods})`, legendFormat: 'open (not per second)' },
      ],
    },
    {
      title: 'Memory budget of request bodies, and resident memory',
      type: 'timeseries',
      unit: 'bytes',
      queries: [
        { expr: `max(sidecar_injector_memory_budget_bytes${pods})`, legendFormat: 'budget' },
        { expr: `max by (instance) (sidecar_injector_memory_budget_held_bytes${pods})`, legendFormat: 'held {{instance}}' },
        { expr: `max by (instance) (process_resident_memory_bytes${pods})`, legendFormat: 'resident {{instance}}' },
      ],
    },
  ];
}

function policyPanels(injector: MonitoredInjector, settings: MonitoringSettings): DashboardPanel[] {
  const policies = injector.policies!;
  const w = settings.rateWindow;
  if (policies.apiVersion === 'v1alpha1') {
    const plugin = selector(settings.apiServerSelector, 'name="MutatingAdmissionPolicy"', 'type="admit"');
    return [
      {
        title: 'MutatingAdmissionPolicy admissions per second (every policy: Kubernetes 1.32 and 1.33 name none)',
        type: 'timeseries',
        unit: 'reqps',
        queries: [{ expr: `sum by (rejected) (rate(${APISERVER_METRICS.controllerAdmissionDuration.name}_count${plugin}[${w}]))`, legendFormat: 'rejected={{rejected}}' }],
      },
    ];
  }
  const ours = selector(settings.apiServerSelector, `policy=~"${alternation(policies.names)}"`);
  return [
    {
      title: 'Policy evaluations per second, by policy and error type',
      type: 'timeseries',
      unit: 'ops',
      queries: [{ expr: `sum by (policy, error_type) (rate(${APISERVER_METRICS.mutatingPolicyChecks.name}${ours}[${w}]))`, legendFormat: '{{policy}}: {{error_type}}' }],
    },
    {
      title: 'Policy evaluation time (p99)',
      type: 'timeseries',
      unit: 's',
      queries: [{ expr: `histogram_quantile(0.99, sum by (policy, le) (rate(${APISERVER_METRICS.mutatingPolicyCheckDuration.name}_bucket${ours}[${w}])))`, legendFormat: '{{policy}}' }],
    },
  ];
}

function reconcilerPanels(settings: MonitoringSettings): DashboardPanel[] {
  const pods = selector(settings.reconcilerSelector);
  const acting = `on (instance) (sidecar_injector_reconciler_leader${pods} == 1)`;
  return [
    {
      title: 'Pods by state (missing or outdated: stale), as the acting reconciler counted them',
      type: 'timeseries',
      unit: 'short',
      queries: [{ expr: `sum by (state) (sidecar_injector_reconciler_pods${pods} and ${acting})`, legendFormat: '{{state}}' }],
    },
    {
      title: 'Repairs per hour, and workloads waiting',
      type: 'timeseries',
      unit: 'short',
      queries: [
        { expr: `sum by (action, result) (increase(sidecar_injector_reconciler_repairs_total${pods}[1h]))`, legendFormat: '{{action}} {{result}}' },
        { expr: `sum by (reason) (sidecar_injector_reconciler_waiting_workloads${pods} and ${acting})`, legendFormat: 'waiting: {{reason}}' },
      ],
    },
  ];
}

/** The dashboard's JSON model, for Grafana's dashboard sidecar (or an import). */
export function dashboardJson(injector: MonitoredInjector, settings: MonitoringSettings): Record<string, unknown> {
  const title = `Sidecar injector ${injector.namespace}/${injector.name}`;
  const panels = dashboardPanels(injector, settings).map((panel, index) => ({
    id: index + 1,
    title: panel.title,
    type: panel.type,
    datasource: DATASOURCE,
    gridPos: { x: (index % 2) * 12, y: Math.floor(index / 2) * 8, w: 12, h: 8 },
    fieldConfig: { defaults: { unit: panel.unit }, overrides: [] },
    options: {},
    targets: panel.queries.map((query, queryIndex) => ({ refId: String.fromCharCode(65 + queryIndex), datasource: DATASOURCE, expr: query.expr, legendFormat: query.legendFormat })),
  }));
  return {
    title,
    uid: `sidecar-injector-${createHash('sha256').update(`${injector.namespace}/${injector.name}`).digest('hex').slice(0, 16)}`,
    tags: ['sidecar-injector'],
    timezone: 'browser',
    schemaVersion: 39,
    version: 1,
    editable: true,
    refresh: '1m',
    time: { from: 'now-6h', to: 'now' },
    templating: { list: [{ name: 'datasource', label: 'Data source', type: 'datasource', query: 'prometheus', hide: 0 }] },
    annotations: { list: [] },
    panels,
  };
}
