// `rollout --in-place`'s plan: which pods can keep running while their sidecars' images are replaced,
// which fall back to a restart of their workload and why, and the one guarded patch (and its undo).
// The pods are made by the engine the webhook runs, under an older config, then stored as the
// apiserver stores them (its defaults filled in, quantities in canonical form).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { applyPatch, type Operation } from 'fast-json-patch';
import { type Injection, annotationKeys, injectionHash, readinessConditionType, resolveInjectorConfig, type ResolvedInjectorConfig } from '../../webhook/config';
import { evaluate } from '../../webhook/engine';
import { classifyPods, type ClusterObjects } from '../../webhook/fleet/injection-status';
import {
  containerDifference,
  inPlacePatch,
  inPlacePlan,
  parsePreviousImages,
  replaceHashEntries,
  undoPatch,
  undoPlan,
  type InPlaceOptions,
} from '../../webhook/fleet/in-place-plan';
import { normalizeImage } from '../../webhook/fleet/in-place-rollout';
import { createRequestFor } from '../../webhook/fleet/admission-request';
import type { InjectorSource } from '../../webhook/fleet/synthesized-injectors';
import { applyResponse } from '../support/recorded-reviews';

const PREFIX = 'sidecar-injector.io';
const KEYS = annotationKeys(PREFIX);
const OPTIONS: InPlaceOptions = { nativeSidecars: 'restart', includeUnknown: false, requireReadinessGate: false };

const envoy = (image: string, extra: Partial<Injection> = {}): Injection => ({
  name: 'envoy',
  trigger: { type: 'always' },
  containers: [{ name: 'envoy', image, args: ['-c', '/etc/envoy/envoy.yaml'], resources: { requests: { cpu: '0.1', memory: '64Mi' } }, ports: [{ containerPort: 15001 }] }],
  ...extra,
});
const METRICS: Injection = { name: 'metrics', trigger: { type: 'labelSelector', matchLabels: { metrics: 'on' } }, containers: [{ name: 'exporter', image: 'prom/exporter:1' }] };
const source = (config: ResolvedInjectorConfig): InjectorSource => ({ config, description: 'test config' });

const OLD = resolveInjectorConfig({ injections: [envoy('envoyproxy/envoy:v1.31.0'), METRICS] });
/** Envoy's image bumped, nothing else. */
const NEW = resolveInjectorConfig({ injections: [envoy('envoyproxy/envoy:v1.31.1'), METRICS] });

let serial = 0;
/** A pod of Deployment `app` as its ReplicaSet creates it. */
function deploymentPod(app: string, labels: Record<string, string> = {}, namespace = 'shop'): any {
  serial++;
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: `${app}-7c9d8f-${serial}`,
      namespace,
      labels: { app, 'pod-template-hash': '7c9d8f', ...labels },
      ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: `${app}-7c9d8f`, uid: 'rs', controller: true }],
    },
    spec: { containers: [{ name: 'app', image: 'registry.example/app:1' }] },
  };
}

/** The apiserver's defaults on a stored container, and canonical quantities (0.1 CPU is stored as 100m). */
function stored(pod: any): any {
  const copy = structuredClone(pod);
  copy.metadata.uid = `uid-${copy.metadata.name}`;
  copy.metadata.resourceVersion = '4242';
  for (const list of ['containers', 'initContainers']) {
    for (const container of copy.spec[list] ?? []) {
      container.terminationMessagePath ??= '/dev/termination-log';
      container.terminationMessagePolicy ??= 'File';
      container.imagePullPolicy ??= 'IfNotPresent';
      for (const port of container.ports ?? []) port.protocol ??= 'TCP';
      if (container.resources?.requests?.cpu === '0.1') container.resources.requests.cpu = '100m';
    }
  }
  copy.status = { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] };
  return copy;
}

