// An injection in audit mode through the real HTTPS server (issue 38): the answer carries no patch and
// the warning naming what would have been added; /metrics counts it under reason "audit"; `status`
// lists the pod as `audit` without failing; the reconciler's PolicyReport names it and repairs nothing.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { generateWebhookCertificate, type Injection } from '../../charts/engine';
import { classifyPods } from '../../webhook/fleet/injection-status';
import { statusReport } from '../../webhook/fleet/status-report';
import { formatStatus } from '../../webhook/cli/status-command';
import { resolveInjectorConfig } from '../../webhook/config';
import { POLICY_REPORT_NAME } from '../../webhook/reconciler/policy-report';
import { loadReview } from '../support/recorded-reviews';
import { APP_SPEC, eventsIn, reconcilerHarness } from '../support/reconciler-harness';
import { ENVOY_V1, envoyInjection } from '../support/revision-fixtures';
import { type InProcessWebhook, opsRequest, postAdmission, startInProcess } from '../support/webhook-harness';

const AUDITED: Injection = { ...envoyInjection(ENVOY_V1), mode: 'audit' };
const certificate = generateWebhookCertificate({ serviceName: 'sidecar-injector', namespace: 'sidecar-injector' });

describe('an injection in audit mode, served', () => {
  let webhook: InProcessWebhook;
  before(async () => {
    webhook = await startInProcess({ injections: [AUDITED] }, certificate);
  });
  after(() => webhook.stop());

  test('no patch, the warning names what would be added, and /metrics counts reason="audit"', async () => {
    const series = ['sidecar_injector_injections_total{injection="envoy",reason="audit"}', 'sidecar_injector_pod_warnings_total{injection="envoy",reason="audit"}'];
    const sample = (text: string, name: string) => Number(text.split('\n').find((line) => line.startsWith(`${name} `))?.slice(name.length + 1) ?? 0);
    const before = (await opsRequest(webhook.opsPort, '/metrics')).text;
    for (const uid of ['audit-1', 'audit-2']) {
      const review = loadReview('pod-create-sleep');
      review.request.uid = uid;
      const result = await postAdmission(webhook.port, review, { ca: certificate.caCertificate });
      assert.equal(result.status, 200);
      const response = result.json().response;
      assert.equal(response.patch, undefined);
      assert.equal(response.allowed, true);
      assert.deepEqual(response.warnings, ['audit: injection "envoy" would add containers envoy; it is in audit mode, so nothing was added']);
    }
    const after = (await opsRequest(webhook.opsPort, '/metrics')).text;
    for (const name of series) assert.equal(sample(after, name) - sample(before, name), 2, name);
  });
});

describe('status and the reconciler with an injection in audit mode', () => {
  test('status lists the pods as audit, counts them, and exits as if the injection were not there', () => {
    const config = resolveInjectorConfig({ injections: [AUDITED] });
    const pod = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'web-1', namespace: 'apps' }, spec: APP_SPEC };
    const [status] = classifyPods({ pods: [pod], namespaceLabels: new Map(), owners: new Map() }, { config, description: 'test' });
    assert.equal(status.state, 'none');
    assert.deepEqual(status.injections.map((entry) => entry.state), ['audit']);
    const report = statusReport([status], config);
    assert.equal(report.exitCode, 0);
    assert.equal(report.summary.audit, 1);
    assert.equal(report.workloads[0].audit, 1);
    assert.deepEqual(report.workloads[0].findings.map((finding) => finding.state), ['audit']);
    const text = formatStatus(report, 'test');
    assert.match(text, /envoy: audit mode, would be added to 1 pod \(configured [0-9a-f]{12}; nothing added\)/);
    assert.match(text, /, 1 an injection in audit mode would have changed$/m);
    // Without an audit injection the JSON keeps its shape: no `audit` fields at all.
    const plain = resolveInjectorConfig({ injections: [envoyInjection(ENVOY_V1)] });
    const plainReport = statusReport(classifyPods({ pods: [pod], namespaceLabels: new Map(), owners: new Map() }, { config: plain, description: 'test' }), plain);
    assert.equal('audit' in plainReport.summary, false);
    assert.equal('audit' in plainReport.workloads[0], false);
  });

  test('the reconciler repairs nothing, writes no Event, and its report names what audit mode would add', async () => {
    const { kube, leader } = reconcilerHarness({}, { injections: [AUDITED] });
    kube.served.add('wgpolicyk8s.io/v1alpha2');
    kube.deployment('apps', 'web', 3, APP_SPEC);
    const pods = kube.list('', 'pods', 'apps');
    assert.deepEqual(pods.map((pod) => pod.spec), [APP_SPEC, APP_SPEC, APP_SPEC].map((spec) => ({ ...spec })), 'the pods are as written');
    const { reconciler } = await leader('reconciler-a');
    const outcome = await reconciler.pass();
    assert.deepEqual([outcome.restarted, outcome.waiting], [[], []]);
    assert.deepEqual(eventsIn(kube, 'apps'), []);
    const report = kube.get('wgpolicyk8s.io', 'policyreports', 'apps', POLICY_REPORT_NAME);
    assert.deepEqual(report.summary, { pass: 0, fail: 0, warn: 3, error: 0, skip: 0 });
    assert.equal(report.results[0].result, 'warn');
    assert.equal(report.results[0].properties.audit, '3');
    assert.equal(report.results[0].message, 'envoy (audit mode) would be added to 3 pods');
  });
});
