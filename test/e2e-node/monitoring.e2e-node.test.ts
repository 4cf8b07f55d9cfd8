// npm run e2e:node, the monitoring (issue 47): on its own one-node cluster (support/node-suite.ts),
// Debian's Prometheus and Alertmanager in the cluster's network namespace (support/prometheus.ts),
// scraping the apiserver, the webhook pods and the reconciler with the synthesized rule file, its
// evaluation interval and `for:` shortened through the `monitoring` prop. Each fault is made as it
// happens in a cluster, and each alert is awaited from Prometheus' own view (firing), then in
// Alertmanager, then resolved after the repair; the times are printed.
//   webhook backend: the webhook scaled to 0 under Ignore while pods are created (fail-open), the same
//   under Fail (refused), a ConfigMap edit the webhook refuses, a certificate inside its renewal window;
//   policy backend: a policy whose CEL fails at runtime (a mutation added to one of ours, test only);
//   both: every dashboard panel's queries return data.
// And one with the props' defaults (issue 57): one burst of three pods admitted bare while the webhook
// is scaled to 0, the webhook back at once: the fail-open alert fires anyway, reaches Alertmanager, stays
// firing longer than Alertmanager's group_interval (5m) and resolves on its own (about 12 minutes).
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { parseAllDocuments } from 'yaml';
import { policyApiVersionFor } from '../e2e/support/control-plane';
import { type NodeCluster, minorVersion } from './support/node-cluster';
import { REPO_ROOT, kubectl, listPods } from './support/node-checks';
import { ENABLED, INJECTOR_NAMESPACE, WEBHOOK, app, applyConfig, binaries, certs, namespace, progress, skip as nodeSkip, startSuite, stopSuite, work } from './support/node-suite';
import { MonitoringStack, type PrometheusAlert, findMonitoringBinaries } from './support/prometheus';

const monitoringBinaries = findMonitoringBinaries();
const skip = nodeSkip || (typeof monitoringBinaries === 'string' ? monitoringBinaries : false);
if (skip && !nodeSkip) console.log(`npm run e2e:node monitoring ${skip}`);
/** A scenario of one backend is declared on that backend's run only: the policies have no webhook to scale or reload, the webhook no policy whose CEL can fail. */
const forWebhook = (WEBHOOK ? test : () => undefined) as typeof test;
const forPolicies = (WEBHOOK ? () => undefined : test) as typeof test;

/** Short enough to see each alert within a minute or two, through the props a platform team sets. */
const MONITORING = { evaluationInterval: '5s', alertAfter: '10s', keepFiringFor: '10s', rateWindow: '1m', staleAfter: '1m' };
const RECONCILER = { missing: 'restart', outdated: 'report', intervalSeconds: 5 };
const TRAFFIC_NAMESPACE = 'monitoring-traffic';
const minor = nodeSkip ? 0 : minorVersion((binaries as { kubeApiserver: string }).kubeApiserver);
const policyApiVersion = WEBHOOK || nodeSkip ? undefined : policyApiVersionFor(`v1.${minor}`);
// 1.32 and 1.33 count a failing policy only as the plugin's refusals, which only Fail makes (docs/monitoring.md).
const failurePolicy = policyApiVersion === 'v1alpha1' ? 'Fail' : undefined;

let cluster: NodeCluster;
let stack: MonitoringStack;
let base = '';
const timings: string[] = [];

