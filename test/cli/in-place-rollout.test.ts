// `rollout --in-place` carried out against a simulated cluster (test/support/fake-cluster.ts): the
// apiserver's JSON Patch and resourceVersion, a kubelet that restarts a container whose image changed
// and computes Ready from the containers and the readiness gates, an EndpointSlice that follows Ready a
// step behind. Time is the fake's: the run waits on its events.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type Injection, annotationKeys, readinessConditionType, resolveInjectorConfig, type ResolvedInjectorConfig } from '../../webhook/config';
import { evaluate } from '../../webhook/engine';
import { type InPlaceCommandOptions, runInPlaceCommand } from '../../webhook/cli/in-place-command';
import { classifyPods } from '../../webhook/fleet/injection-status';
import type { InjectorSource } from '../../webhook/fleet/synthesized-injectors';
import { createRequestFor } from '../../webhook/fleet/admission-request';
import type { PodClient } from '../../webhook/fleet/cluster';
import { describeUpgrade, upgradePod } from '../../webhook/fleet/in-place-rollout';
import { FAKE_CLUSTER_IN_PLACE_OPTIONS, FakeCluster } from '../support/fake-cluster';
import { applyResponse } from '../support/recorded-reviews';

const PREFIX = 'sidecar-injector.io';
const GATE = readinessConditionType(PREFIX);
const envoy = (image: string, extra: Partial<Injection> = {}): Injection => ({ name: 'envoy', trigger: { type: 'always' }, containers: [{ name: 'envoy', image }], ...extra });
const OLD = resolveInjectorConfig({ injections: [envoy('envoyproxy/envoy:v1.31.0')] });
const NEW = resolveInjectorConfig({ injections: [envoy('envoyproxy/envoy:v1.31.1')] });
const BAD = resolveInjectorConfig({ injections: [envoy('envoyproxy/envoy:v9.9.9-missing')] });
const source = (config: ResolvedInjectorConfig): InjectorSource => ({ config, description: 'test config' });

const OPTIONS = FAKE_CLUSTER_IN_PLACE_OPTIONS;

/** `replicas` pods of Deployment `app`, injected under `config`, running in the fake cluster. */
function deployment(cluster: FakeCluster, app: string, replicas: number, config: ResolvedInjectorConfig, gate = false): string[] {
  const names: string[] = [];
  for (let i = 0; i < replicas; i++) {
    const pod: any = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: `${app}-7c9d8f-${i}`, namespace: 'shop', labels: { app, 'pod-template-hash': '7c9d8f' }, ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: `${app}-7c9d8f`, uid: 'rs', controller: true }] },
      spec: { containers: [{ name: 'app', image: 'registry.example/app:1' }], ...(gate ? { readinessGates: [{ conditionType: GATE }] } : {}) },
    };
    const injected = applyResponse(pod, evaluate(createRequestFor(pod, 'shop', 'u'), config).response);
    injected.status = gate ? { conditions: [{ type: GATE, status: 'True' }] } : {};
    cluster.addPod(injected);
    names.push(pod.metadata.name);
  }
  return names;
}

async function run(cluster: FakeCluster, config: ResolvedInjectorConfig, options: Partial<InPlaceCommandOptions> = {}) {
  let stdout = '';
  let stderr = '';
  let exitCode = 0;
  const restarted: string[] = [];
  const objects = { pods: cluster.listPods(), namespaceLabels: new Map(), owners: new Map() };
  await runInPlaceCommand(
    objects,
    source(config),
    ['pods: fake'],
    { ...OPTIONS, ...options },
    { stdout: (text) => (stdout += text), stderr: (text) => (stderr += text), exit: (code) => (exitCode ||= code) },
    async () => ({
      pods: cluster,
      restart: async (workloads) => {
        restarted.push(...workloads.map((w) => `${w.kind} ${w.namespace}/${w.name}`));
        return true;
      },
    }),
    cluster.clock(),
  );
  return { stdout, stderr, exitCode, restarted, describe: () => `exit ${exitCode}\n--- stdout\n${stdout}\n--- stderr\n${stderr}\n--- events\n${cluster.events.map((e) => `${e.at} ${e.pod} ${e.what}`).join('\n')}` };
}

