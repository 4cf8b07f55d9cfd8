// The `monitoring` prop as users meet it: what the default app carries (the rule file and dashboard as
// plain ConfigMaps, scrape annotations, nothing needing a CRD), the Prometheus Operator's objects only
// when asked, and a synth failure naming the prop for every bad value.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { parse } from 'yaml';
import { SidecarInjectorPropsError, type MonitoringProps, type SidecarInjectorProps } from '../../charts/engine';
import { assertValidManifest } from '../support/openapi-validator';
import { ENVOY } from '../support/monitoring-variants';
import { type Manifest, describeManifest, synthChart, synthDefaultAppToTemp } from '../support/synth-helpers';

const defaultApp = synthDefaultAppToTemp();
const byName = (manifests: readonly Manifest[], kind: string, name: string) => manifests.find((manifest) => manifest.kind === kind && manifest.metadata.name === name);
/** The API groups a stock cluster serves without any CRD. */
const BUILT_IN_GROUPS = new Set(['v1', 'apps/v1', 'policy/v1', 'networking.k8s.io/v1', 'admissionregistration.k8s.io/v1', 'rbac.authorization.k8s.io/v1']);

describe('the default app\'s monitoring', () => {
  const rules = byName(defaultApp.manifests, 'ConfigMap', 'sidecar-injector-prometheus-rules');
  const dashboard = byName(defaultApp.manifests, 'ConfigMap', 'sidecar-injector-grafana-dashboard');

  test('carries the rule file and the dashboard as plain ConfigMaps, schema-valid, and nothing that needs a CRD', () => {
    assert.ok(rules && dashboard, `the ConfigMaps among ${defaultApp.manifests.map(describeManifest).join(', ')}`);
    assertValidManifest(rules);
    assertValidManifest(dashboard);
    const groups = parse(rules.data['sidecar-injector-sidecar-injector.rules.yaml']).groups;
    assert.deepEqual(groups.map((group: { name: string }) => group.name), ['sidecar-injector.sidecar-injector.sidecar-injector.slo', 'sidecar-injector.sidecar-injector.sidecar-injector.alerts']);
    const outsideStock = defaultApp.manifests.filter((manifest) => !BUILT_IN_GROUPS.has(manifest.apiVersion)).map(describeManifest);
    assert.deepEqual(outsideStock, [], 'objects a stock cluster cannot take without a CRD');
  });

  test('labels the dashboard for Grafana\'s sidecar, with the panels the platform team looks at', () => {
    assert.equal(dashboard!.metadata.labels.grafana_dashboard, '1');
    const model = JSON.parse(dashboard!.data['sidecar-injector-sidecar-injector.json']);
    assert.deepEqual(model.templating.list.map((variable: { name: string; type: string }) => `${variable.name}:${variable.type}`), ['datasource:datasource']);
    const titles: string[] = model.panels.map((panel: { title: string }) => panel.title);
    for (const wanted of [/by decision/, /Latency as the apiserver/, /Latency as the webhook/, /Failed open and refused/, /by injection/, /Certificate time left/, /Connections closed/, /Memory budget/, /SLO/]) {
      assert.ok(titles.some((title) => wanted.test(title)), `a panel ${wanted} among ${titles.join('; ')}`);
    }
    assert.ok(model.panels.every((panel: { targets: { expr: string }[] }) => panel.targets.length > 0 && panel.targets.every((target) => target.expr.length > 0)));
  });

  test('annotates the webhook pods for a plain Prometheus\'s kubernetes-pods job, on the ops port', () => {
    const annotations = byName(defaultApp.manifests, 'Deployment', 'sidecar-injector')!.spec.template.metadata.annotations;
    const opsPort = byName(defaultApp.manifests, 'Deployment', 'sidecar-injector')!.spec.template.spec.containers[0].ports.find((port: { name: string }) => port.name === 'ops').containerPort;
    assert.deepEqual([annotations['prometheus.io/scrape'], annotations['prometheus.io/port'], annotations['prometheus.io/path']], ['true', String(opsPort), '/metrics']);
  });
});

