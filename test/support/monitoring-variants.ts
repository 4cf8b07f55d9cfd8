// The injectors whose monitoring the tests judge: each backend, both failure policies, revisions, the
// readiness gate and the reconciler, built as users build them (SidecarInjector props), and what the
// webhook and reconciler code actually registers as series names.

import { Registry, collectDefaultMetrics } from 'prom-client';
import { parser } from '@prometheus-io/lezer-promql';
import type { Injection, SidecarInjectorProps } from '../../charts/engine';
import type { MonitoringRules } from '../../charts/monitoring/monitoring-rules';
import type { DashboardPanel } from '../../charts/monitoring/dashboard';
import { memorySizing } from '../../webhook/config';
import { reconcilerMetrics } from '../../webhook/reconciler/reconciler-process';
import { MemoryBudget } from '../../webhook/server/memory-budget';
import { WebhookMetrics } from '../../webhook/server/metrics';
import { buildChart } from './synth-helpers';

const RESTRICTED = { runAsNonRoot: true, allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] }, seccompProfile: { type: 'RuntimeDefault' } };
export const ENVOY: Injection = { name: 'envoy', trigger: { type: 'always' }, containers: [{ name: 'envoy', image: 'envoyproxy/envoy:v1.30.1', securityContext: RESTRICTED }] };
const gatedEnvoy: Injection = { ...ENVOY, readinessGate: true };

/** The variants, by a name the tests print. */
export const MONITORING_VARIANTS: Record<string, SidecarInjectorProps> = {
  'webhook, Ignore': { injections: [ENVOY], monitoring: {} },
  'webhook, Ignore, reconciler': { injections: [ENVOY], reconciler: {}, monitoring: {} },
  'webhook, Fail, readiness gate': { injections: [gatedEnvoy], failurePolicy: 'Fail', timeoutSeconds: 10, monitoring: {} },
  'webhook, revisions': {
    revisions: [{ name: 'r1', injections: [ENVOY] }, { name: 'r2', injections: [ENVOY] }],
    tags: [{ name: 'stable', revision: 'r1', default: true }],
    monitoring: { apiServerSelector: 'job="apiserver"' },
  },
  'policies v1, Fail, reconciler': { injections: [ENVOY], backend: 'admissionPolicy', failurePolicy: 'Fail', reconciler: {}, monitoring: {} },
  'policies v1beta1, Ignore': { injections: [ENVOY], backend: 'admissionPolicy', admissionPolicyApiVersion: 'v1beta1', monitoring: {} },
  'policies v1alpha1, Fail': { injections: [ENVOY], backend: 'admissionPolicy', admissionPolicyApiVersion: 'v1alpha1', failurePolicy: 'Fail', monitoring: {} },
};

export interface MonitoringVariant {
  readonly name: string;
  readonly rules: MonitoringRules;
  readonly panels: DashboardPanel[];
}

export function monitoringVariant(name: string, props: SidecarInjectorProps = MONITORING_VARIANTS[name]): MonitoringVariant {
  const { injector } = buildChart(props);
  const monitoring = injector.monitoring!;
  return { name, rules: monitoring.rules(), panels: monitoring.panels() };
}

export const allVariants = (): MonitoringVariant[] => Object.keys(MONITORING_VARIANTS).map((name) => monitoringVariant(name));

/** Every PromQL expression of a variant: each rule's and each panel query's, with where it comes from. */
export function expressions(variant: MonitoringVariant): { where: string; expr: string }[] {
  const fromRules = variant.rules.groups.flatMap((group) =>
    group.rules.map((rule) => ({ where: `${variant.name}: ${group.name} ${'alert' in rule ? rule.alert : rule.record}`, expr: rule.expr })),
  );
  const fromPanels = variant.panels.flatMap((panel) => panel.queries.map((query) => ({ where: `${variant.name}: panel "${panel.title}"`, expr: query.expr })));
  return [...fromRules, ...fromPanels];
}

/** The syntax errors of a PromQL expression, as positions in it (none: it parses). */
export function promqlSyntaxErrors(expr: string): string[] {
  const errors: string[] = [];
  parser.parse(expr).iterate({
    enter: (node) => {
      if (node.type.isError) errors.push(`at ${node.from}: ${JSON.stringify(expr.slice(Math.max(0, node.from - 20), node.from + 20))}`);
    },
  });
  return errors;
}

/** The metric names an expression selects (each vector selector's name). */
export function selectedMetricNames(expr: string): string[] {
  const names: string[] = [];
  parser.parse(expr).iterate({
    enter: (node) => {
      if (node.name === 'VectorSelector') {
        const identifier = node.node.getChild('Identifier');
        if (identifier) names.push(expr.slice(identifier.from, identifier.to));
      }
    },
  });
  return names;
}

/** The series names the webhook and the reconciler register, read from their own registries (histograms as _bucket, _sum, _count). */
export async function exportedSeriesNames(): Promise<Set<string>> {
  const webhook = new WebhookMetrics(new MemoryBudget(memorySizing(192 * 1024 * 1024)), { droppedLines: 0 });
  webhook.watchConnections({ size: 0, closed: { evicted: 0, displaced: 0, over_share: 0, silent: 0, slow_body: 0 } });
  webhook.watchNamespaceDefaults({ size: { entries: 0, bytes: 0, overflowed: 0, synced: false } });
  webhook.serveCertificateUntil(new Date());
  const reconciler = new Registry();
  collectDefaultMetrics({ register: reconciler });
  reconcilerMetrics(reconciler);
  const names = new Set<string>();
  for (const registry of [webhook.registry, reconciler]) {
    for (const metric of await registry.getMetricsAsJSON()) {
      if (String(metric.type) === 'histogram') for (const suffix of ['_bucket', '_sum', '_count']) names.add(`${metric.name}${suffix}`);
      else names.add(metric.name);
    }
  }
  return names;
}
