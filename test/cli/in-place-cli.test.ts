// `rollout --in-place` as a user runs it: a real process, the config in a file, pods on stdin as
// `kubectl get namespaces,replicasets,pods -o json` prints them (a plan only: writing needs a cluster).
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import { type Injection, readinessConditionType, resolveInjectorConfig, type ResolvedInjectorConfig } from '../../webhook/config';
import { evaluate } from '../../webhook/engine';
import { createRequestFor } from '../../webhook/fleet/admission-request';
import { describeRun, runCliProcess } from '../support/cli-process';
import { applyResponse } from '../support/recorded-reviews';
import { makeTempDir } from '../support/synth-helpers';

const GATE = readinessConditionType('sidecar-injector.io');
const envoy = (image: string): Injection => ({ name: 'envoy', trigger: { type: 'always' }, readinessGate: true, containers: [{ name: 'envoy', image }] });
const OLD = resolveInjectorConfig({ injections: [envoy('envoyproxy/envoy:v1.31.0')] });
const NEW = resolveInjectorConfig({ injections: [envoy('envoyproxy/envoy:v1.31.1')] });
const dir = makeTempDir('in-place-cli');
const config = path.join(dir, 'config.json');
fs.writeFileSync(config, JSON.stringify(NEW));

function pod(name: string, injectedUnder: ResolvedInjectorConfig, condition: 'True' | 'False' = 'True'): any {
  const bare = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'shop', labels: { app: 'web', 'pod-template-hash': '7c9d8f' }, ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'web-7c9d8f', uid: 'rs', controller: true }] },
    spec: { containers: [{ name: 'app', image: 'registry.example/app:1' }] },
  };
  const injected = applyResponse(bare, evaluate(createRequestFor(bare, 'shop', 'u'), injectedUnder).response) as any;
  injected.metadata.resourceVersion = '7';
  injected.status = { phase: 'Running', conditions: [{ type: GATE, status: condition }, { type: 'Ready', status: condition }] };
  return injected;
}
const list = (...items: any[]) => JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [{ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'shop' } }, ...items] });

test('rollout --in-place --dry-run on stdin prints which pods keep running and which images change', () => {
  const run = runCliProcess(['rollout', '--in-place', '--config', config, '--stdin', '--dry-run', '--max-unavailable', '2'], { stdin: list(pod('web-7c9d8f-a', OLD), pod('web-7c9d8f-b', OLD)) });
  assert.equal(run.status, 0, describeRun(run));
  assert.equal(
    run.stdout,
    [
      'pods: stdin',
      `config: ${config}`,
      'plan: upgrade 2 pods in place (2 at a time per workload, 1 workload at a time), restart 0 workloads',
      '  Deployment shop/web: in place, 2 pods',
      `    web-7c9d8f-a: envoy envoyproxy/envoy:v1.31.0 -> envoyproxy/envoy:v1.31.1 [readiness gate ${GATE}: out of its Services first]`,
      `    web-7c9d8f-b: envoy envoyproxy/envoy:v1.31.0 -> envoyproxy/envoy:v1.31.1 [readiness gate ${GATE}: out of its Services first]`,
      'dry run: nothing changed',
      '',
    ].join('\n'),
  );
});

test('a pod an interrupted rollout left out of its Services: status says so, and rollout --in-place sets it back', () => {
  const held = pod('web-7c9d8f-c', NEW, 'False');
  const status = runCliProcess(['status', '--config', config, '--stdin'], { stdin: list(held) });
  assert.equal(status.status, 0, describeRun(status));
  assert.match(status.stdout, new RegExp(`1 pod held out of its Services by an interrupted rollout --in-place \\(${GATE} False\\): shop/web-7c9d8f-c; rollout --in-place sets it back\n$`));
  const json = JSON.parse(runCliProcess(['status', '--config', config, '--stdin', '-o', 'json'], { stdin: list(held) }).stdout);
  assert.deepEqual(json.held, ['shop/web-7c9d8f-c']);
  const plan = runCliProcess(['rollout', '--in-place', '--config', config, '--stdin', '--dry-run'], { stdin: list(held) });
  assert.match(plan.stdout, /set back in their Services \(held by an interrupted rollout --in-place\): shop\/web-7c9d8f-c\ndry run: nothing changed\n$/, describeRun(plan));
});

test('the in-place options are refused, exit 2, where they make no sense', () => {
  const cases: [string[], RegExp][] = [
    [['--canary', '1'], /^error: --canary goes with --in-place\n/],
    [['--undo'], /^error: --undo goes with --in-place\n/],
    [['--in-place', '--no-wait'], /^error: --in-place waits for each pod to come back Ready before the next: leave out --no-wait\n/],
    [['--in-place', '--canary', '0'], /^error: --canary "0" must be a whole number, 1 or more\n/],
    [['--in-place', '--canary', '1', '--continue'], /^error: give either --canary or --continue, not both\n/],
    [['--in-place', '--undo', '--continue'], /^error: --undo puts back every pod upgraded in place: leave out --canary and --continue\n/],
    [['--in-place', '--max-unavailable', '1.5'], /^error: --max-unavailable "1.5" must be a whole number, 1 or more\n/],
    [['--in-place', '--drain-grace', 'soon'], /^error: --drain-grace "soon" is not a duration \(such as 300s or 5m\)\n/],
    [['--in-place', '--drain', 'maybe'], /^error: option '--drain <mode>' argument 'maybe' is invalid\. Allowed choices are auto, gate, none\.\n/],
    [['--in-place', '--native-sidecars', 'sometimes'], /^error: option '--native-sidecars <mode>' argument 'sometimes' is invalid\. Allowed choices are in-place, restart\.\n/],
  ];
  for (const [args, message] of cases) {
    const run = runCliProcess(['rollout', '--config', config, '--stdin', '--dry-run', ...args], { stdin: list() });
    assert.equal(run.status, 2, `${args.join(' ')}: ${describeRun(run)}`);
    assert.match(run.stderr, message, args.join(' '));
  }
});