const container = (pod: any, name: string) => pod.status.containerStatuses.find((entry: any) => entry.name === name);

test('3 pods of a Deployment: each keeps its uid and its app container, envoy restarts once on the new image, one pod at a time; then status finds them up to date', async () => {
  const cluster = new FakeCluster();
  const names = deployment(cluster, 'web', 3, OLD);
  const before = names.map((name) => cluster.pod('shop', name));
  const result = await run(cluster, NEW);
  assert.equal(result.exitCode, 0, result.describe());
  assert.match(result.stdout, /plan: upgrade 3 pods in place \(1 at a time per workload, 1 workload at a time\), restart 0 workloads\n  Deployment shop\/web: in place, 3 pods\n/, result.describe());
  assert.match(result.stdout, /web-7c9d8f-0: envoy envoyproxy\/envoy:v1\.31\.0 -> envoyproxy\/envoy:v1\.31\.1 \[no readiness gate: stays in its Services while the sidecar restarts\]/);
  assert.match(result.stdout, /upgraded in place: 3 pods\n$/, result.describe());
  for (const [index, name] of names.entries()) {
    const pod = cluster.pod('shop', name);
    assert.equal(pod.metadata.uid, before[index].metadata.uid, `${name} is the same pod`);
    assert.equal(pod.spec.containers[1].image, 'envoyproxy/envoy:v1.31.1');
    assert.deepEqual([container(pod, 'app').restartCount, container(pod, 'app').containerID], [0, container(before[index], 'app').containerID], `${name}: the app container never restarted`);
    assert.equal(container(pod, 'envoy').restartCount, 1, `${name}: envoy restarted once`);
    assert.equal(container(pod, 'envoy').image, 'docker.io/envoyproxy/envoy:v1.31.1');
    assert.notEqual(container(pod, 'envoy').imageID, container(before[index], 'envoy').imageID);
    assert.match(result.stdout, new RegExp(`upgraded pod shop/${name} in [\\d.]+s: envoy restartCount 0 -> 1, imageID \\S+ -> \\S+; no other container restarted`));
  }
  assert.equal(cluster.maxUnready.get('web'), 1, 'never more than one pod of the Deployment not Ready at once');
  const statuses = classifyPods({ pods: cluster.listPods(), namespaceLabels: new Map(), owners: new Map() }, source(NEW));
  assert.deepEqual(statuses.map((status) => status.state), ['up-to-date', 'up-to-date', 'up-to-date']);
});

test('--max-unavailable 2 upgrades two pods of a workload at a time', async () => {
  const cluster = new FakeCluster();
  deployment(cluster, 'web', 4, OLD);
  const result = await run(cluster, NEW, { maxUnavailable: 2 });
  assert.equal(result.exitCode, 0, result.describe());
  assert.equal(cluster.maxUnready.get('web'), 2, result.describe());
});

test('--canary 1 upgrades one pod and stops; --continue goes on once it is Ready', async () => {
  const cluster = new FakeCluster();
  const names = deployment(cluster, 'web', 3, OLD);
  const canary = await run(cluster, NEW, { canary: 1 });
  assert.equal(canary.exitCode, 0, canary.describe());
  assert.match(canary.stdout, /canary: 1 pod upgraded; 2 pods and 0 workload restarts left: check the upgraded pods, then run again with --continue \(or put them back with --undo\)\n$/, canary.describe());
  assert.deepEqual(names.map((name) => cluster.pod('shop', name).spec.containers[1].image), ['envoyproxy/envoy:v1.31.1', 'envoyproxy/envoy:v1.31.0', 'envoyproxy/envoy:v1.31.0']);
  const rest = await run(cluster, NEW, { continueAfterCanary: true });
  assert.equal(rest.exitCode, 0, rest.describe());
  assert.match(rest.stdout, /plan: upgrade 2 pods in place/);
  assert.deepEqual(names.map((name) => cluster.pod('shop', name).spec.containers[1].image), Array(3).fill('envoyproxy/envoy:v1.31.1'));
});

