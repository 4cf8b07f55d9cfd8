// A synthesized injector with its reconciler, loaded into the in-memory apiserver with the reconciler's
// RBAC and admission fence enforced exactly as synthesized, and a Reconciler running against it on a
// clock the test moves.
import type { ReconcilerProps, SidecarInjectorProps } from '../../charts/engine';
import { injectorFromDocuments } from '../../webhook/fleet/synthesized-injectors';
import type { Clock } from '../../webhook/fleet/cluster';
import { parseReconcilerSettings, RECONCILER_SETTINGS_FILE, type ReconcilerSettings } from '../../webhook/config';
import { LeaderLease } from '../../webhook/reconciler/lease';
import { type PassOutcome, Reconciler } from '../../webhook/reconciler/reconciler';
import { FakeKube } from './fake-kube';
import { ENVOY_V1, envoyInjection } from './revision-fixtures';
import { synthChart } from './synth-helpers';

export const NAMESPACE = 'sidecar-injector';

/** Time that moves only when told (sleeps move it at once). */
export class TestClock implements Clock {
  constructor(public time = Date.parse('2026-11-27T12:00:00Z')) {}
  now = () => this.time;
  sleep = async (ms: number) => {
    this.time += ms;
  };
  advance(ms: number) {
    this.time += ms;
  }
}

export interface Harness {
  readonly kube: FakeKube;
  readonly clock: TestClock;
  readonly settings: ReconcilerSettings;
  readonly manifests: Record<string, any>[];
  readonly logs: { level: string; message: string; fields?: Record<string, unknown> }[];
  /** A reconciler replica (its own Lease client), `identity` its pod name. */
  replica(identity: string): { reconciler: Reconciler; lease: LeaderLease };
  /** A replica that has taken the Lease (free at the time), ready to pass. */
  leader(identity: string): Promise<{ reconciler: Reconciler; lease: LeaderLease }>;
  /** Re-synthesizes the injector with other props and applies it (the ConfigMap, the webhook configuration). */
  apply(props: Partial<SidecarInjectorProps>): void;
}

/** The injector's objects as synthesized (the shared test certificate of its Service). */
const synth = (props: SidecarInjectorProps) => synthChart(props, { constructId: 'injector' }).manifests;

export function reconcilerHarness(reconciler: ReconcilerProps = {}, props: Partial<SidecarInjectorProps> = {}): Harness {
  const base: SidecarInjectorProps = { injections: [envoyInjection(ENVOY_V1)], reconciler, ...props };
  let manifests = synth(base);
  let source = injectorFromDocuments('test', manifests.map((object, index) => ({ object, source: 'test', index: index + 1, line: 1 })));
  const kube = new FakeKube(() => source);
  const clock = new TestClock();
  const logs: Harness['logs'] = [];
  const load = () => {
    for (const object of manifests) {
      if (object.kind === 'ConfigMap') kube.put('', 'configmaps', structuredClone(object));
      if (object.kind === 'MutatingWebhookConfiguration') kube.put('admissionregistration.k8s.io', 'mutatingwebhookconfigurations', structuredClone(object));
      if (object.kind === 'MutatingAdmissionPolicy') kube.put('admissionregistration.k8s.io', 'mutatingadmissionpolicies', structuredClone(object));
      if (object.kind === 'MutatingAdmissionPolicyBinding') kube.put('admissionregistration.k8s.io', 'mutatingadmissionpolicybindings', structuredClone(object));
    }
    // The reconciler's admission fence as synthesized: every write of the reconciler passes through it.
    const fence = manifests.find((object) => object.kind === 'ValidatingAdmissionPolicy' && object.metadata.name.endsWith('-reconciler'))!;
    kube.fence = { policy: fence as any, username: `system:serviceaccount:${NAMESPACE}:sidecar-injector-reconciler` };
  };
  load();
  const settingsMap = manifests.find((object) => object.kind === 'ConfigMap' && object.data?.[RECONCILER_SETTINGS_FILE])!;
  const settings = parseReconcilerSettings(settingsMap.data[RECONCILER_SETTINGS_FILE]);
  const clusterRole = manifests.find((object) => object.kind === 'ClusterRole' && object.metadata.name.endsWith('-reconciler'))!;
  const role = manifests.find((object) => object.kind === 'Role' && object.metadata.name.endsWith('-reconciler'))!;
  kube.rbac = { cluster: clusterRole.rules, namespace: NAMESPACE, namespaced: role.rules };
  for (const name of [NAMESPACE, 'kube-system']) kube.namespace(name);
  kube.namespace('apps', { injection: 'enabled' });
  kube.namespace('plain');
  // The webhook's Service, with one ready endpoint while the injector is up.
  kube.put('discovery.k8s.io', 'endpointslices', {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: { name: 'sidecar-injector-abcde', namespace: NAMESPACE, labels: { 'kubernetes.io/service-name': 'sidecar-injector' } },
    endpoints: [{ addresses: ['10.0.0.5'], conditions: { ready: true } }],
  });
  const replica = (identity: string) => {
    const lease = new LeaderLease(kube, clock, { namespace: NAMESPACE, name: settings.leaseName, identity, durationSeconds: settings.leaseDurationSeconds });
    const reconciler = new Reconciler({ api: kube, settings, namespace: NAMESPACE, identity, clock, lease, log: (level, message, fields) => logs.push({ level, message, fields }), pollMs: 1000, podTimeoutMs: 60_000 });
    return { reconciler, lease };
  };
  return {
    kube,
    clock,
    settings,
    get manifests() {
      return manifests;
    },
    logs,
    replica,
    async leader(identity) {
      const taken = replica(identity);
      await taken.lease.tryAcquireOrRenew();
      return taken;
    },
    apply(next) {
      manifests = synth({ ...base, ...next });
      source = injectorFromDocuments('test', manifests.map((object, index) => ({ object, source: 'test', index: index + 1, line: 1 })));
      load();
    },
  } as Harness;
}

/** The webhook's endpoints: ready (the injector can answer) or not. */
export function setWebhookReady(kube: FakeKube, ready: boolean): void {
  const slice = kube.get('discovery.k8s.io', 'endpointslices', NAMESPACE, 'sidecar-injector-abcde');
  slice.endpoints = [{ addresses: ['10.0.0.5'], conditions: { ready } }];
  kube.injectorUp = ready;
}

/** The Events written, as `kubectl get events` lists them: reason, object and message. */
export function eventsIn(kube: FakeKube, namespace: string): { reason: string; type: string; object: string; message: string }[] {
  return kube.list('', 'events', namespace).map((event) => ({ reason: event.reason, type: event.type, object: `${event.involvedObject.kind}/${event.involvedObject.name}`, message: event.message }));
}

/** Runs `create` while the injector is down (failurePolicy Ignore admits pods bare), then brings it back. */
export function whileInjectorDown(kube: FakeKube, create: () => void): void {
  setWebhookReady(kube, false);
  create();
  setWebhookReady(kube, true);
}

/** The next pass, `ms` later (the Lease renewed as the process renews it). */
export async function passAfter(clock: TestClock, lease: Pick<LeaderLease, 'tryAcquireOrRenew'>, reconciler: Pick<Reconciler, 'pass'>, ms = 30_000): Promise<PassOutcome> {
  clock.advance(ms);
  await lease.tryAcquireOrRenew();
  return reconciler.pass();
}

/** A plain app pod spec. */
export const APP_SPEC = { containers: [{ name: 'app', image: 'nginx:1.27' }] };