/** The pod as stored once the webhook answered its CREATE under `config`. */
function admitted(pod: any, config: ResolvedInjectorConfig): any {
  return stored(applyResponse(pod, evaluate(createRequestFor(pod, pod.metadata.namespace, 'u'), config).response));
}

function objects(...pods: any[]): ClusterObjects {
  return { pods, namespaceLabels: new Map(), owners: new Map() };
}

const describePlan = (plan: ReturnType<typeof inPlacePlan>) => JSON.stringify(plan.workloads, null, 2);

test('a pod whose injection changed in its image alone is upgraded in place: one image, and its hash entry set to the current hash', () => {
  const pod = admitted(deploymentPod('web', { metrics: 'on' }), OLD);
  const plan = inPlacePlan(objects(pod), source(NEW), OPTIONS);
  assert.equal(plan.workloads.length, 1, describePlan(plan));
  const [web] = plan.workloads;
  assert.deepEqual([web.kind, web.name, web.action, web.fallBack.length], ['Deployment', 'web', 'in-place', 0], describePlan(plan));
  assert.deepEqual(web.inPlace[0].changes, [
    { injection: 'envoy', container: 'envoy', list: 'containers', index: 1, from: 'envoyproxy/envoy:v1.31.0', to: 'envoyproxy/envoy:v1.31.1', nativeSidecar: false },
  ]);
  assert.equal(web.inPlace[0].hashesAfter, `envoy=${injectionHash(NEW.injections[0])},metrics=${injectionHash(METRICS)}`);
});