test('a bad image stops the run at the first pod with exit code 7, --continue refuses while it is not Ready, and --undo puts the previous image back', async () => {
  const cluster = new FakeCluster();
  cluster.badImages.add('envoyproxy/envoy:v9.9.9-missing');
  const names = deployment(cluster, 'web', 3, OLD);
  const failed = await run(cluster, BAD);
  assert.equal(failed.exitCode, 7, failed.describe());
  assert.equal(
    failed.stderr,
    `error: pod shop/${names[0]}: container envoy on envoyproxy/envoy:v9.9.9-missing: ImagePullBackOff: Back-off pulling image "envoyproxy/envoy:v9.9.9-missing"\n` +
      `stopped: 0 pods upgraded, 2 pods and 0 workload restarts not started; the images of pod shop/${names[0]} were replaced: rollout --in-place --undo puts the previous ones back\n`,
  );
  assert.deepEqual(names.slice(1).map((name) => cluster.pod('shop', name).spec.containers[1].image), ['envoyproxy/envoy:v1.31.0', 'envoyproxy/envoy:v1.31.0'], 'the other pods were not touched');

  const refused = await run(cluster, BAD, { continueAfterCanary: true });
  assert.equal(refused.exitCode, 7, refused.describe());
  assert.match(refused.stderr, new RegExp(`^error: --continue: 1 pod upgraded in place is not Ready: shop/${names[0]}; look at it, or put the previous images back with --undo\n$`));

  const undo = await run(cluster, BAD, { undo: true });
  assert.equal(undo.exitCode, 0, undo.describe());
  assert.match(undo.stdout, new RegExp(`plan: put the previous images back in 1 pod \\(1 at a time per workload\\)\n  Deployment shop/web pod ${names[0]}: envoy envoyproxy/envoy:v9.9.9-missing -> envoyproxy/envoy:v1.31.0`));
  const pod = cluster.pod('shop', names[0]);
  assert.equal(pod.spec.containers[1].image, 'envoyproxy/envoy:v1.31.0');
  assert.equal(pod.status.conditions.find((c: any) => c.type === 'Ready').status, 'True');
  assert.equal(pod.metadata.annotations[annotationKeys(PREFIX).previousImages], undefined, 'the record is gone');
  assert.equal(classifyPods({ pods: [pod], namespaceLabels: new Map(), owners: new Map() }, source(NEW))[0].state, 'stale', 'outdated again, as before');
});

test('--undo puts back what the run of its config did: after a good run to v1.31.1 and a failed one to a bad image, only the failed pod goes back, to v1.31.1', async () => {
  const cluster = new FakeCluster();
  cluster.badImages.add('envoyproxy/envoy:v9.9.9-missing');
  const names = deployment(cluster, 'web', 3, OLD);
  assert.equal((await run(cluster, NEW)).exitCode, 0);
  const failed = await run(cluster, BAD);
  assert.equal(failed.exitCode, 7, failed.describe());
  const undo = await run(cluster, BAD, { undo: true });
  assert.equal(undo.exitCode, 0, undo.describe());
  assert.match(undo.stdout, new RegExp(`plan: put the previous images back in 1 pod .*\n  Deployment shop/web pod ${names[0]}: envoy envoyproxy/envoy:v9.9.9-missing -> envoyproxy/envoy:v1.31.1`), undo.describe());
  for (const name of names.slice(1)) assert.match(undo.stdout, new RegExp(`left as it is: pod shop/${name}, upgraded in place to envoy=[0-9a-f]{12}, not to this config's envoy=[0-9a-f]{12}`), undo.describe());
  assert.deepEqual(names.map((name) => cluster.pod('shop', name).spec.containers[1].image), ['envoyproxy/envoy:v1.31.1', 'envoyproxy/envoy:v1.31.1', 'envoyproxy/envoy:v1.31.1']);
});

test('a new image whose container crash-loops stops the run at that pod, exit 7', async () => {
  const cluster = new FakeCluster();
  cluster.crashingImages.add('envoyproxy/envoy:v9.9.9-missing');
  const names = deployment(cluster, 'web', 2, OLD);
  const failed = await run(cluster, BAD);
  assert.equal(failed.exitCode, 7, failed.describe());
  assert.match(failed.stderr, new RegExp(`^error: pod shop/${names[0]}: container envoy on envoyproxy/envoy:v9\\.9\\.9-missing: CrashLoopBackOff: back-off 10s restarting failed container=envoy\n`), failed.describe());
  assert.equal(cluster.pod('shop', names[1]).spec.containers[1].image, 'envoyproxy/envoy:v1.31.0');
});

