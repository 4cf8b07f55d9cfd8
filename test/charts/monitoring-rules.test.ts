// The monitoring's PromQL, judged as Prometheus will read it: every expression of every rule and
// dashboard panel parses (the PromQL grammar of Prometheus' own editor, @prometheus-io/lezer-promql),
// and every series it selects is one the webhook or the reconciler registers (read from their code's
// registries), one the apiserver exports (the list in charts/monitoring/apiserver-metrics.ts, checked
// against real apiservers by test/e2e/monitoring-metrics.e2e.test.ts), `up`, or a recording rule of the
// same file. Each alert carries what the issue asks of it.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { apiserverSeriesNames } from '../../charts/monitoring/apiserver-metrics';
import { allVariants, exportedSeriesNames, expressions, promqlSyntaxErrors, selectedMetricNames } from '../support/monitoring-variants';

const variants = allVariants();

describe('the monitoring\'s PromQL', () => {
  test('every rule and every dashboard query of every variant parses', () => {
    const broken = variants.flatMap(expressions).flatMap(({ where, expr }) => promqlSyntaxErrors(expr).map((error) => `${where}: ${error}\n    ${expr}`));
    assert.deepEqual(broken, [], 'expressions PromQL cannot parse');
    assert.ok(variants.flatMap(expressions).length > 100, 'the variants hold the rules and panels');
  });

  test('every series a rule or panel selects is exported by the webhook, the reconciler or the apiserver, or recorded by the rules', async () => {
    const ours = await exportedSeriesNames();
    const apiserver = new Set(apiserverSeriesNames());
    const unknown: string[] = [];
    for (const variant of variants) {
      const recorded = new Set(variant.rules.groups.flatMap((group) => group.rules.flatMap((rule) => ('record' in rule ? [rule.record] : []))));
      for (const { where, expr } of expressions(variant)) {
        const names = selectedMetricNames(expr);
        assert.ok(names.length > 0, `${where} selects no series: ${expr}`);
        for (const name of names) if (!ours.has(name) && !apiserver.has(name) && !recorded.has(name) && name !== 'up') unknown.push(`${where}: ${name}`);
      }
    }
    assert.deepEqual(unknown, [], 'series nobody exports');
  });

  test('the policy rules of 1.32 and 1.33 (v1alpha1) select only series those apiservers export', () => {
    const variant = variants.find((candidate) => candidate.name === 'policies v1alpha1, Fail')!;
    const exported132 = new Set(apiserverSeriesNames(32));
    for (const { where, expr } of expressions(variant)) {
      for (const name of selectedMetricNames(expr)) assert.ok(exported132.has(name), `${where} selects ${name}, which kube-apiserver 1.32 does not export`);
    }
  });
});

describe('every alert', () => {
  test('has a summary, a description naming where, a runbook_url into docs/runbooks/alerts.md, a severity and the injector', () => {
    for (const variant of variants) {
      for (const { rule, severityReason, shapeReason } of variant.rules.alerts) {
        const where = `${variant.name}: ${rule.alert}`;
        assert.ok(rule.annotations.summary.length > 10, `${where} has a summary`);
        assert.match(rule.annotations.description, /\{\{ \$labels\.\w+ \}\}|\(injector /, `${where}'s description names where`);
        assert.match(rule.annotations.runbook_url, new RegExp(`/docs/runbooks/alerts\\.md#${rule.alert.toLowerCase()}$`), `${where} links its runbook section`);
        assert.ok(['critical', 'warning'].includes(rule.labels.severity), `${where} has a severity`);
        assert.equal(rule.labels.sidecar_injector, 'sidecar-injector/sidecar-injector', `${where} names its injector`);
        assert.ok(severityReason.length > 10, `${where} says why its severity`);
        assert.ok(shapeReason.length > 10, `${where} says why its shape`);
      }
    }
  });

  test('per webhook entry, the severity follows the entry\'s own failurePolicy', () => {
    const ignore = variants.find((variant) => variant.name === 'webhook, Ignore, reconciler')!;
    const fail = variants.find((variant) => variant.name === 'webhook, Fail, readiness gate')!;
    const severities = (variant: typeof ignore, alert: string) => variant.rules.alerts.filter(({ rule }) => rule.alert === alert).map(({ rule }) => rule.labels.severity);
    assert.deepEqual(severities(ignore, 'SidecarInjectorWebhookFailingOpen'), ['warning']);
    assert.deepEqual(severities(ignore, 'SidecarInjectorWebhookRefusingAdmissions'), [], 'an Ignore entry never refuses');
    assert.deepEqual(severities(fail, 'SidecarInjectorWebhookRefusingAdmissions'), ['warning', 'critical', 'warning', 'critical'], 'the pods entry and the sidecars-ready entry, both Fail: a ticket for one refusal, a page once they go on');
    assert.deepEqual(severities(fail, 'SidecarInjectorWebhookFailingOpen'), []);
    assert.deepEqual(severities(fail, 'SidecarInjectorWebhookTargetMissing'), ['critical']);
    assert.deepEqual(severities(ignore, 'SidecarInjectorWebhookTargetMissing'), ['warning']);
  });

  test('every webhook entry as synthesized has its alerts, with its own name and timeout', () => {
    const fail = variants.find((variant) => variant.name === 'webhook, Fail, readiness gate')!;
    const refusing = fail.rules.alerts.filter(({ rule }) => rule.alert === 'SidecarInjectorWebhookRefusingAdmissions').map(({ rule }) => /name="([^"]+)"/.exec(rule.expr)![1]);
    assert.deepEqual([...new Set(refusing)], ['inject.sidecar-injector.sidecar-injector.svc', 'sidecars-ready.sidecar-injector.sidecar-injector.svc']);
    const slow = fail.rules.alerts.find(({ rule }) => rule.alert === 'SidecarInjectorWebhookSlow')!.rule;
    assert.match(slow.expr, /le="2\.5"/, 'with timeoutSeconds 10, the last bound below it');
    const revisions = variants.find((variant) => variant.name === 'webhook, revisions')!;
    const entries = revisions.rules.alerts.filter(({ rule }) => rule.alert === 'SidecarInjectorWebhookFailingOpen').map(({ rule }) => /name="([^"]+)"/.exec(rule.expr)![1]);
    assert.ok(entries.length >= 3 && entries.every((name) => name.endsWith('.sidecar-injector.sidecar-injector.svc')), `one per revision entry: ${entries.join(', ')}`);
    assert.ok(revisions.rules.alerts.every(({ rule }) => !rule.expr.includes('apiserver_') || rule.expr.includes('job="apiserver"')), 'apiServerSelector on every apiserver series');
  });
});