describe('the monitoring prop', () => {
  test('is off unless given: no ConfigMaps, no annotations', () => {
    const { manifests } = synthChart({ injections: [ENVOY] });
    assert.equal(manifests.filter((manifest) => manifest.kind === 'ConfigMap').length, 1, 'the config alone');
    assert.equal(byName(manifests, 'Deployment', 'sidecar-injector')!.spec.template.metadata.annotations['prometheus.io/scrape'], undefined);
  });

  test('makes a PrometheusRule with the same groups and a PodMonitor of the webhook and reconciler pods only when the Operator is asked for', () => {
    const { manifests } = synthChart({ injections: [ENVOY], reconciler: {}, monitoring: { prometheusOperator: { labels: { release: 'kube-prometheus-stack' } } } });
    const rule = byName(manifests, 'PrometheusRule', 'sidecar-injector')!;
    const file = parse(byName(manifests, 'ConfigMap', 'sidecar-injector-prometheus-rules')!.data['sidecar-injector-sidecar-injector.rules.yaml']);
    assert.equal(rule.apiVersion, 'monitoring.coreos.com/v1');
    assert.deepEqual(rule.spec.groups, file.groups);
    assert.equal(rule.metadata.labels.release, 'kube-prometheus-stack');
    const monitor = byName(manifests, 'PodMonitor', 'sidecar-injector')!;
    assert.deepEqual(monitor.spec.selector.matchExpressions, [{ key: 'sidecar-injector.io/deployment', operator: 'In', values: ['sidecar-injector', 'sidecar-injector-reconciler'] }]);
    for (const name of ['sidecar-injector', 'sidecar-injector-reconciler']) {
      const template = byName(manifests, 'Deployment', name)!.spec.template;
      assert.equal(template.metadata.labels['sidecar-injector.io/deployment'], name);
      assert.ok(template.spec.containers[0].ports.some((port: { name: string }) => port.name === monitor.spec.podMetricsEndpoints[0].port), `${name} has the port the PodMonitor scrapes`);
      assert.equal(template.metadata.annotations['prometheus.io/scrape'], 'true', `${name} is annotated too`);
    }
  });

  test('with the policy backend alone: the namespace, the policy alerts, their SLO and dashboard, and no PodMonitor (no pod runs)', () => {
    const { manifests } = synthChart({ injections: [ENVOY], backend: 'admissionPolicy', monitoring: { prometheusOperator: {} } });
    assert.ok(byName(manifests, 'Namespace', 'sidecar-injector'), 'the ConfigMaps need their namespace');
    assert.equal(byName(manifests, 'PodMonitor', 'sidecar-injector'), undefined);
    const groups = byName(manifests, 'PrometheusRule', 'sidecar-injector')!.spec.groups;
    assert.deepEqual(groups.flatMap((group: { rules: { alert?: string }[] }) => group.rules.flatMap((rule) => rule.alert ?? [])), [
      'SidecarInjectorErrorBudgetBurningFast',
      'SidecarInjectorErrorBudgetBurningSlowly',
      'SidecarInjectorPolicyErrors',
    ]);
    const recorded = groups.flatMap((group: { rules: { record?: string }[] }) => group.rules.flatMap((rule) => rule.record ?? []));
    assert.ok(recorded.length === 7 && recorded.every((name: string) => name.startsWith('sidecar_injector:policy_slo_errors:ratio_rate')), `the policies' SLO ratios: ${recorded.join(', ')}`);
  });

  const failures: [string, MonitoringProps, Partial<SidecarInjectorProps>, RegExp][] = [
    ['monitoring.alertAfter', { alertAfter: '5 minutes' }, {}, /is not a Prometheus duration/],
    ['monitoring.evaluationInterval', { evaluationInterval: '0s' }, {}, /longer than 0s/],
    ['monitoring.rateWindow', { rateWindow: '30s' }, {}, /shorter than 1m/],
    ['monitoring.slo.objective', { slo: { objective: 0.9 } }, {}, /above 0\.93 and below 1/],
    ['monitoring.slo.latencySeconds', { slo: { latencySeconds: 0.3 } }, {}, /a bound of the apiserver's webhook latency histogram/],
    ['monitoring.slo.latencySeconds', { slo: { latencySeconds: 2.5 } }, { timeoutSeconds: 2 }, /below timeoutSeconds \(2\)/],
    ['monitoring.webhookSelector', { webhookSelector: 'namespace=x' }, {}, /not a list of PromQL label matchers/],
    ['monitoring.runbookBaseUrl', { runbookBaseUrl: 'https://example.com/runbooks' }, {}, /ending in "\/"/],
    ['monitoring.alertLabels["team-name"]', { alertLabels: { 'team-name': 'x' } }, {}, /not a Prometheus label name/],
    ['monitoring.alertLabels["severity"]', { alertLabels: { severity: 'x' } }, {}, /set by the rules themselves/],
    ['monitoring.dashboardLabels["grafana dashboard"]', { dashboardLabels: { 'grafana dashboard': '1' } }, {}, /name part must consist/],
  ];
  for (const [path, monitoring, other, message] of failures) {
    test(`fails synth naming ${path} for ${JSON.stringify(monitoring)}`, () => {
      assert.throws(
        () => synthChart({ injections: [ENVOY], ...other, monitoring }),
        (error: unknown) => {
          assert.ok(error instanceof SidecarInjectorPropsError, String(error));
          const issue = error.issues.find((candidate) => candidate.path === path);
          assert.ok(issue, `an issue at ${path} among ${JSON.stringify(error.issues)}`);
          assert.match(issue.message, message);
          return true;
        },
      );
    });
  }
});