test('with the readiness gate, the pod leaves its endpoints before the image is replaced and comes back after the container is ready', async () => {
  const cluster = new FakeCluster();
  const [name] = deployment(cluster, 'web', 1, OLD, true);
  const result = await run(cluster, NEW);
  assert.equal(result.exitCode, 0, result.describe());
  const key = `shop/${name}`;
  const sequence = cluster.events.filter((event) => event.pod === key).map((event) => event.what.replace(/: app=.*$/, ''));
  assert.deepEqual(
    sequence,
    [`condition ${GATE}=False`, 'endpoint ready=false', 'patched', 'kubelet: envoy stopped', 'kubelet: envoy started on envoyproxy/envoy:v1.31.1', 'kubelet: envoy ready', `condition ${GATE}=True`, 'endpoint ready=true'],
    result.describe(),
  );
  assert.match(result.stdout, new RegExp(`  ${name}: out of its Services' endpoints \\(${GATE} False; 1 EndpointSlice listed it\\)`));
  const pod = cluster.pod('shop', name);
  assert.equal(pod.status.conditions.find((c: any) => c.type === GATE).status, 'True');

  // --drain none: the same pod type is upgraded with the condition never touched.
  const other = new FakeCluster();
  const [second] = deployment(other, 'web', 1, OLD, true);
  const undrained = await run(other, NEW, { drain: 'none' });
  assert.equal(undrained.exitCode, 0, undrained.describe());
  assert.deepEqual(other.events.filter((event) => event.what.startsWith('condition')), [], 'no condition written');
  assert.equal(other.pod('shop', second).spec.containers[1].image, 'envoyproxy/envoy:v1.31.1');
});

test('a status write between the read and the patch fails the resourceVersion test; the pod is read again and patched', async () => {
  const cluster = new FakeCluster();
  const [name] = deployment(cluster, 'web', 1, OLD);
  let writes = 0;
  cluster.beforePatch = (key) => {
    // The kubelet writes the pod's status once, just before the first patch arrives.
    if (writes++ === 0) void cluster.setPodCondition('shop', key.split('/')[1], { type: 'example.com/probe', status: 'True', reason: 'r', message: 'm' });
  };
  const result = await run(cluster, NEW);
  assert.equal(result.exitCode, 0, result.describe());
  assert.deepEqual([cluster.patches, cluster.conflicts], [2, 1], result.describe());
  assert.equal(cluster.pod('shop', name).spec.containers[1].image, 'envoyproxy/envoy:v1.31.1');
});

test('a patch refused while the pod did not change is not sent again: the run stops there, the pod back in its Services', async () => {
  const cluster = new FakeCluster();
  const names = deployment(cluster, 'web', 2, OLD, true);
  cluster.refusePatches = 'admission webhook "policy.example.com" denied the request: images must come from registry.example';
  const result = await run(cluster, NEW);
  assert.equal(result.exitCode, 7, result.describe());
  assert.equal(cluster.patches, 1, 'one attempt: the resourceVersion had not changed');
  assert.equal(
    result.stderr,
    `error: pod shop/${names[0]}: replacing images (attempt 1): HTTP 422: admission webhook "policy.example.com" denied the request: images must come from registry.example\n` +
      'stopped: 0 pods upgraded, 1 pod and 0 workload restarts not started\n',
  );
  const pod = cluster.pod('shop', names[0]);
  assert.equal(pod.status.conditions.find((c: any) => c.type === GATE).status, 'True', 'the gate\'s condition is set back');
  assert.equal(pod.spec.containers[1].image, 'envoyproxy/envoy:v1.31.0');
});

