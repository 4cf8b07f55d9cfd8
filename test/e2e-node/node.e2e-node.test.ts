// npm run e2e:node: the default app's output, applied as it is (`kubectl apply -f dist/` of what
// `npm run synth` writes) to a one-node cluster with a real kubelet, and every pod it makes started
// and checked through the apiserver's own view. INJECTOR_BACKEND=admissionPolicy runs the same suite
// with the policies instead of the webhook (the webhook's own pods and faults are then not part of it).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as path from 'node:path';
import type { NodeCluster } from './support/node-cluster';
import {
  Pod,
  cli,
  condition,
  containerStatus,
  describePod,
  describeRun,
  events,
  exec,
  getPod,
  isReady,
  kubectl,
  listPods,
  secondsBetween,
  waitForPod,
} from './support/node-checks';
import { runFaultLoad } from './support/fault-load';
import {
  BACKEND,
  ENABLED,
  ENVOY_FLOATING,
  ENVOY_IN_PLACE,
  ENVOY_MISSING,
  ENVOY_NEXT,
  ENVOY_PINNED,
  INJECTOR_NAMESPACE,
  WEBHOOK,
  app,
  apply,
  applyConfig,
  cleanUp,
  dist,
  echoDeployment,
  kubectlAsync,
  namespace,
  podFacts,
  progress,
  shown,
  skip,
  startSuite,
  stopSuite,
  variant,
} from './support/node-suite';

let cluster: NodeCluster;
before(async () => {
  if (!skip) cluster = await startSuite();
});
after(stopSuite);

