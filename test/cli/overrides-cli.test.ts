// Overrides as the CLI shows them (issue 39): explain says where each offered value came from (the
// pod's annotation, the namespace's, the config) and why a value was ignored; status counts a pod that
// carries good overrides as up to date, and names ignored values without changing its exit code.
// Run as a user runs them: a real process, the config in a file, manifests or pods on stdin.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import { resolveInjectorConfig } from '../../webhook/config';
import { evaluate } from '../../webhook/engine';
import { createRequestFor } from '../../webhook/fleet/admission-request';
import { applyResponse } from '../support/recorded-reviews';
import { describeRun, runCliProcess } from '../support/cli-process';
import { makeTempDir } from '../support/synth-helpers';
import { envoyWithOverrides } from '../support/override-fixtures';

const ENVOY = envoyWithOverrides();
const CONFIG = resolveInjectorConfig({ injections: [ENVOY] });
const dir = makeTempDir('overrides-cli');
const configFile = path.join(dir, 'config.json');
fs.writeFileSync(configFile, JSON.stringify(CONFIG));

const namespace = { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'shop', annotations: { 'envoy.example.com/memory-request': '256Mi' } } };
/** A pod written by hand (no owner), as `explain -f` reads it. */
const barePod = (annotations: Record<string, string>) => ({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'web', annotations }, spec: { containers: [{ name: 'app', image: 'registry.example/app:1' }] } });
const pod = (name: string, annotations: Record<string, string>) => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace: 'shop', labels: { app: 'web', 'pod-template-hash': '7c9d8f' }, annotations, ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'web-7c9d8f', uid: 'u', controller: true }] },
  spec: { containers: [{ name: 'app', image: 'registry.example/app:1' }] },
});

test('explain shows each offered value and where it came from: the pod, the namespace, the config', () => {
  const objects = [namespace, barePod({ 'envoy.example.com/cpu-request': '250m' })];
  const run = runCliProcess(['explain', '--config', configFile, '-n', 'shop', '-f', '-'], { stdin: objects.map((object) => JSON.stringify(object)).join('\n---\n') });
  assert.equal(run.status, 0, describeRun(run));
  assert.match(run.stdout, /\n      override: envoy resources\.requests\.cpu = 250m \(pod annotation envoy\.example\.com\/cpu-request; configured 100m\)\n/, run.stdout);
  assert.match(run.stdout, /\n      override: envoy resources\.requests\.memory = 256Mi \(namespace annotation envoy\.example\.com\/memory-request; configured 128Mi\)\n/, run.stdout);
});

test('explain names an ignored value and why, with the value that applies instead; --namespace-annotations stands in for the namespace', () => {
  const run = runCliProcess(['explain', '--config', configFile, '-n', 'shop', '--namespace-annotations', 'envoy.example.com/memory-request=300Mi', '-f', '-'], { stdin: JSON.stringify(barePod({ 'envoy.example.com/cpu-request': '9' })) });
  assert.equal(run.status, 0, describeRun(run));
  assert.match(run.stdout, /override: envoy resources\.requests\.cpu = 100m \(configured; ignored pod value "9": "9" is above the maximum 2\)/, run.stdout);
  assert.match(run.stdout, /override: envoy resources\.requests\.memory = 300Mi \(namespace annotation/, run.stdout);
  assert.match(run.stdout, /warnings:\n    - annotation envoy\.example\.com\/cpu-request ignored \(injection "envoy"\): "9" is above the maximum 2; envoy keeps resources\.requests\.cpu 100m as configured/, run.stdout);
  const json = runCliProcess(['explain', '--config', configFile, '-n', 'shop', '-o', 'json', '-f', '-'], { stdin: JSON.stringify(barePod({ 'envoy.example.com/cpu-request': '250m' })) });
  const [explained] = JSON.parse(json.stdout);
  assert.deepEqual(explained.injections[0].overrides.map((o: any) => [o.field, o.value, o.source]), [
    ['resources.requests.cpu', '250m', 'pod'],
    ['resources.requests.memory', '128Mi', 'config'],
    ['resources.limits.cpu', '1', 'config'],
    ['env.ENVOY_LOG_LEVEL', 'info', 'config'],
  ]);
});

/** A pod as the webhook admitted it under CONFIG, in namespace shop with its annotation. */
function admitted(name: string, annotations: Record<string, string>): any {
  const object = pod(name, annotations);
  const result = evaluate(createRequestFor(object, 'shop', 'u'), CONFIG, { namespaceAnnotations: namespace.metadata.annotations });
  return applyResponse(object, result.response);
}

test('status: pods carrying good overrides are up to date (exit 0); an ignored value is named, with its pods, and changes no exit code', () => {
  const list = { apiVersion: 'v1', kind: 'List', items: [namespace, admitted('web-7c9d8f-a', { 'envoy.example.com/cpu-request': '250m' }), admitted('web-7c9d8f-b', { 'envoy.example.com/cpu-request': '300m' })] };
  const good = runCliProcess(['status', '--config', configFile, '--stdin'], { stdin: JSON.stringify(list) });
  assert.equal(good.status, 0, describeRun(good));
  assert.match(good.stdout, /2 pods: 2 up to date, 0 outdated/, good.stdout);
  assert.doesNotMatch(good.stdout, /override ignored/);

  const withBad = { ...list, items: [...list.items, admitted('web-7c9d8f-c', { 'envoy.example.com/cpu-request': 'lots' })] };
  const bad = runCliProcess(['status', '--config', configFile, '--stdin'], { stdin: JSON.stringify(withBad) });
  assert.equal(bad.status, 0, describeRun(bad));
  assert.match(bad.stdout, /shop Deployment\/web:\n  override ignored in 1 pod: annotation envoy\.example\.com\/cpu-request ignored \(injection "envoy"\): "lots" is not a quantity/, bad.stdout);
  const json = JSON.parse(runCliProcess(['status', '--config', configFile, '--stdin', '-o', 'json'], { stdin: JSON.stringify(withBad) }).stdout);
  assert.deepEqual(json.workloads[0].ignoredOverrides.map((entry: any) => entry.pods), [['web-7c9d8f-c']]);
});