test('pods that cannot be upgraded in place have their workload restarted after the in-place ones', async () => {
  const cluster = new FakeCluster();
  deployment(cluster, 'web', 2, OLD);
  deployment(cluster, 'api', 1, resolveInjectorConfig({ injections: [envoy('envoyproxy/envoy:v1.31.0', { env: [{ name: 'A', value: '1' }] })] }));
  const result = await run(cluster, NEW);
  assert.equal(result.exitCode, 0, result.describe());
  assert.match(result.stdout, /  Deployment shop\/api: restart: 1 pod cannot be upgraded in place\n    api-7c9d8f-0: envoy changed more than its images/, result.describe());
  assert.deepEqual(result.restarted, ['Deployment shop/api']);
  assert.ok(result.stdout.indexOf('upgraded in place: 2 pods') > 0);
});

test('a pod an interrupted run left out of its Services, with nothing else to do, is set back', async () => {
  const cluster = new FakeCluster();
  const [name] = deployment(cluster, 'web', 1, NEW, true);
  await cluster.setPodCondition('shop', name, { type: GATE, status: 'False', reason: 'InPlaceUpgrade', message: 'interrupted' });
  cluster.tick();
  assert.equal(cluster.pod('shop', name).status.conditions.find((c: any) => c.type === 'Ready').status, 'False');
  const result = await run(cluster, NEW);
  assert.equal(result.exitCode, 0, result.describe());
  assert.match(result.stdout, new RegExp(`set back in their Services \\(held by an interrupted rollout --in-place\\): shop/${name}\nset back pod shop/${name}\n$`), result.describe());
  assert.equal(cluster.pod('shop', name).status.conditions.find((c: any) => c.type === GATE).status, 'True');
});

test('--dry-run prints the plan and writes nothing', async () => {
  const cluster = new FakeCluster();
  deployment(cluster, 'web', 2, OLD);
  const result = await run(cluster, NEW, { dryRun: true });
  assert.match(result.stdout, /dry run: nothing changed\n$/, result.describe());
  assert.equal(cluster.patches, 0);
});

// Issue 40: one image under two names. containerd 1.6 reports an image by the first of its names in
// sort order, so after a move to a name that sorts later the reported image stays the old name, and
// the imageID cannot change since the image did not.