describe(`the default app on a node (${BACKEND})`, { skip }, () => {
  if (WEBHOOK) {
    test("the webhook's two replicas are Ready by their own probes in a namespace that enforces restricted", async () => {
      const ns = await cluster.plane.ok('GET', `/api/v1/namespaces/${INJECTOR_NAMESPACE}`);
      assert.equal(ns.metadata.labels['pod-security.kubernetes.io/enforce'], 'restricted');
      const deployment = await cluster.plane.ok('GET', `/apis/apps/v1/namespaces/${INJECTOR_NAMESPACE}/deployments/sidecar-injector`);
      assert.equal(deployment.status.readyReplicas, 2, JSON.stringify(deployment.status));
      assert.equal(deployment.status.availableReplicas, 2);
      const pods = await listPods(cluster, INJECTOR_NAMESPACE, 'app.kubernetes.io/name=sidecar-injector');
      assert.equal(pods.length, 2, pods.map(describePod).join('\n'));
      for (const pod of pods) {
        assert.ok(isReady(pod), describePod(pod));
        const webhook = pod.spec.containers.find((c: any) => c.name === 'webhook');
        assert.equal(webhook.readinessProbe.httpGet.port, 'ops');
        assert.equal(webhook.livenessProbe.httpGet.port, 'ops');
        assert.equal(containerStatus(pod, 'webhook')!.restartCount, 0, describePod(pod));
      }
      // Behind the PDB: both healthy, one may go.
      const pdb = await cluster.plane.ok('GET', `/apis/policy/v1/namespaces/${INJECTOR_NAMESPACE}/poddisruptionbudgets/sidecar-injector`);
      assert.deepEqual({ healthy: pdb.status.currentHealthy, allowed: pdb.status.disruptionsAllowed }, { healthy: 2, allowed: 1 });
      // Reached through the Service at the pods' own addresses.
      const slices = await cluster.plane.ok('GET', `/apis/discovery.k8s.io/v1/namespaces/${INJECTOR_NAMESPACE}/endpointslices?labelSelector=kubernetes.io%2Fservice-name%3Dsidecar-injector`);
      const endpoints = slices.items.flatMap((slice: any) => slice.endpoints.filter((e: any) => e.conditions.ready).flatMap((e: any) => e.addresses));
      assert.deepEqual(endpoints.sort(), pods.map((pod) => pod.status.podIP).sort());
    });

    test('the webhook pod runs as synthesized: uid 65532, read-only root, 0440 files for its group, RuntimeDefault seccomp, 192Mi and its NODE_OPTIONS', async () => {
      const [pod] = await listPods(cluster, INJECTOR_NAMESPACE, 'app.kubernetes.io/name=sidecar-injector');
      const name = pod.metadata.name;
      const run = (command: string) => {
        const result = exec(cluster, INJECTOR_NAMESPACE, name, 'webhook', ['sh', '-c', command]);
        return `${result.stdout}${result.stderr}`.trim();
      };
      assert.equal(run('id -u; id -g'), '65532\n65532');
      assert.match(run('touch /probe 2>&1; echo exit $?'), /Read-only file system[\s\S]*exit 1/);
      // The kubelet wrote the Secret's and ConfigMaps' files 0440 for the pod's fsGroup.
      assert.equal(run('stat -L -c "%a %g" /etc/sidecar-injector/tls/tls.key /etc/sidecar-injector/config/config.json /opt/sidecar-injector/server.js.br'), '440 65532\n440 65532\n440 65532');
      assert.match(run('grep Seccomp: /proc/1/status'), /Seccomp:\s+2/);
      assert.equal(run('cat /sys/fs/cgroup/memory/memory.limit_in_bytes'), String(192 * 1024 * 1024));
      assert.match(run("tr '\\0' '\\n' < /proc/1/environ | grep NODE_OPTIONS"), /^NODE_OPTIONS=--max-old-space-size=96 --max-semi-space-size=8$/);
      // The server read the limit through the downward API, and sized itself by it.
      const log = kubectl(cluster, ['-n', INJECTOR_NAMESPACE, 'logs', name, '-c', 'webhook']);
      assert.match(log, /"msg":"memory","limitBytes":201326592/);
      assert.match(log, /"msg":"listening","port":8443,"opsPort":8081,"ready":true/);
    });
  }

  test('seed 000: a pod in a labelled namespace is Ready with envoy Running as uid 101, its admin port answering', async () => {
    namespace('seed-000', ENABLED);
    apply({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'web', namespace: 'seed-000' }, spec: { containers: [app('web')] } });
    const pod = await waitForPod(cluster, 'seed-000', 'web', 'Ready', isReady);
    assert.deepEqual(pod.spec.containers.map((c: any) => c.name), ['web', 'envoy'], describePod(pod));
    assert.ok(containerStatus(pod, 'envoy')!.state.running, describePod(pod));
    assert.equal(exec(cluster, 'seed-000', 'web', 'envoy', ['id', '-u']).stdout.trim(), '101');
    assert.equal(exec(cluster, 'seed-000', 'web', 'web', ['wget', '-qO-', 'http://127.0.0.1:9901/ready']).stdout.trim(), 'LIVE');
  });

  test('seed 002: a Deployment waits in its wait-for-it init container until the db Service answers, then its app starts', async () => {
    namespace('seed-002', ENABLED);
    const DB_IP = '10.96.0.53';
    apply({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'orders', namespace: 'seed-002', annotations: { 'com.foreach/wait-for-it': 'db:5432' } },
      spec: {
        replicas: 1,
        selector: { matchLabels: { app: 'orders' } },
        template: {
          metadata: { labels: { app: 'orders' } },
          // No cluster DNS runs on this node: the name comes from the pod's /etc/hosts.
          spec: { hostAliases: [{ ip: DB_IP, hostnames: ['db'] }], containers: [app('orders')] },
        },
      },
    });
    let waiting: Pod | undefined;
    await cluster.until('orders waiting in wait-for-it', async () => {
      [waiting] = await listPods(cluster, 'seed-002', 'app=orders');
      return !!waiting && !!containerStatus(waiting, 'wait-for-it')?.state?.running;
    }, 120_000);
    const name = waiting!.metadata.name;
    await cluster.until('wait-for-it says it is waiting', () => kubectl(cluster, ['-n', 'seed-002', 'logs', name, '-c', 'wait-for-it']).includes('wait-for-it.sh: waiting 15 seconds for db:5432'), 30_000);
    const before = await getPod(cluster, 'seed-002', name);
    assert.equal(before!.status.phase, 'Pending', describePod(before));
    assert.ok(containerStatus(before!, 'orders')!.state.waiting, describePod(before));
    // Now the database: a Service at the address the app's hostAliases name, and a pod behind it.
    apply({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'db', namespace: 'seed-002' }, spec: { clusterIP: DB_IP, selector: { app: 'db' }, ports: [{ port: 5432, targetPort: 5432 }] } });
    const service = await cluster.plane.ok('GET', '/api/v1/namespaces/seed-002/services/db');
    apply({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'db', namespace: 'seed-002', labels: { app: 'db' } }, spec: { containers: [app('db', { command: ['httpd', '-f', '-p', '5432', '-h', '/tmp'] })] } });
    const ready = await waitForPod(cluster, 'seed-002', name, 'Ready', isReady, 180_000);
    const init = containerStatus(ready, 'wait-for-it')!;
    assert.equal(init.state.terminated.exitCode, 0, describePod(ready));
    const log = kubectl(cluster, ['-n', 'seed-002', 'logs', name, '-c', 'wait-for-it']);
    assert.match(log, /wait-for-it\.sh: db:5432 is available after \d+ seconds/);
    // The app started only once the database was there.
    const started = containerStatus(ready, 'orders')!.state.running.startedAt;
    assert.ok(secondsBetween(service.metadata.creationTimestamp, started) >= 0, `app started ${started}, db Service created ${service.metadata.creationTimestamp}`);
    progress(`seed 002: ${log.trim().split('\n').join(' | ')}; init restarts ${init.restartCount}`);
  });

  test("seed 003: the readiness probe's merged initialDelaySeconds shows in the running container's spec and status", async () => {
    namespace('seed-003', ENABLED);
    apply({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'probe', namespace: 'seed-003', labels: { app: 'myApp' } },
      spec: { containers: [app('my-container', { readinessProbe: { exec: { command: ['true'] }, periodSeconds: 1 } })] },
    });
    const pod = await waitForPod(cluster, 'seed-003', 'probe', 'Ready', isReady);
    const container = pod.spec.containers.find((c: any) => c.name === 'my-container');
    assert.equal(container.readinessProbe.initialDelaySeconds, 10);
    const status = containerStatus(pod, 'my-container')!;
    const readyAfter = secondsBetween(status.state.running.startedAt, condition(pod, 'ContainersReady')!.lastTransitionTime);
    assert.ok(readyAfter >= 10, `my-container became ready ${readyAfter} s after it started; the merged probe waits 10 s`);
  });

  test("seed 004: the nginx sidecar serves the ConfigMap's page, fetched from another pod", async () => {
    namespace('seed-004', ENABLED);
    apply({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'nginx-configmap', namespace: 'seed-004' },
      data: {
        'nginx.conf': [
          'pid /tmp/nginx.pid;',
          'events {}',
          'http {',
          '  client_body_temp_path /tmp/client_temp;',
          '  access_log /dev/stdout;',
          '  server { listen 8080; location / { root /etc/nginx; index index.html; } }',
          '}',
          '',
        ].join('\n'),
        'index.html': 'served by the injected nginx sidecar\n',
      },
    });
    apply({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'page', namespace: 'seed-004', annotations: { 'sidecar-injector-webhook.morven.me/inject': 'true' } }, spec: { containers: [app('app')] } });
    const pod = await waitForPod(cluster, 'seed-004', 'page', 'Ready', isReady);
    assert.deepEqual(pod.spec.containers.map((c: any) => c.name).sort(), ['app', 'envoy', 'sidecar-nginx']);
    namespace('seed-004-client');
    apply({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'client', namespace: 'seed-004-client' }, spec: { containers: [app('client')] } });
    await waitForPod(cluster, 'seed-004-client', 'client', 'Ready', isReady);
    const fetched = exec(cluster, 'seed-004-client', 'client', 'client', ['wget', '-qO-', `http://${pod.status.podIP}:8080/`]);
    assert.equal(fetched.stdout, 'served by the injected nginx sidecar\n', describeRun(fetched));
  });

  test('a Job whose pod got Envoy as a native sidecar completes', async () => {
    namespace('jobs', ENABLED);
    apply({
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: { name: 'once', namespace: 'jobs' },
      spec: { backoffLimit: 0, template: { spec: { restartPolicy: 'Never', containers: [app('work', { command: ['sh', '-c', 'echo working; sleep 2; echo done'] })] } } },
    });
    await cluster.until('Job jobs/once Complete', async () => {
      const job = await cluster.plane.ok('GET', '/apis/batch/v1/namespaces/jobs/jobs/once');
      if (job.status.conditions?.some((c: any) => c.type === 'Failed' && c.status === 'True')) throw new Error(`Job failed: ${JSON.stringify(job.status)}`);
      return job.status.conditions?.some((c: any) => c.type === 'Complete' && c.status === 'True');
    }, 180_000);
    const [pod] = await listPods(cluster, 'jobs', 'job-name=once');
    const envoy = pod.spec.initContainers.find((c: any) => c.name === 'envoy');
    assert.equal(envoy?.restartPolicy, 'Always', describePod(pod));
    assert.equal(pod.status.phase, 'Succeeded', describePod(pod));
    assert.equal(containerStatus(pod, 'work')!.state.terminated.exitCode, 0);
  });

  test('a Guaranteed pod runs as Guaranteed', async () => {
    const resources = { requests: { cpu: '100m', memory: '64Mi' }, limits: { cpu: '100m', memory: '64Mi' } };
    apply({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'steady', namespace: 'seed-000' }, spec: { containers: [app('steady', { resources })] } });
    const pod = await waitForPod(cluster, 'seed-000', 'steady', 'Ready', isReady);
    assert.equal(pod.status.qosClass, 'Guaranteed', describePod(pod));
    const envoy = pod.spec.containers.find((c: any) => c.name === 'envoy');
    assert.deepEqual(envoy.resources.limits, envoy.resources.requests);
  });

  test("an injection whose ConfigMap is missing in the pod's namespace: the pod waits in ContainerCreating and status names the missing ConfigMap", async () => {
    namespace('no-config', ENABLED);
    apply({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'page', namespace: 'no-config', annotations: { 'sidecar-injector-webhook.morven.me/inject': 'true' } }, spec: { containers: [app('app')] } });
    await cluster.until('a FailedMount event for no-config/page', async () => (await events(cluster, 'no-config', 'page')).some((line) => /FailedMount: .*configmap "nginx-configmap" not found/.test(line)), 120_000);
    const pod = await getPod(cluster, 'no-config', 'page');
    assert.equal(containerStatus(pod!, 'app')?.state?.waiting?.reason ?? 'ContainerCreating', 'ContainerCreating', describePod(pod));
    const run = await cli(cluster, ['status', '--from', dist, '-n', 'no-config']);
    assert.match(run.stdout, /nginx-sidecar: volume nginx-conf needs ConfigMap nginx-configmap, missing in namespace no-config \(1 pod, 1 Pending/, describeRun(run));
    assert.equal(run.status, 8, describeRun(run));
    progress(`status on a missing ConfigMap: exit ${run.status}\n${run.stdout}`);
  });

  test('kubectl shows the seed workloads Running (and the Job Completed), every container ready', () => {
    const namespaces = [...(WEBHOOK ? [INJECTOR_NAMESPACE] : []), 'seed-000', 'seed-002', 'seed-003', 'seed-004', 'jobs'];
    const shown = namespaces.map((ns) => `$ kubectl get pods -n ${ns}\n${kubectl(cluster, ['get', 'pods', '-n', ns])}`).join('');
    progress(`the seed workloads:\n${shown}`);
    for (const line of shown.split('\n').filter((row) => row && !row.startsWith('$') && !row.startsWith('NAME'))) {
      const [name, ready, status] = line.split(/\s+/);
      if (status === 'Completed') continue;
      const [up, all] = ready.split('/');
      assert.ok(status === 'Running' && up === all, `${name}: ${ready} ${status}`);
    }
    cleanUp('seed-000', 'seed-002', 'seed-003', 'seed-004', 'seed-004-client', 'jobs', 'no-config');
  });

  if (WEBHOOK) {
    test('faults: a rolling restart of the injector and a killed webhook process under a load of pod creates, with failurePolicy Fail', async () => {
      kubectl(cluster, ['patch', 'mutatingwebhookconfiguration', 'sidecar-injector.sidecar-injector', '--type=json', '-p', JSON.stringify([{ op: 'replace', path: '/webhooks/0/failurePolicy', value: 'Fail' }])]);
      const results = await runFaultLoad(cluster, { namespace: INJECTOR_NAMESPACE, progress });
      for (const result of results) {
        progress(`faults, ${result.fault}: ${result.requested} creates, ${result.created} created, ${result.rejected} rejected (${result.rejectedAfterHealed} after it healed), ${result.withoutEnvoy} without envoy; ${result.fault} took ${result.faultSeconds.toFixed(1)} s, load ${result.loadSeconds.toFixed(1)} s${result.errors.length ? `; rejections: ${result.errors.join(' | ')}` : ''}`);
        // With failurePolicy Fail, a pod is either injected or rejected.
        assert.equal(result.withoutEnvoy, 0, result.fault);
        assert.equal(result.created + result.rejected, result.requested, result.fault);
        assert.ok(result.loadSeconds > result.faultSeconds + 2, `${result.fault}: the load (${result.loadSeconds} s) must outlast the fault (${result.faultSeconds} s)`);
      }
      const [restart, killed] = results;
      // A rolling restart drains each old replica before it goes: nothing is lost.
      assert.equal(restart.rejected, 0, restart.errors.join('\n'));
      // A SIGKILL loses what the dead process held (the apiserver does not retry a webhook call) and
      // the dials that reach its address before the kubelet has withdrawn it: connection errors,
      // only while it was down.
      assert.equal(killed.rejectedAfterHealed, 0, killed.errors.join('\n'));
      for (const error of killed.errors) assert.match(error, /connection reset by peer|connection refused|EOF/, error);
    });
  }

  test('day two: an Envoy bump is applied, status exits 3, rollout waits until the Deployments are available, then status exits 0', async () => {
    namespace('day-two', ENABLED);
    for (const name of ['web', 'api']) {
      apply({
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name, namespace: 'day-two' },
        spec: { replicas: 2, selector: { matchLabels: { app: name } }, template: { metadata: { labels: { app: name } }, spec: { containers: [app(name)] } } },
      });
    }
    for (const name of ['web', 'api']) kubectl(cluster, ['-n', 'day-two', 'rollout', 'status', `deploy/${name}`, '--timeout=180s']);
    const upToDate = await cli(cluster, ['status', '--from', dist, '-n', 'day-two']);
    assert.equal(upToDate.status, 0, describeRun(upToDate));

    // The bump: the app's Envoy image changed, synthesized and applied as a GitOps pipeline would.
    const bumped = variant(ENVOY_NEXT);
    await applyConfig(bumped);
    const stale = await cli(cluster, ['status', '--from', bumped, '-n', 'day-two']);
    progress(`$ status --from dist/ -n day-two → exit ${stale.status}\n${stale.stdout}`);
    assert.equal(stale.status, 3, describeRun(stale));

    const rollout = await cli(cluster, ['rollout', '--from', bumped, '-n', 'day-two', '--timeout', '300s']);
    progress(`$ rollout --from dist/ -n day-two → exit ${rollout.status} after ${rollout.seconds.toFixed(1)} s\n${rollout.stdout}`);
    assert.equal(rollout.status, 0, describeRun(rollout));
    // Returned only once each Deployment is available with every replica updated, as rollout status decides it.
    for (const name of ['web', 'api']) {
      const deployment = await cluster.plane.ok('GET', `/apis/apps/v1/namespaces/day-two/deployments/${name}`);
      const { replicas, updatedReplicas, availableReplicas, readyReplicas } = deployment.status;
      assert.deepEqual({ replicas, updatedReplicas, availableReplicas, readyReplicas }, { replicas: 2, updatedReplicas: 2, availableReplicas: 2, readyReplicas: 2 }, name);
    }
    await cluster.until('the old pods gone', async () => (await listPods(cluster, 'day-two')).every((pod) => !pod.metadata.deletionTimestamp), 120_000);
    const fresh = await cli(cluster, ['status', '--from', bumped, '-n', 'day-two']);
    assert.equal(fresh.status, 0, describeRun(fresh));
    for (const pod of await listPods(cluster, 'day-two')) {
      assert.equal(containerStatus(pod, 'envoy')!.image, `docker.io/envoyproxy/envoy:v${ENVOY_NEXT}`, describePod(pod));
    }
    cleanUp('day-two');
  });

  test('rollout --in-place: a canary of 1 pod, then --continue; each pod keeps its uid and its app container, envoy restarts once on the new image, then status exits 0', async () => {
    namespace('in-place', ENABLED);
    echoDeployment('in-place', 'echo');
    kubectl(cluster, ['-n', 'in-place', 'rollout', 'status', 'deploy/echo', '--timeout=180s']);
    const before = await podFacts('in-place', 'app=echo');
    const next = variant(ENVOY_IN_PLACE);
    await applyConfig(next);
    const stale = await cli(cluster, ['status', '--from', next, '-n', 'in-place']);
    assert.equal(stale.status, 3, describeRun(stale));
    const canary = await cli(cluster, ['rollout', '--in-place', '--from', next, '-n', 'in-place', '--canary', '1']);
    shown(`rollout --in-place --from dist/ -n in-place --canary 1`, canary);
    assert.equal(canary.status, 0, describeRun(canary));
    const afterCanary = await podFacts('in-place', 'app=echo');
    assert.equal(afterCanary.filter((pod) => pod.envoyImage.endsWith(`:v${ENVOY_IN_PLACE}`)).length, 1, JSON.stringify(afterCanary));
    const rest = await cli(cluster, ['rollout', '--in-place', '--from', next, '-n', 'in-place', '--continue']);
    shown(`rollout --in-place --from dist/ -n in-place --continue`, rest);
    assert.equal(rest.status, 0, describeRun(rest));
    const after = await podFacts('in-place', 'app=echo');
    assert.deepEqual(after.map((pod) => pod.uid).sort(), before.map((pod) => pod.uid).sort(), 'the same pods');
    for (const pod of after) {
      const was = before.find((earlier) => earlier.uid === pod.uid)!;
      assert.deepEqual(
        { app: pod.appRestarts, appStarted: pod.appProcessStart, envoy: pod.envoyRestarts, image: pod.envoyImage, ready: pod.ready },
        { app: 0, appStarted: was.appProcessStart, envoy: was.envoyRestarts + 1, image: `docker.io/envoyproxy/envoy:v${ENVOY_IN_PLACE}`, ready: true },
        pod.name,
      );
      assert.notEqual(pod.envoyImageId, was.envoyImageId, pod.name);
    }
    progress(`in place, before → after:\n${after.map((pod) => { const was = before.find((b) => b.uid === pod.uid)!; return `  ${pod.name} uid ${pod.uid}: app restarts ${was.appRestarts} → ${pod.appRestarts}, app process start ${was.appProcessStart} → ${pod.appProcessStart}, envoy restarts ${was.envoyRestarts} → ${pod.envoyRestarts}, ${was.envoyImage} → ${pod.envoyImage}`; }).join('\n')}`);
    const fresh = await cli(cluster, ['status', '--from', next, '-n', 'in-place']);
    shown('status --from dist/ -n in-place', fresh);
    assert.equal(fresh.status, 0, describeRun(fresh));
  });

  test('rollout --in-place with an image that does not exist stops at the first pod (exit 7), and --undo puts it back', async () => {
    const bad = variant(ENVOY_MISSING);
    await applyConfig(bad);
    const run = await cli(cluster, ['rollout', '--in-place', '--from', bad, '-n', 'in-place', '--timeout', '120s']);
    shown('rollout --in-place --from dist-bad-image/ -n in-place', run);
    assert.equal(run.status, 7, describeRun(run));
    const pods = await podFacts('in-place', 'app=echo');
    assert.deepEqual(pods.map((pod) => pod.envoySpecImage).sort(), [`envoyproxy/envoy:v${ENVOY_IN_PLACE}`, `envoyproxy/envoy:v${ENVOY_IN_PLACE}`, `envoyproxy/envoy:v${ENVOY_MISSING}`], JSON.stringify(pods));
    // It stopped at the kubelet's first word on the pull, not at the timeout.
    assert.match(run.stderr, /container envoy on envoyproxy\/envoy:v9\.9\.9: (ErrImagePull|ImagePullBackOff)/, describeRun(run));
    const undo = await cli(cluster, ['rollout', '--in-place', '--from', bad, '-n', 'in-place', '--undo']);
    shown('rollout --in-place --from dist-bad-image/ -n in-place --undo', undo);
    assert.equal(undo.status, 0, describeRun(undo));
    const restored = await podFacts('in-place', 'app=echo');
    for (const pod of restored) assert.deepEqual({ image: pod.envoyImage, ready: pod.ready, app: pod.appRestarts }, { image: `docker.io/envoyproxy/envoy:v${ENVOY_IN_PLACE}`, ready: true, app: 0 }, pod.name);
    await applyConfig(variant(ENVOY_IN_PLACE));
    const fresh = await cli(cluster, ['status', '--from', variant(ENVOY_IN_PLACE), '-n', 'in-place']);
    assert.equal(fresh.status, 0, describeRun(fresh));
    cleanUp('in-place');
  });

  test("rollout --in-place --native-sidecars in-place: a Job pod's native Envoy restarts on its new image while the Job's container keeps running", async () => {
    namespace('native', ENABLED);
    apply({
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: { name: 'long', namespace: 'native' },
      spec: { backoffLimit: 0, template: { spec: { restartPolicy: 'Never', containers: [app('work')] } } },
    });
    let pod: Pod | undefined;
    await cluster.until('the Job pod made', async () => !!([pod] = await listPods(cluster, 'native', 'job-name=long'))[0], 60_000);
    const name = pod!.metadata.name;
    pod = await waitForPod(cluster, 'native', name, 'Ready', isReady);
    assert.equal(pod!.spec.initContainers.find((c: any) => c.name === 'envoy')?.restartPolicy, 'Always', describePod(pod));
    const envoyBefore = containerStatus(pod!, 'envoy')!;
    const workBefore = containerStatus(pod!, 'work')!;
    const back = variant(ENVOY_NEXT);
    await applyConfig(back);
    const run = await cli(cluster, ['rollout', '--in-place', '--from', back, '-n', 'native', '--native-sidecars', 'in-place']);
    shown('rollout --in-place --from dist/ -n native --native-sidecars in-place', run);
    assert.equal(run.status, 0, describeRun(run));
    const after = await waitForPod(cluster, 'native', name, 'Ready', isReady);
    const envoy = containerStatus(after, 'envoy')!;
    const work = containerStatus(after, 'work')!;
    assert.deepEqual(
      { envoyRestarts: envoy.restartCount, envoyImage: envoy.image, workRestarts: work.restartCount, workStarted: work.state.running?.startedAt, uid: after.metadata.uid },
      { envoyRestarts: envoyBefore.restartCount + 1, envoyImage: `docker.io/envoyproxy/envoy:v${ENVOY_NEXT}`, workRestarts: 0, workStarted: workBefore.state.running.startedAt, uid: pod!.metadata.uid },
      describePod(after),
    );
    cleanUp('native');
    await applyConfig(variant(ENVOY_IN_PLACE));
  });

  test('rollout --in-place and --undo between two names of one image (v1.31, v1.31.0), in both directions of their sort order: each exits 0 on the kubelet\'s report, pods and apps kept, status exits 0', async () => {
    namespace('renamed', ENABLED);
    const floating = variant(ENVOY_FLOATING);
    const pinned = variant(ENVOY_PINNED);
    await applyConfig(floating);
    echoDeployment('renamed', 'echo');
    kubectl(cluster, ['-n', 'renamed', 'rollout', 'status', 'deploy/echo', '--timeout=180s']);
    const start = await podFacts('renamed', 'app=echo');
    progress(`two names of one image: containerd holds ${cluster.images().filter((image) => image.includes('envoy:v1.31')).join(', ')}; the pods run ${start.map((pod) => `${pod.envoySpecImage} (reported ${pod.envoyImage}, ${pod.envoyImageId})`).join('; ')}`);
    let facts = start;
    const steps: { from: string; undo: boolean; to: string; what: string }[] = [
      { from: pinned, undo: false, to: ENVOY_PINNED, what: 'v1.31 -> v1.31.0 (a name that sorts after the reported one)' },
      { from: pinned, undo: true, to: ENVOY_FLOATING, what: '--undo: v1.31.0 -> v1.31 (the name that sorts first)' },
      { from: pinned, undo: false, to: ENVOY_PINNED, what: 'v1.31 -> v1.31.0 again' },
      { from: floating, undo: false, to: ENVOY_FLOATING, what: 'the config back on v1.31: v1.31.0 -> v1.31 (sorts first)' },
      { from: floating, undo: true, to: ENVOY_PINNED, what: '--undo: v1.31 -> v1.31.0 (sorts after)' },
    ];
    let applied = floating;
    for (const step of steps) {
      if (step.from !== applied) await applyConfig((applied = step.from));
      const args = ['rollout', '--in-place', '--from', step.from, '-n', 'renamed', '--timeout', '120s', ...(step.undo ? ['--undo'] : [])];
      const run = await cli(cluster, args);
      shown(`${args.join(' ').replace(step.from, `${path.basename(step.from)}/`)}   # ${step.what}`, run);
      // A wait that needed the reported name or the imageID to change would end at the timeout (exit 7).
      assert.equal(run.status, 0, describeRun(run));
      const now = await podFacts('renamed', 'app=echo');
      assert.deepEqual(now.map((pod) => pod.uid).sort(), start.map((pod) => pod.uid).sort(), `${step.what}: the same pods`);
      for (const pod of now) {
        const was = facts.find((earlier) => earlier.uid === pod.uid)!;
        assert.deepEqual(
          { spec: pod.envoySpecImage, envoy: pod.envoyRestarts, imageID: pod.envoyImageId, app: pod.appRestarts, appStarted: pod.appProcessStart, ready: pod.ready },
          { spec: `envoyproxy/envoy:v${step.to}`, envoy: was.envoyRestarts + 1, imageID: was.envoyImageId, app: 0, appStarted: was.appProcessStart, ready: true },
          `${step.what}: ${pod.name}`,
        );
        // Where the runtime names the image otherwise than the spec, the output says so.
        if (pod.envoyImage !== `docker.io/envoyproxy/envoy:v${step.to}`) {
          assert.ok(run.stdout.includes(`the runtime reports its image as ${pod.envoyImage}, not envoyproxy/envoy:v${step.to}: the imageID is unchanged`), `${pod.name} reports ${pod.envoyImage}\n${describeRun(run)}`);
        }
      }
      progress(`${step.what}: exit 0 in ${run.seconds.toFixed(1)} s; ${now.map((pod) => `${pod.name} spec ${pod.envoySpecImage}, reported ${pod.envoyImage}, envoy restarts ${pod.envoyRestarts}`).join('; ')}`);
      facts = now;
      if (!step.undo) {
        const fresh = await cli(cluster, ['status', '--from', step.from, '-n', 'renamed']);
        shown(`status --from ${path.basename(step.from)}/ -n renamed`, fresh);
        assert.equal(fresh.status, 0, describeRun(fresh));
      }
    }
    cleanUp('renamed');
    await applyConfig(variant(ENVOY_IN_PLACE));
  });

  test('traffic through Envoy to the pods during rollout --in-place: without the readiness gate, and with it', async () => {
    const results: string[] = [];
    for (const gated of [false, true]) {
      const ns = gated ? 'traffic-gate' : 'traffic-plain';
      // The pods are made under a config with the gate or without; then Envoy is bumped the same way.
      await applyConfig(variant(ENVOY_IN_PLACE, { readinessGate: gated }));
      namespace(ns, ENABLED);
      echoDeployment(ns, 'echo');
      apply({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'echo', namespace: ns }, spec: { selector: { app: 'echo' }, ports: [{ port: 80, targetPort: 9901 }] } });
      kubectl(cluster, ['-n', ns, 'rollout', 'status', 'deploy/echo', '--timeout=180s']);
      if (gated) for (const pod of await listPods(cluster, ns, 'app=echo')) assert.ok(pod.spec.readinessGates?.length === 1 && isReady(pod), describePod(pod));
      apply({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'client', namespace: ns, labels: { role: 'client' }, annotations: { 'sidecar-injector.io/inject': 'false' } }, spec: { containers: [app('client')] } });
      await waitForPod(cluster, ns, 'client', 'Ready', isReady);
      const service = await cluster.plane.ok('GET', `/api/v1/namespaces/${ns}/services/echo`);
      const next = variant(ENVOY_NEXT, { readinessGate: gated });
      await applyConfig(next);
      // The client requests Envoy's port through the Service until told to stop, then prints its counts
      // (busybox 1.35's wget crashes with -T: timeout(1) bounds each request instead).
      const loop = `ok=0; fail=0; while [ ! -f /tmp/stop ]; do if timeout 2 wget -q -O /dev/null http://${service.spec.clusterIP}/ready; then ok=$((ok+1)); else fail=$((fail+1)); fi; echo "ok=$ok fail=$fail" > /tmp/counts; done; echo "ok=$ok fail=$fail"`;
      const client = kubectlAsync(['exec', '-n', ns, 'client', '-c', 'client', '--', 'sh', '-c', loop]);
      await cluster.until('the client counting', () => exec(cluster, ns, 'client', 'client', ['test', '-s', '/tmp/counts']).status === 0, 30_000);
      const run = await cli(cluster, ['rollout', '--in-place', '--from', next, '-n', ns, ...(gated ? [] : ['--drain', 'none'])]);
      assert.equal(run.status, 0, describeRun(run));
      exec(cluster, ns, 'client', 'client', ['touch', '/tmp/stop']);
      const counts = (await client).stdout.trim();
      const [, ok, fail] = /ok=(\d+) fail=(\d+)/.exec(counts) ?? [];
      results.push(`${gated ? 'with the readiness gate (--drain auto)' : 'without a gate (--drain none)'}: ${ok} requests answered, ${fail} failed, rollout ${run.seconds.toFixed(1)} s`);
      progress(`traffic ${results.at(-1)}`);
      if (gated) {
        shown(`rollout --in-place --from dist/ -n ${ns}`, run);
        assert.equal(Number(fail), 0, `with the gate, requests failed: ${counts}`);
      }
      assert.ok(Number(ok) > 0, counts);
      cleanUp(ns);
    }
    progress(`traffic during rollout --in-place:\n  ${results.join('\n  ')}`);
  });

});