/** The default app with the reconciler and fast monitoring, synthesized to a directory of its own. */
function synthVariant(name: string, options: { failurePolicy?: 'Ignore' | 'Fail'; certificateStore?: string; now?: Date; monitoring?: Record<string, string> } = {}): string {
  const outdir = path.join(work, `dist-monitoring-${name}`);
  if (fs.existsSync(outdir)) return outdir;
  const appOptions = {
    outdir,
    certificateStore: options.certificateStore ?? certs,
    backend: WEBHOOK ? undefined : 'admissionPolicy',
    admissionPolicyApiVersion: policyApiVersion,
    reconciler: RECONCILER,
    monitoring: options.monitoring ?? MONITORING,
    failurePolicy: options.failurePolicy ?? failurePolicy,
  };
  const script = path.join(work, `monitoring-${name}.ts`);
  fs.writeFileSync(
    script,
    `import { synthDefaultApp } from ${JSON.stringify(path.join(REPO_ROOT, 'app/default-app'))};\n` +
      `synthDefaultApp({ ...${JSON.stringify(appOptions)}${options.now ? `, now: new Date(${JSON.stringify(options.now.toISOString())})` : ''} });\n`,
  );
  const result = spawnSync(process.execPath, ['--import', 'tsx', script], { cwd: REPO_ROOT, encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`synth of ${name} exited ${result.status}:\n${result.stderr}${result.stdout}`);
  return outdir;
}

/** A ConfigMap's only data value, from a synthesized output. */
function configMapData(outdir: string, name: string): string {
  for (const file of fs.readdirSync(outdir).filter((candidate) => candidate.endsWith('.k8s.yaml'))) {
    for (const document of parseAllDocuments(fs.readFileSync(path.join(outdir, file), 'utf8'))) {
      const object = document.toJS();
      if (object?.kind === 'ConfigMap' && object.metadata.name === name) return Object.values(object.data as Record<string, string>)[0];
    }
  }
  throw new Error(`no ConfigMap ${name} in ${outdir}`);
}

/** Pods created with dryRun=All: admitted as real ones are (the webhook called, the policies run), never scheduled. */
async function createPods(count = 3): Promise<number[]> {
  const pod = { apiVersion: 'v1', kind: 'Pod', metadata: { generateName: 'traffic-' }, spec: { containers: [app('app')] } };
  const statuses: number[] = [];
  for (let i = 0; i < count; i++) statuses.push((await cluster.plane.request('POST', `/api/v1/namespaces/${TRAFFIC_NAMESPACE}/pods?dryRun=All`, pod)).status);
  return statuses;
}

const seconds = (since: number) => Number(((performance.now() - since) / 1000).toFixed(1));

/**
 * Makes a fault, waits until `alertname` fires in Prometheus (and reaches Alertmanager), repairs, and
 * waits until it is neither firing nor pending; pods are created all along, as in a cluster.
 */
async function rehearse(scenario: string, alertname: string, fault: () => Promise<void> | void, repair: () => Promise<void> | void, severity?: string): Promise<PrometheusAlert> {
  const ofSeverity = (alert: { labels: Record<string, string> }) => severity === undefined || alert.labels.severity === severity;
  await cluster.until(`${alertname} quiet before the fault`, async () => (await stack.alerts(alertname)).length === 0, 240_000);
  const faulted = performance.now();
  await fault();
  let firing: PrometheusAlert | undefined;
  await cluster.until(`${alertname} firing (${scenario})`, async () => {
    await createPods();
    firing = (await stack.alerts(alertname)).find((alert) => alert.state === 'firing' && ofSeverity(alert));
    return firing !== undefined;
  }, 300_000);
  const toFiring = seconds(faulted);
  await cluster.until(`${alertname} in Alertmanager`, async () => (await stack.received(alertname)).some(ofSeverity), 60_000);
  const received = (await stack.received(alertname)).filter(ofSeverity);
  const repaired = performance.now();
  await repair();
  await cluster.until(`${alertname} resolved (${scenario})`, async () => {
    await createPods();
    return (await stack.alerts(alertname)).length === 0;
  }, 300_000);
  const line = `${scenario}: ${alertname} (${firing!.labels.severity}) fault→firing ${toFiring} s, repair→resolved ${seconds(repaired)} s; Alertmanager got ${JSON.stringify(received[0].labels)}`;
  timings.push(line);
  progress(line);
  return firing!;
}

before(async () => {
  if (skip) return;
  cluster = await startSuite();
  stack = await MonitoringStack.start(cluster, monitoringBinaries as Exclude<typeof monitoringBinaries, string>, path.join(work, 'monitoring'));
  base = synthVariant('base');
  await applyConfig(base);
  kubectl(cluster, ['-n', INJECTOR_NAMESPACE, 'rollout', 'status', 'deploy/sidecar-injector-reconciler', '--timeout=180s']);
  await stack.loadRules('sidecar-injector.rules.yaml', configMapData(base, 'sidecar-injector-prometheus-rules'));
  namespace(TRAFFIC_NAMESPACE, ENABLED);
});

after(async () => {
  if (timings.length > 0) progress(`monitoring on kube-apiserver 1.${minor}, ${WEBHOOK ? 'webhook' : `policies ${policyApiVersion}`}:\n  ${timings.join('\n  ')}`);
  await stack?.stop();
  await stopSuite();
});

test('Prometheus loads the synthesized rules and scrapes the apiserver, the webhook pods and the reconciler', { skip }, async () => {
  const webhookPods = 'namespace="sidecar-injector", pod=~"sidecar-injector-[a-z0-9]+-[a-z0-9]+"';
  const reconcilerPods = 'namespace="sidecar-injector", pod=~"sidecar-injector-reconciler-[a-z0-9]+-[a-z0-9]+"';
  const up = async (selector: string) => Number((await stack.query(`count(up{${selector}} == 1)`))[0]?.value[1] ?? 0);
  await cluster.until('the apiserver, the webhook pods and the reconciler scraped', async () => (await up('job="apiserver"')) === 1 && (await up(reconcilerPods)) === 2 && (!WEBHOOK || (await up(webhookPods)) === 2), 180_000);
  await cluster.until('every rule evaluated', async () => {
    const rules = (await stack.ruleGroups()).flatMap((group) => group.rules);
    return rules.length > 0 && rules.every((rule) => rule.health === 'ok');
  }, 60_000);
  const groups = await stack.ruleGroups();
  progress(`rules loaded: ${groups.map((group) => `${group.name} (${group.rules.length})`).join(', ')}`);
  assert.ok(groups.some((group) => group.name.endsWith('.alerts')), stack.logs());
});

forWebhook('the props\' defaults: one burst of three pods admitted bare, the webhook back at once: the fail-open alert fires, reaches Alertmanager, outlasts its group_interval and resolves on its own', { skip }, async () => {
  const alertname = 'SidecarInjectorWebhookFailingOpen';
  const defaults = synthVariant('defaults', { monitoring: {} });
  const rules = configMapData(defaults, 'sidecar-injector-prometheus-rules');
  assert.doesNotMatch(rules, /^\s+interval:/m, 'the defaults set no evaluation interval');
  await stack.loadRules('sidecar-injector.rules.yaml', rules);
  try {
    await cluster.until('the defaults\' rules loaded and evaluated', async () => {
      const loaded = (await stack.ruleGroups()).flatMap((group) => group.rules);
      return loaded.some((rule) => rule.name === alertname) && loaded.every((rule) => rule.health === 'ok');
    }, 60_000);
    await cluster.until(`${alertname} quiet before the fault`, async () => (await stack.alerts(alertname)).length === 0, 900_000);
    const entry = 'inject.sidecar-injector.sidecar-injector.svc';
    const seriesBefore = (await stack.query(`apiserver_admission_webhook_fail_open_count{name="${entry}"}`)).length > 0;
    kubectl(cluster, ['-n', INJECTOR_NAMESPACE, 'scale', 'deploy/sidecar-injector', '--replicas=0']);
    await cluster.until('no webhook pod', async () => (await listPods(cluster, INJECTOR_NAMESPACE, 'app.kubernetes.io/name=sidecar-injector')).length === 0, 120_000);
    // The fault: one burst of three pods, admitted without their sidecars (Ignore), then nothing.
    const burst = performance.now();
    const statuses = await createPods(3);
    assert.ok(statuses.every((status) => status < 300), `the three pods admitted under Ignore, got HTTP ${statuses.join(', ')}`);
    // The repair, at once: the outage is over before any alert could have waited out a `for:`.
    const repaired = performance.now();
    kubectl(cluster, ['-n', INJECTOR_NAMESPACE, 'scale', 'deploy/sidecar-injector', '--replicas=2']);
    kubectl(cluster, ['-n', INJECTOR_NAMESPACE, 'rollout', 'status', 'deploy/sidecar-injector', '--timeout=180s']);
    let firing: PrometheusAlert | undefined;
    await cluster.until(`${alertname} firing after one burst, with the defaults`, async () => {
      firing = (await stack.alerts(alertname)).find((alert) => alert.state === 'firing');
      return firing !== undefined;
    }, 240_000);
    const toFiring = seconds(burst);
    assert.equal(firing!.labels.name, entry);
    assert.equal(firing!.labels.severity, 'warning');
    assert.ok(firing!.annotations.description.includes('pods run without an injection they should have'), `the reconciler's count in the description: ${firing!.annotations.description}`);
    await cluster.until(`${alertname} in Alertmanager`, async () => (await stack.received(alertname)).length > 0, 60_000);
    await cluster.until(`${alertname} resolved on its own, with the defaults`, async () => (await stack.alerts(alertname)).length === 0, 900_000);
    const toResolved = seconds(repaired);
    // How long it fired, from Prometheus' own ALERTS series (one sample per evaluation, 5 s apart here).
    const [firingFor] = await stack.query(`count_over_time(ALERTS{alertname="${alertname}", alertstate="firing", name="${entry}"}[30m]) * 5`);
    const firedSeconds = Number(firingFor?.value[1] ?? 0);
    assert.ok(firedSeconds >= 300, `${alertname} fired ${firedSeconds} s: it must outlast Alertmanager's group_interval (300 s) to be notified into a group that has notified already`);
    const line =
      `defaults, one burst of 3 pods admitted bare (${seriesBefore ? 'the series existed' : 'the series created by the burst'}): ${alertname} (warning) ` +
      `burst→firing ${toFiring} s, repair→resolved ${toResolved} s, fired ${firedSeconds} s`;
    timings.push(line);
    progress(line);
  } finally {
    await stack.loadRules('sidecar-injector.rules.yaml', configMapData(base, 'sidecar-injector-prometheus-rules'));
  }
});

forWebhook('Ignore: the webhook scaled to 0 while pods are created: the fail-open alert fires with the webhook\'s name and runbook, and resolves once it is back', { skip }, async () => {
  let targetMissing = false;
  const firing = await rehearse(
    'webhook scaled to 0 under Ignore',
    'SidecarInjectorWebhookFailingOpen',
    async () => {
      kubectl(cluster, ['-n', INJECTOR_NAMESPACE, 'scale', 'deploy/sidecar-injector', '--replicas=0']);
      await cluster.until('no webhook pod', async () => (await listPods(cluster, INJECTOR_NAMESPACE, 'app.kubernetes.io/name=sidecar-injector')).length === 0, 120_000);
    },
    async () => {
      // The fail-open alert fires on the first fail-open (for: 0m), before the target alert's `for:` has
      // run out: the webhook stays down until that one fires too.
      await cluster.until('SidecarInjectorWebhookTargetMissing firing while no webhook pod runs', async () => {
        targetMissing = (await stack.alerts('SidecarInjectorWebhookTargetMissing')).some((alert) => alert.state === 'firing');
        return targetMissing;
      }, 300_000);
      kubectl(cluster, ['-n', INJECTOR_NAMESPACE, 'scale', 'deploy/sidecar-injector', '--replicas=2']);
      kubectl(cluster, ['-n', INJECTOR_NAMESPACE, 'rollout', 'status', 'deploy/sidecar-injector', '--timeout=180s']);
    },
  );
  assert.equal(firing.labels.name, 'inject.sidecar-injector.sidecar-injector.svc');
  assert.equal(firing.labels.severity, 'warning');
  assert.match(firing.annotations.runbook_url, /docs\/runbooks\/alerts\.md#sidecarinjectorwebhookfailingopen$/);
  assert.match(firing.annotations.description, /inject\.sidecar-injector\.sidecar-injector\.svc/);
  assert.ok(targetMissing, 'SidecarInjectorWebhookTargetMissing fired too while no webhook pod ran');
});

forWebhook('a ConfigMap edit the webhook refuses: the reload alert fires, and resolves once the config is good again', { skip }, async () => {
  const firing = await rehearse(
    'config.json edited to one the webhook refuses',
    'SidecarInjectorConfigReloadFailing',
    () => void kubectl(cluster, ['-n', INJECTOR_NAMESPACE, 'patch', 'configmap', 'sidecar-injector-config', '--type=merge', '-p', JSON.stringify({ data: { 'config.json': '{"injections": 42}\n' } })]),
    () => void kubectl(cluster, ['apply', '-f', base]),
  );
  assert.match(firing.labels.pod, /^sidecar-injector-/);
});

forWebhook('a certificate inside its renewal window: the expiry alert fires, and resolves once a renewed one serves', { skip }, async () => {
  // A store of its own whose clock stood 350 days ago: its one-year certificate has 15 days left.
  const expiring = synthVariant('expiring-certificate', { certificateStore: path.join(work, 'certs-350-days-old'), now: new Date(Date.now() - 350 * 86_400_000) });
  const firing = await rehearse('a certificate with 15 days left', 'SidecarInjectorCertificateExpiring', () => applyConfig(expiring), () => applyConfig(base));
  assert.match(firing.annotations.description, /expires in 1[45]d/);
});

forWebhook('Fail: the webhook scaled to 0 while pods are created: the critical refusal alert fires, and resolves once it is back', { skip }, async () => {
  const failing = synthVariant('fail', { failurePolicy: 'Fail' });
  await applyConfig(failing);
  await stack.loadRules('sidecar-injector.rules.yaml', configMapData(failing, 'sidecar-injector-prometheus-rules'));
  const firing = await rehearse(
    'webhook scaled to 0 under Fail',
    'SidecarInjectorWebhookRefusingAdmissions',
    async () => {
      kubectl(cluster, ['-n', INJECTOR_NAMESPACE, 'scale', 'deploy/sidecar-injector', '--replicas=0']);
      await cluster.until('no webhook pod', async () => (await listPods(cluster, INJECTOR_NAMESPACE, 'app.kubernetes.io/name=sidecar-injector')).length === 0, 120_000);
      assert.ok((await createPods(1))[0] >= 400, 'pod creation refused under Fail');
    },
    () => {
      kubectl(cluster, ['-n', INJECTOR_NAMESPACE, 'scale', 'deploy/sidecar-injector', '--replicas=2']);
      kubectl(cluster, ['-n', INJECTOR_NAMESPACE, 'rollout', 'status', 'deploy/sidecar-injector', '--timeout=180s']);
    },
    'critical',
  );
  assert.equal(firing.labels.severity, 'critical');
  assert.equal(firing.labels.name, 'inject.sidecar-injector.sidecar-injector.svc');
  assert.equal(firing.labels.operation, 'CREATE');
});

forPolicies('the policy backend: a policy whose CEL fails at runtime: its alert fires, and resolves once the policy is repaired', { skip }, async () => {
  const policies = JSON.parse(kubectl(cluster, ['get', 'mutatingadmissionpolicies', '-l', 'app.kubernetes.io/name=sidecar-injector', '-o', 'json'])).items;
  const policy = policies.find((candidate: any) => candidate.metadata.name.endsWith('.pods')) ?? policies[0];
  assert.ok(policy, 'one of our MutatingAdmissionPolicies');
  const mutations = policy.spec.mutations.length;
  // Test only: a mutation that reads a label no pod has ("no such key" at runtime).
  const failing = { patchType: 'JSONPatch', jsonPatch: { expression: '[JSONPatch{op: "add", path: "/metadata/annotations/e2e-copied", value: object.metadata.labels["e2e-absent"]}]' } };
  const alertname = policyApiVersion === 'v1alpha1' ? 'SidecarInjectorPolicyRefusingAdmissions' : 'SidecarInjectorPolicyErrors';
  const firing = await rehearse(
    `policy ${policy.metadata.name} with a mutation failing at runtime`,
    alertname,
    () => void kubectl(cluster, ['patch', 'mutatingadmissionpolicy', policy.metadata.name, '--type=json', '-p', JSON.stringify([{ op: 'add', path: '/spec/mutations/-', value: failing }])]),
    () => void kubectl(cluster, ['patch', 'mutatingadmissionpolicy', policy.metadata.name, '--type=json', '-p', JSON.stringify([{ op: 'remove', path: `/spec/mutations/${mutations}` }])]),
    // Under Fail a failing policy is a warning at once and a page once it goes on: the page is what is rehearsed.
    failurePolicy === 'Fail' ? 'critical' : 'warning',
  );
  if (alertname === 'SidecarInjectorPolicyErrors') {
    assert.equal(firing.labels.policy, policy.metadata.name);
    assert.equal(firing.labels.error_type, 'invalid_error');
  }
  assert.equal(firing.labels.severity, failurePolicy === 'Fail' ? 'critical' : 'warning');
});

test('after the workloads ran, every query of every dashboard panel returns data from that Prometheus', { skip }, async () => {
  const dashboard = JSON.parse(configMapData(base, 'sidecar-injector-grafana-dashboard'));
  await createPods(5);
  const empty: string[] = [];
  await cluster.until('every panel query answered', async () => {
    empty.length = 0;
    await createPods(2);
    for (const panel of dashboard.panels) {
      for (const target of panel.targets) if ((await stack.query(target.expr)).length === 0) empty.push(`${panel.title}: ${target.expr}`);
    }
    return empty.length === 0;
  }, 120_000).catch((error: Error) => {
    throw new Error(`panel queries with no data:\n${empty.join('\n')}\n${error.message.split('\n')[0]}`);
  });
  progress(`${dashboard.panels.length} panels, ${dashboard.panels.flatMap((panel: any) => panel.targets).length} queries, each answered with data`);
});