test('the status a real containerd 1.6 gave for a move to another name of the same image: a container started after the patch is on the patched spec', async () => {
  const imageID = 'sha256:763ccc4e2f6a07a1b0e7b6e3e1c0f5a5d3f0b0a4b2f5e0c9d8a7b6c5d4e3f2a1';
  const status = (containerID: string, restartCount: number) => ({
    phase: 'Running',
    conditions: [{ type: 'ContainersReady', status: 'True' }, { type: 'Ready', status: 'True' }],
    containerStatuses: [
      { name: 'app', image: 'registry.example/app:1', imageID: 'sha256:app', containerID: 'containerd://app', restartCount: 0, ready: true, started: true, state: { running: { startedAt: '2026-11-27T10:00:00Z' } } },
      // As the node reported it after the restart: the old name, the old imageID, restartCount 1, running.
      { name: 'envoy', image: 'docker.io/envoyproxy/envoy:v1.20.3', imageID, containerID, restartCount, ready: true, started: true, state: { running: { startedAt: '2026-11-27T10:05:00Z' } } },
    ],
  });
  const specWith = (image: string) => ({ containers: [{ name: 'app', image: 'registry.example/app:1' }, { name: 'envoy', image }] });
  let pod: any = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'web-5d775cdc94-8rjk4', namespace: 'shop', uid: 'u1', resourceVersion: '1' }, spec: specWith('envoyproxy/envoy:v1.20.3'), status: status('containerd://old', 0) };
  let reads = 0;
  const client: PodClient = {
    getPod: async () => {
      // The kubelet restarts envoy on the patched spec by the third read after the patch.
      if (pod.spec.containers[1].image === 'envoyproxy/envoy:v1.31.0' && ++reads === 3) pod = { ...pod, status: status('containerd://new', 1) };
      return structuredClone(pod);
    },
    patchPod: async () => {
      pod = { ...pod, metadata: { ...pod.metadata, resourceVersion: '2' }, spec: specWith('envoyproxy/envoy:v1.31.0') };
      return structuredClone(pod);
    },
    setPodCondition: async () => undefined,
    podEndpoints: async () => [],
  };
  const change = { injection: 'envoy', container: 'envoy', list: 'containers' as const, index: 1, from: 'envoyproxy/envoy:v1.20.3', to: 'envoyproxy/envoy:v1.31.0', nativeSidecar: false };
  const replan = (current: any) => (current.spec.containers[1].image === change.to ? { skip: 'done' } : { changes: [change], operations: [{ op: 'replace' as const, path: '/spec/containers/1/image', value: change.to }], readinessGate: false });
  let time = 0;
  const clock = { now: () => time, sleep: async (ms: number) => void (time += ms) };
  const settings = { prefix: PREFIX, drain: 'auto' as const, drainGraceMs: 0, timeoutMs: 120_000, pollMs: 1000 };
  const upgrade = await upgradePod(client, clock, settings, 'shop', 'web-5d775cdc94-8rjk4', replan, () => undefined);
  assert.ok(!('skipped' in upgrade), JSON.stringify(upgrade));
  assert.ok(time < 10_000, `done on the kubelet's report, not at the timeout (${time} ms)`);
  assert.deepEqual(upgrade.containers[0], { container: 'envoy', from: change.from, to: change.to, restartCount: [0, 1], imageID: [imageID, imageID], reportedImage: 'docker.io/envoyproxy/envoy:v1.20.3' });
  assert.match(
    describeUpgrade(upgrade),
    /envoy restartCount 0 -> 1, imageID sha256:763c\S+ -> sha256:763c\S+ \(the runtime reports its image as docker\.io\/envoyproxy\/envoy:v1\.20\.3, not envoyproxy\/envoy:v1\.31\.0: the imageID is unchanged, so both names are the same image/,
  );

  // Before the kubelet restarted it, the same status (old containerID, restartCount 0) is no upgrade: the wait times out.
  pod = { ...pod, spec: specWith('envoyproxy/envoy:v1.20.3'), status: status('containerd://old', 0) };
  reads = -1_000_000;
  await assert.rejects(upgradePod(client, clock, { ...settings, timeoutMs: 5_000 }, 'shop', 'web-5d775cdc94-8rjk4', replan, () => undefined), /not back within 5s: envoy not yet restarted on envoyproxy\/envoy:v1\.31\.0/);
});

