// npm run e2e:node, pod-level resources (issue 59): on its own one-node cluster (support/node-suite.ts),
// the Kubernetes website's pod-level-resources pod (made to pass "restricted", cpu halved for a 2-CPU
// node) in a namespace the default app injects: Running with Envoy, its stored spec.resources raised by
// Envoy's (podResources 'add'), and its pod-level memory limit as the kernel reports it. The kubelet gives
// a container without a memory limit the pod-level one (kuberuntime getMemoryLimit), so the app
// container without limits reads the pod's limit from its own cgroup (memory.limit_in_bytes on cgroup v1,
// memory.max on v2); this node runs with cgroupsPerQOS false (see CONTRIBUTING.md), so there is no pod
// cgroup to read it from.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { type NodeCluster, minorVersion } from './support/node-cluster';
import { containerStatus, describePod, describeRun, exec, isReady, waitForPod } from './support/node-checks';
import { BACKEND, ENABLED, app, apply, binaries, namespace, progress, skip as noBinaries, startSuite, stopSuite } from './support/node-suite';
import { parseQuantity } from '../../webhook/config';
import { podLevelViolations } from '../support/pod-level-resources';

// Pod-level resources are beta and on from 1.34; on 1.32 and 1.33 the cluster turns the alpha gate on in
// every component, as a cluster that tries them early does (else the apiserver drops spec.resources).
const minor = typeof binaries === 'string' ? 0 : minorVersion(binaries.kubeApiserver);
// Kubelet 1.36.3 on this node (cgroupsPerQOS: false) panics starting any pod that sets pod-level
// resources, injected or not (kuberuntime doPodResizeAction: nil pointer dereference; seen 2026-12-02 with
// the website's pod alone in a namespace nothing injects); 1.32.13 and 1.37.2 run it.
const skip = noBinaries || (minor === 36 ? 'skipped: kubelet 1.36 with cgroupsPerQOS false panics on any pod with pod-level resources (seen on 1.36.3, without injection too); 1.32.13 and 1.37.2 run them' : false);
if (skip && !noBinaries) console.log(`npm run e2e:node (pod-level resources) ${skip}`);
const featureGates = minor < 34 ? { PodLevelResources: true } : undefined;

let cluster: NodeCluster;
before(async () => {
  if (!skip) cluster = await startSuite({ featureGates });
});
after(stopSuite);

const NAMESPACE = 'pod-resources-example';
const MIB = 1024 * 1024;

describe(`pod-level resources on a node (${BACKEND})`, { skip }, () => {
  test("the website's pod-level-resources pod runs with Envoy, spec.resources raised by Envoy's, and its app container's cgroup holds the pod-level memory limit", async () => {
    namespace(NAMESPACE, ENABLED);
    // The injector's Service may not route yet (failurePolicy Ignore would admit the pod uninjected): a dry run shows when it does.
    const probe = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'probe', namespace: NAMESPACE }, spec: { containers: [app('app')] } };
    await cluster.until('pods in the namespace injected', async () => {
      const made = await cluster.plane.ok('POST', `/api/v1/namespaces/${NAMESPACE}/pods?dryRun=All`, probe);
      return made.spec.containers.some((c: any) => c.name === 'envoy');
    }, 60_000);
    apply({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'pod-resources-demo', namespace: NAMESPACE },
      spec: {
        resources: { limits: { cpu: '500m', memory: '200Mi' }, requests: { cpu: '500m', memory: '100Mi' } },
        containers: [
          app('pod-resources-demo-ctr-1', { resources: { limits: { cpu: '250m', memory: '100Mi' }, requests: { cpu: '250m', memory: '50Mi' } } }),
          app('pod-resources-demo-ctr-2'),
        ],
      },
    });
    const pod = await waitForPod(cluster, NAMESPACE, 'pod-resources-demo', 'Ready', isReady, 180_000);
    const names = pod.spec.containers.map((c: any) => c.name);
    assert.deepEqual(names, ['pod-resources-demo-ctr-1', 'pod-resources-demo-ctr-2', 'envoy'], describePod(pod));
    for (const name of names) assert.ok(containerStatus(pod, name)?.state?.running, `${name} is not running: ${describePod(pod)}`);
    assert.deepEqual(podLevelViolations(pod.spec), []);
    // Envoy requests 100m and 128Mi, limits 256Mi of memory (no cpu limit: its request counts).
    const value = (text: string) => Number(parseQuantity(text)! / 1_000_000n);
    assert.deepEqual(
      { requests: { cpu: value(pod.spec.resources.requests.cpu), memory: value(pod.spec.resources.requests.memory) }, limits: { cpu: value(pod.spec.resources.limits.cpu), memory: value(pod.spec.resources.limits.memory) } },
      { requests: { cpu: 600, memory: 228 * MIB * 1000 }, limits: { cpu: 600, memory: 456 * MIB * 1000 } },
      `stored spec.resources (in milli-units): ${JSON.stringify(pod.spec.resources)}`,
    );
    const read = exec(cluster, NAMESPACE, 'pod-resources-demo', 'pod-resources-demo-ctr-2', ['sh', '-c', 'cat /sys/fs/cgroup/memory/memory.limit_in_bytes 2>/dev/null || cat /sys/fs/cgroup/memory.max']);
    assert.equal(read.status, 0, describeRun(read));
    assert.equal(Number(read.stdout.trim()), 456 * MIB, `the cgroup's memory limit of the container without limits: ${describeRun(read)}`);
    const envoyLimit = exec(cluster, NAMESPACE, 'pod-resources-demo', 'envoy', ['sh', '-c', 'cat /sys/fs/cgroup/memory/memory.limit_in_bytes 2>/dev/null || cat /sys/fs/cgroup/memory.max']);
    progress(`pod-level resources: pod Running with [${names.join(', ')}], qosClass ${pod.status.qosClass}, spec.resources ${JSON.stringify(pod.spec.resources)}; memory limit in pod-resources-demo-ctr-2's cgroup ${read.stdout.trim()} bytes (${Number(read.stdout.trim()) / MIB}Mi), Envoy's ${envoyLimit.stdout.trim()}`);
  });
});