test('pods with any other difference fall back to a restart of their workload, each with its reason', () => {
  const cases: [string, any, ResolvedInjectorConfig, RegExp][] = [
    ['more than the image changed', admitted(deploymentPod('a'), OLD), resolveInjectorConfig({ injections: [envoy('envoyproxy/envoy:v1.31.1', { env: [{ name: 'X', value: '1' }] }), METRICS] }), /^envoy changed more than its images \(pod has [0-9a-f]{12}; the current definition with the pod's images is [0-9a-f]{12}\)$/],
    ['a container argument changed with the image', admitted(deploymentPod('b'), OLD), resolveInjectorConfig({ injections: [{ ...envoy('envoyproxy/envoy:v1.31.1'), containers: [{ ...envoy('x').containers![0], image: 'envoyproxy/envoy:v1.31.1', args: ['-c', '/etc/envoy/v2.yaml'] }] }, METRICS] }), /^envoy changed more than its images/],
    ['an injection no longer configured', admitted(deploymentPod('c', { metrics: 'on' }), OLD), resolveInjectorConfig({ injections: [envoy('envoyproxy/envoy:v1.31.1')] }), /^metrics no longer configured: a running pod cannot lose containers$/],
    ['an injection missing', stored(deploymentPod('d')), NEW, /^envoy missing: a running pod cannot get containers$/],
    ['an injection in the stored template', admitted(deploymentPod('e'), resolveInjectorConfig({ injections: [envoy('envoyproxy/envoy:v1.31.0', { targetKinds: ['Pod', 'Deployment'] })] })), resolveInjectorConfig({ injections: [envoy('envoyproxy/envoy:v1.31.1', { targetKinds: ['Pod', 'Deployment'] })] }), /^envoy is in the Deployment's stored pod template \(targetKinds\): pods made later would get the old version; re-apply the Deployment$/],
  ];
  for (const [what, pod, config, reason] of cases) {
    const plan = inPlacePlan({ ...objects(pod), owners: new Map([[`shop/ReplicaSet/${pod.metadata.ownerReferences[0].name}`, { apiVersion: 'apps/v1', kind: 'ReplicaSet', metadata: { name: pod.metadata.ownerReferences[0].name, namespace: 'shop', ownerReferences: [{ kind: 'Deployment', name: pod.metadata.labels.app, controller: true }] } }]]) }, source(config), OPTIONS);
    assert.equal(plan.workloads.length, 1, `${what}: ${describePlan(plan)}`);
    const [workload] = plan.workloads;
    assert.equal(workload.action, 'restart', `${what}: ${describePlan(plan)}`);
    assert.equal(workload.fallBack.length, 1, what);
    assert.equal(workload.fallBack[0].reasons.length, 1, `${what}: ${workload.fallBack[0].reasons.join(' | ')}`);
    assert.match(workload.fallBack[0].reasons[0], reason, what);
  }
});

test('the engine decides too: a container that is not what the webhook adds now, though the hash says so, falls back', () => {
  const pod = admitted(deploymentPod('web'), OLD);
  pod.spec.containers[1].args = ['-c', '/tmp/hand-edited.yaml'];
  const plan = inPlacePlan(objects(pod), source(NEW), OPTIONS);
  assert.deepEqual(plan.workloads[0].fallBack[0].reasons, [
    'envoy: container envoy differs from what the webhook adds now at /args/1: pod has "/tmp/hand-edited.yaml", the injection adds "/etc/envoy/envoy.yaml"',
  ]);
  // The apiserver's defaults and canonical quantities are not differences.
  assert.equal(containerDifference({ resources: { requests: { cpu: '0.1' } }, ports: [{ containerPort: 1 }] }, { resources: { requests: { cpu: '100m' } }, ports: [{ containerPort: 1, protocol: 'TCP' }], terminationMessagePath: '/dev/termination-log' }), undefined);
  assert.match(containerDifference({ resources: { limits: { memory: '1Gi' } } }, { resources: { limits: { memory: '1G' } } })!, /^\/resources\/limits\/memory: pod has "1G"/);
});

test('a Deployment with one pod that qualifies and one that does not is restarted; a bare pod is upgraded alone', () => {
  const good = admitted(deploymentPod('web'), OLD);
  const bad = admitted(deploymentPod('web'), OLD);
  bad.spec.containers[1].args = ['other'];
  const bare = admitted({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'debug', namespace: 'ops' }, spec: { containers: [{ name: 'sh', image: 'busybox' }] } }, OLD);
  const upToDate = admitted(deploymentPod('api'), NEW);
  const plan = inPlacePlan(objects(good, bad, bare, upToDate), source(NEW), OPTIONS);
  assert.deepEqual(
    plan.workloads.map((w) => [w.namespace, `${w.kind}/${w.name}`, w.action, w.inPlace.map((p) => p.name), w.fallBack.map((p) => p.name)]),
    [
      ['ops', 'Pod/debug', 'in-place', ['debug'], []],
      ['shop', 'Deployment/web', 'restart', [], [bad.metadata.name]],
    ],
  );
});

test('native sidecars are upgraded in place only with --native-sidecars in-place', () => {
  const native = (image: string) => resolveInjectorConfig({ injections: [envoy(image, { nativeSidecars: 'always' })] });
  const pod = admitted(deploymentPod('jobs'), native('envoyproxy/envoy:v1.31.0'));
  assert.equal(pod.spec.initContainers[0].restartPolicy, 'Always');
  const restart = inPlacePlan(objects(pod), source(native('envoyproxy/envoy:v1.31.1')), OPTIONS);
  assert.deepEqual(restart.workloads[0].fallBack[0].reasons, ['envoy: container envoy is a native sidecar (--native-sidecars restart)']);
  const inPlace = inPlacePlan(objects(pod), source(native('envoyproxy/envoy:v1.31.1')), { ...OPTIONS, nativeSidecars: 'in-place' });
  assert.deepEqual(inPlace.workloads[0].inPlace[0].changes, [
    { injection: 'envoy', container: 'envoy', list: 'initContainers', index: 0, from: 'envoyproxy/envoy:v1.31.0', to: 'envoyproxy/envoy:v1.31.1', nativeSidecar: true },
  ]);
});

test('--drain gate upgrades in place only pods with the injector\'s readiness gate; the plan says which have it', () => {
  const withGate = admitted(deploymentPod('web'), OLD);
  withGate.spec.readinessGates = [{ conditionType: readinessConditionType(PREFIX) }];
  const without = admitted(deploymentPod('api'), OLD);
  const plan = inPlacePlan(objects(withGate, without), source(NEW), { ...OPTIONS, requireReadinessGate: true });
  const byName = Object.fromEntries(plan.workloads.map((w) => [w.name, w]));
  assert.equal(byName.web.action, 'in-place');
  assert.equal(byName.web.inPlace[0].readinessGate, true);
  assert.deepEqual(byName.api.fallBack[0].reasons, [`no readiness gate ${readinessConditionType(PREFIX)} (--drain gate): give the injection readinessGate: true`]);
});

test('the patch is one request guarded by the resourceVersion and each container\'s name and image; a pod changed since it was read refuses it whole', () => {
  const pod = admitted(deploymentPod('web', { metrics: 'on' }), OLD);
  const [plan] = inPlacePlan(objects(pod), source(NEW), OPTIONS).workloads[0].inPlace;
  const operations = inPlacePatch(pod, plan, PREFIX);
  const oldHashes = pod.metadata.annotations[KEYS.hashes];
  assert.deepEqual(operations, [
    { op: 'test', path: '/metadata/resourceVersion', value: '4242' },
    { op: 'test', path: '/spec/containers/1/name', value: 'envoy' },
    { op: 'test', path: '/spec/containers/1/image', value: 'envoyproxy/envoy:v1.31.0' },
    { op: 'replace', path: '/spec/containers/1/image', value: 'envoyproxy/envoy:v1.31.1' },
    { op: 'test', path: '/metadata/annotations/sidecar-injector.io~1injection-hashes', value: oldHashes },
    { op: 'replace', path: '/metadata/annotations/sidecar-injector.io~1injection-hashes', value: plan.hashesAfter },
    { op: 'add', path: '/metadata/annotations/sidecar-injector.io~1previous-images', value: JSON.stringify({ hashes: oldHashes, images: { envoy: 'envoyproxy/envoy:v1.31.0' } }) },
  ]);
  const upgraded = applyPatch(structuredClone(pod), structuredClone(operations) as Operation[], true, false).newDocument;
  assert.equal(upgraded.spec.containers[1].image, 'envoyproxy/envoy:v1.31.1');
  assert.deepEqual({ ...upgraded.spec.containers[1], image: undefined }, { ...pod.spec.containers[1], image: undefined }, 'nothing else in the container changes');
  assert.deepEqual(upgraded.spec.containers[0], pod.spec.containers[0], 'the app container is untouched');

  // The kubelet wrote the status in between: a new resourceVersion, and nothing is applied.
  const newer = { ...structuredClone(pod), metadata: { ...structuredClone(pod.metadata), resourceVersion: '4243' } };
  assert.throws(() => applyPatch(structuredClone(newer), structuredClone(operations) as Operation[], true, false), { name: 'TEST_OPERATION_FAILED' });
  // Someone replaced the image already: refused as well.
  const replaced = structuredClone(pod);
  replaced.spec.containers[1].image = 'envoyproxy/envoy:v1.32.0';
  assert.throws(() => applyPatch(replaced, structuredClone(operations) as Operation[], true, false), { name: 'TEST_OPERATION_FAILED' });
});

test('after the patch, status reports the pod up to date though its Deployment\'s template is untouched', () => {
  const pod = admitted(deploymentPod('web', { metrics: 'on' }), OLD);
  const before = classifyPods(objects(pod), source(NEW))[0];
  assert.equal(before.state, 'stale');
  const [plan] = inPlacePlan(objects(pod), source(NEW), OPTIONS).workloads[0].inPlace;
  const upgraded = applyPatch(structuredClone(pod), structuredClone(inPlacePatch(pod, plan, PREFIX)) as Operation[], true, false).newDocument;
  const after = classifyPods(objects(upgraded), source(NEW))[0];
  assert.deepEqual(after.injections.map((entry) => `${entry.injection} ${entry.state}`), ['envoy up-to-date', 'metrics up-to-date']);
  assert.equal(after.state, 'up-to-date');
  assert.deepEqual(inPlacePlan(objects(upgraded), source(NEW), OPTIONS).workloads, [], 'nothing left to do');
});

test('--undo puts the previous images and hashes back in one guarded request and drops the record', () => {
  const pod = admitted(deploymentPod('web', { metrics: 'on' }), OLD);
  const [plan] = inPlacePlan(objects(pod), source(NEW), OPTIONS).workloads[0].inPlace;
  const upgraded = applyPatch(structuredClone(pod), structuredClone(inPlacePatch(pod, plan, PREFIX)) as Operation[], true, false).newDocument;
  upgraded.metadata.resourceVersion = '5000';
  const undo = undoPlan(objects(upgraded), PREFIX);
  assert.deepEqual(undo.unreadable, []);
  assert.equal(undo.pods.length, 1);
  assert.deepEqual(undo.pods[0].changes.map((c) => `${c.container} ${c.list}/${c.index} ${c.from} -> ${c.to}`), ['envoy containers/1 envoyproxy/envoy:v1.31.1 -> envoyproxy/envoy:v1.31.0']);
  const operations = undoPatch(upgraded, undo.pods[0], PREFIX);
  assert.deepEqual(operations[0], { op: 'test', path: '/metadata/resourceVersion', value: '5000' });
  const restored = applyPatch(structuredClone(upgraded), structuredClone(operations) as Operation[], true, false).newDocument;
  assert.deepEqual({ ...restored, metadata: { ...restored.metadata, resourceVersion: '4242' } }, pod, 'the pod is as it was before the upgrade');
  assert.equal(classifyPods(objects(restored), source(NEW))[0].state, 'stale', 'and status finds it outdated again');
  // A pod never upgraded in place has nothing to undo; an unreadable record is said, not guessed at.
  assert.deepEqual(undoPlan(objects(pod), PREFIX).pods, []);
  const garbled = structuredClone(upgraded);
  garbled.metadata.annotations[KEYS.previousImages] = '{"hashes": 1}';
  assert.deepEqual(undoPlan(objects(garbled), PREFIX).unreadable, [{ namespace: 'shop', name: pod.metadata.name, reason: 'the previous-images annotation is not {"hashes": "...", "images": {...}}' }]);
  assert.equal(parsePreviousImages('x'.repeat(9000)), 'the previous-images annotation is over 8192 characters');
  assert.equal(parsePreviousImages(JSON.stringify({ hashes: '', images: { envoy: 'a b' } })), "the previous-images annotation's image for envoy is not an image reference");
});

test('replaceHashEntries sets every entry of an upgraded injection and keeps the others in order', () => {
  assert.equal(replaceHashEntries('envoy=aaaaaaaaaaaa,metrics=bbbbbbbbbbbb,envoy=cccccccccccc', new Map([['envoy', 'dddddddddddd']])), 'envoy=dddddddddddd,metrics=bbbbbbbbbbbb,envoy=dddddddddddd');
  assert.equal(replaceHashEntries('metrics=bbbbbbbbbbbb', new Map([['envoy', 'dddddddddddd']])), 'metrics=bbbbbbbbbbbb,envoy=dddddddddddd');
});

test('the runtime\'s image names are matched to the spec\'s', () => {
  assert.equal(normalizeImage('envoyproxy/envoy:v1.31.1'), 'docker.io/envoyproxy/envoy:v1.31.1');
  assert.equal(normalizeImage('busybox'), 'docker.io/library/busybox:latest');
  assert.equal(normalizeImage('registry.example:5000/team/app:2'), 'registry.example:5000/team/app:2');
  assert.equal(normalizeImage('localhost/app@sha256:' + 'a'.repeat(64)), 'localhost/app@sha256:' + 'a'.repeat(64));
});