test('rollout --in-place and --undo between two names of one image, in both directions of their sort order: each run ends on the kubelet\'s report, and status finds the pods up to date', async () => {
  const SHORT = resolveInjectorConfig({ injections: [envoy('envoyproxy/envoy:v1.31')] });
  const LONG = OLD; // envoyproxy/envoy:v1.31.0, which sorts after v1.31
  const cluster = new FakeCluster();
  cluster.sameImage.push(['envoyproxy/envoy:v1.31', 'envoyproxy/envoy:v1.31.0']);
  const names = deployment(cluster, 'web', 2, SHORT);
  const images = () => names.map((name) => cluster.pod('shop', name).spec.containers[1].image);
  const reported = () => names.map((name) => container(cluster.pod('shop', name), 'envoy').image);
  const step = async (config: ResolvedInjectorConfig, options: Partial<InPlaceCommandOptions>, want: string) => {
    const started = cluster.time;
    const result = await run(cluster, config, options);
    assert.equal(result.exitCode, 0, result.describe());
    assert.deepEqual(images(), [want, want], result.describe());
    // Every pod back on the kubelet's first report: far inside one pod's timeout.
    assert.ok(cluster.time - started < OPTIONS.timeoutMs / 4, `${cluster.time - started} ms\n${result.describe()}`);
    for (const name of names) assert.equal(container(cluster.pod('shop', name), 'envoy').restartCount > 0, true, name);
    return result;
  };

  // v1.31 -> v1.31.0 (a name that sorts later: the runtime goes on reporting v1.31).
  const later = await step(LONG, {}, 'envoyproxy/envoy:v1.31.0');
  assert.deepEqual(reported(), ['docker.io/envoyproxy/envoy:v1.31', 'docker.io/envoyproxy/envoy:v1.31']);
  assert.match(later.stdout, /imageID (sha256:\S+) -> \1 \(the runtime reports its image as docker\.io\/envoyproxy\/envoy:v1\.31, not envoyproxy\/envoy:v1\.31\.0: the imageID is unchanged/, later.describe());
  const classify = (config: ResolvedInjectorConfig) => classifyPods({ pods: cluster.listPods(), namespaceLabels: new Map(), owners: new Map() }, source(config)).map((status) => status.state);
  assert.deepEqual(classify(LONG), ['up-to-date', 'up-to-date'], 'status compares the spec and the recorded hashes, not the reported name');
  // --undo back to v1.31 (a name that sorts first: reported as asked).
  const undone = await step(LONG, { undo: true }, 'envoyproxy/envoy:v1.31');
  assert.doesNotMatch(undone.stdout, /the runtime reports its image as/, undone.describe());
  // Again to v1.31.0, then the config moves to v1.31 (sorting first) and --undo goes back across the pair.
  await step(LONG, {}, 'envoyproxy/envoy:v1.31.0');
  await step(SHORT, {}, 'envoyproxy/envoy:v1.31');
  assert.deepEqual(classify(SHORT), ['up-to-date', 'up-to-date']);
  const back = await step(SHORT, { undo: true }, 'envoyproxy/envoy:v1.31.0');
  assert.match(back.stdout, /the runtime reports its image as docker\.io\/envoyproxy\/envoy:v1\.31, not envoyproxy\/envoy:v1\.31\.0/, back.describe());
});

// Issue 39: pods that carry overrides. An image bump is in place and keeps each pod's overridden
// resources; a change of the configured resources (the default an override falls back to) is more
// than an image, so the workload is restarted, never patched in place.
test('overridden pods: an image bump keeps each pod\'s overridden cpu request; a changed resource default restarts the workload', async () => {
  const offer = { overrides: [{ annotation: 'envoy.example.com/cpu-request', container: 'envoy', resource: 'requests.cpu' as const, max: '1' }] };
  const withResources = (image: string, cpu: string) => resolveInjectorConfig({ injections: [envoy(image, { containers: [{ name: 'envoy', image, resources: { requests: { cpu } } }], ...offer })] });
  const before = withResources('envoyproxy/envoy:v1.31.0', '100m');
  const cluster = new FakeCluster();
  for (const [index, cpu] of ['250m', '400m'].entries()) {
    const pod: any = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: `web-7c9d8f-${index}`, namespace: 'shop', labels: { app: 'web', 'pod-template-hash': '7c9d8f' }, annotations: { 'envoy.example.com/cpu-request': cpu }, ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'web-7c9d8f', uid: 'rs', controller: true }] },
      spec: { containers: [{ name: 'app', image: 'registry.example/app:1' }] },
    };
    const injected = applyResponse(pod, evaluate(createRequestFor(pod, 'shop', 'u'), before).response);
    injected.status = {};
    cluster.addPod(injected);
  }
  const cpuOf = () => cluster.listPods().map((pod) => pod.spec.containers[1].resources.requests.cpu);
  assert.deepEqual(cpuOf(), ['250m', '400m']);
  assert.deepEqual(classifyPods({ pods: cluster.listPods(), namespaceLabels: new Map(), owners: new Map() }, source(before)).map((status) => status.state), ['up-to-date', 'up-to-date'], 'overridden pods are up to date');

  const bumped = await run(cluster, withResources('envoyproxy/envoy:v1.31.1', '100m'));
  assert.equal(bumped.exitCode, 0, bumped.describe());
  assert.match(bumped.stdout, /upgraded in place: 2 pods\n$/, bumped.describe());
  assert.deepEqual(cluster.listPods().map((pod) => pod.spec.containers[1].image), ['envoyproxy/envoy:v1.31.1', 'envoyproxy/envoy:v1.31.1']);
  assert.deepEqual(cpuOf(), ['250m', '400m'], 'each pod keeps its overridden value');

  const newDefault = await run(cluster, withResources('envoyproxy/envoy:v1.31.1', '200m'));
  assert.equal(newDefault.exitCode, 0, newDefault.describe());
  assert.deepEqual(newDefault.restarted, ['Deployment shop/web'], newDefault.describe());
  assert.match(newDefault.stdout, /envoy changed more than its images/, newDefault.describe());
});
