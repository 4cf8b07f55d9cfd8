// Test helper: the policies of a whole config, as the construct names them, without a cdk8s app.
import type { Injection, ResolvedInjectorConfig } from '../../webhook/config';
import type { AdmissionPolicyApiVersion } from '../../charts/admission-policy';
import { DEFAULT_INJECTIONS } from '../../app/default-injections';
import { shapePolicies } from '../../charts/admission-policy/injection-policy';
import { mutationGuard, mutationInjections } from '../../charts/admission-policy/mutation-text';
import type { SimulatedPolicy } from './admission-policy-simulator';
import { podOf } from './recorded-reviews';

export const TEST_ANNOTATION_PREFIX = 'sidecar-injector.io';
const PREFIX = TEST_ANNOTATION_PREFIX;

export { configPolicyLimitations } from '../../charts/admission-policy/injection-policy';

export function injectionPoliciesOf(config: ResolvedInjectorConfig, failurePolicy: 'Ignore' | 'Fail' = 'Fail', apiVersion: AdmissionPolicyApiVersion = 'v1'): SimulatedPolicy[] {
  const names = config.injections.map((injection) => injection.name);
  return shapePolicies(config, names, { failurePolicy, apiVersion }).map((policy) => ({ metadata: { name: `test.${policy.shape}` }, spec: policy.spec, bindings: policy.bindings }));
}

/**
 * The injections a synthesized policy applies, in the order of its mutations: a shared mutation's
 * first line names them, and a mutation of one injection names it in its `not-already-injected` guard.
 */
export function injectionsOfPolicy(policy: { spec: { mutations: readonly any[] } }): string[] {
  return policy.spec.mutations.flatMap((mutation, index) => {
    const shared = mutationInjections(mutation.jsonPatch.expression);
    if (shared) return shared;
    const condition = mutationGuard(mutation.jsonPatch.expression).find((c) => c.name === 'not-already-injected');
    const name = condition && /\.exists\(s, s\.trim\(\) == ("(?:[^"\\]|\\.)*")\)\)$/.exec(condition.expression)?.[1];
    if (!name) throw new Error(`mutations[${index}] has no not-already-injected guard naming its injection`);
    return JSON.parse(name) as string;
  });
}

/** The seed injections (qos "preserve-guaranteed" included), and one of each other feature. */
export const POLICY_TEST_INJECTIONS: Injection[] = [
  ...DEFAULT_INJECTIONS,
  {
    name: 'debug',
    trigger: { type: 'requested' },
    targetKinds: ['Pod', 'Deployment', 'CronJob'],
    env: [{ name: 'DEBUG_TARGET', value: '{{name}}.{{namespace}}' }, { name: 'POD_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } }],
    volumeMounts: [{ name: 'debug-scratch', mountPath: '/debug' }],
    volumes: [{ name: 'debug-scratch', emptyDir: { sizeLimit: '64Mi' } }],
    labels: { 'debug.example.com/enabled': 'true' },
    annotations: { 'debug.example.com/for': '{{name}}' },
  },
  {
    name: 'tier-limits',
    trigger: { type: 'labelSelector', matchExpressions: [{ key: 'tier', operator: 'In', values: ['web', 'api'] }, { key: 'legacy', operator: 'DoesNotExist' }] },
    targetKinds: ['Pod', 'Deployment', 'StatefulSet', 'DaemonSet', 'Job'],
    merges: [{ containerNames: ['nginx', 'app', 'sleep'], fields: { securityContext: { readOnlyRootFilesystem: true } }, whenMissing: 'create' }],
    imagePullSecrets: [{ name: 'registry-credentials' }],
  },
  {
    name: 'log-shipper',
    trigger: { type: 'annotation', key: 'logs.example.com/ship', valuePattern: '[a-z]+:[0-9]+' },
    targetKinds: ['Pod', 'Job', 'CronJob'],
    nativeSidecars: 'jobs',
    containers: [{ name: 'log-shipper', image: 'fluent/fluent-bit:3.1', args: ['--target', '{{annotation}}'], resources: { requests: { cpu: '10m', memory: '32Mi' } } }],
    // Per-workload overrides (issue 39), read from the pod alone: the suites run the webhook without
    // an apiserver to list namespaces from.
    overrides: [
      { annotation: 'logs.example.com/cpu-request', container: 'log-shipper', resource: 'requests.cpu', max: '500m' },
      { annotation: 'logs.example.com/memory-request', container: 'log-shipper', resource: 'requests.memory', min: '16Mi', max: '256Mi' },
    ],
  },
  {
    // Native sidecars placed before the pod's own init containers, two of them in one injection.
    name: 'mesh-first',
    trigger: { type: 'annotation', key: 'mesh.example.com/first' },
    targetKinds: ['Pod', 'Deployment', 'Job'],
    nativeSidecars: 'always',
    nativeSidecarPosition: 'first',
    qos: 'preserve-guaranteed',
    containers: [
      { name: 'mesh-init-proxy', image: 'example.com/proxy:1.0', resources: { requests: { cpu: '20m', memory: '16Mi' } } },
      { name: 'mesh-certs', image: 'example.com/certs:1.0', resources: { limits: { cpu: '5m', memory: '8Mi' } } },
    ],
    initContainers: [{ name: 'mesh-setup', image: 'example.com/setup:1.0', resources: { requests: { cpu: '1m', memory: '4Mi' }, limits: { memory: '8Mi' } } }],
  },
  {
    // A second first-placed injection: its sidecars go after mesh-first's, as the webhook places them.
    name: 'token-first',
    trigger: { type: 'annotation', key: 'mesh.example.com/first' },
    targetKinds: ['Pod'],
    nativeSidecars: 'always',
    nativeSidecarPosition: 'first',
    containers: [{ name: 'token-refresher', image: 'example.com/token:1.0' }],
  },
  {
    // Triggered by a label debug adds: it reads what an earlier injection changed, so it gets a
    // mutation of its own, after theirs (placed first after mesh-first's and token-first's sidecars,
    // with the pod's class as the earlier mutation left it).
    name: 'debug-chained',
    trigger: { type: 'labelSelector', matchLabels: { 'debug.example.com/enabled': 'true' } },
    targetKinds: ['Pod'],
    nativeSidecars: 'always',
    nativeSidecarPosition: 'first',
    qos: 'preserve-guaranteed',
    containers: [{ name: 'debug-shell', image: 'busybox:1.36', resources: { limits: { cpu: '10m', memory: '16Mi' } } }],
  },
  {
    // Merge keys that are no CEL identifiers: map keys, indexed.
    name: 'gpu-limits',
    trigger: { type: 'labelSelector', matchLabels: { 'gpu.example.com/wants': 'one' } },
    targetKinds: ['Pod', 'Deployment'],
    merges: [
      { containerNames: ['sleep', 'app', 'nginx'], fields: { resources: { limits: { 'nvidia.com/gpu': '1' } } }, whenMissing: 'create' },
      // Only where requests exist (skip): an extended resource's request must equal its limit.
      { containerNames: ['sleep', 'app', 'nginx'], fields: { resources: { requests: { 'nvidia.com/gpu': '1' } } } },
    ],
  },
];

/** Variants of a recorded object that exercise each trigger, the opt-out and the status annotation. */
export function triggerVariants(object: any): [string, any][] {
  const out: [string, any][] = [['as recorded', object]];
  const withTemplate = (label: string, change: (pod: any, object: any) => void) => {
    const copy = structuredClone(object);
    const pod = podOf(copy);
    pod.metadata ??= {};
    change(pod, copy);
    out.push([label, copy]);
  };
  withTemplate('debug requested', (pod) => (pod.metadata.annotations = { ...pod.metadata.annotations, [`${PREFIX}/inject`]: 'other, debug' }));
  withTemplate('opted out', (pod) => (pod.metadata.annotations = { ...pod.metadata.annotations, [`${PREFIX}/inject`]: ' False ' }));
  withTemplate('envoy already injected', (pod) => (pod.metadata.annotations = { ...pod.metadata.annotations, [`${PREFIX}/status`]: 'envoy' }));
  withTemplate('tier web', (pod) => (pod.metadata.labels = { ...pod.metadata.labels, tier: 'web' }));
  withTemplate('tier web but legacy', (pod) => (pod.metadata.labels = { ...pod.metadata.labels, tier: 'web', legacy: 'yes' }));
  withTemplate('probe-defaults app label', (pod, whole) => {
    pod.metadata.labels = { ...pod.metadata.labels, app: 'myApp' };
    // A workload's selector must still select its template.
    if (whole.spec?.selector?.matchLabels?.app !== undefined) whole.spec.selector.matchLabels.app = 'myApp';
    pod.spec.containers[0] = { ...pod.spec.containers[0], name: 'my-container', readinessProbe: { httpGet: { path: '/', port: 80 } } };
  });
  withTemplate('logs to ship', (pod) => (pod.metadata.annotations = { ...pod.metadata.annotations, 'logs.example.com/ship': 'collector:24224' }));
  withTemplate('logs pattern not met', (pod) => (pod.metadata.annotations = { ...pod.metadata.annotations, 'logs.example.com/ship': 'collector' }));
  withTemplate('logs to ship, the shipper tuned', (pod) => {
    pod.metadata.annotations = { ...pod.metadata.annotations, 'logs.example.com/ship': 'collector:24224', 'logs.example.com/cpu-request': '250m', 'logs.example.com/memory-request': '64Mi' };
  });
  withTemplate('logs to ship, the shipper tuned out of bounds', (pod) => {
    pod.metadata.annotations = { ...pod.metadata.annotations, 'logs.example.com/ship': 'collector:24224', 'logs.example.com/cpu-request': '2', 'logs.example.com/memory-request': 'lots' };
  });
  withTemplate('wait-for-it on the object only', (_pod, whole) => {
    whole.metadata.annotations = { ...whole.metadata.annotations, 'com.foreach/wait-for-it': 'db:5432' };
  });
  const guaranteed = (container: any) => ({ ...container, resources: { limits: { cpu: '250m', memory: '64Mi' } } });
  withTemplate('Guaranteed (every container limited, requests defaulted), nginx sidecar requested', (pod) => {
    pod.metadata.annotations = { ...pod.metadata.annotations, 'sidecar-injector-webhook.morven.me/inject': 'true' };
    pod.spec.containers = pod.spec.containers.map(guaranteed);
    if (pod.spec.initContainers) pod.spec.initContainers = pod.spec.initContainers.map(guaranteed);
  });
  withTemplate('Burstable (one limit short), nginx sidecar requested', (pod) => {
    pod.metadata.annotations = { ...pod.metadata.annotations, 'sidecar-injector-webhook.morven.me/inject': 'true' };
    pod.spec.containers = pod.spec.containers.map((container: any, index: number) =>
      index === 0 ? { ...container, resources: { requests: { cpu: '250m', memory: '64Mi' }, limits: { cpu: '500m', memory: '64Mi' } } } : guaranteed(container),
    );
  });
  withTemplate('pod-level resources Guaranteed', (pod) => {
    pod.spec.resources = { requests: { cpu: '1', memory: '1Gi' }, limits: { cpu: '1000m', memory: '1024Mi' } };
  });
  withTemplate('native sidecars first, Guaranteed, with an init container of its own', (pod) => {
    pod.metadata.annotations = { ...pod.metadata.annotations, 'mesh.example.com/first': '' };
    pod.spec.containers = pod.spec.containers.map(guaranteed);
    pod.spec.initContainers = [...(pod.spec.initContainers ?? []).map(guaranteed), guaranteed({ name: 'user-init', image: 'busybox:1.36' })];
  });
  withTemplate('native sidecars first, Guaranteed, debug requested (a chained injection in a second mutation)', (pod) => {
    pod.metadata.annotations = { ...pod.metadata.annotations, 'mesh.example.com/first': '', [`${PREFIX}/inject`]: 'debug' };
    pod.spec.containers = pod.spec.containers.map(guaranteed);
    if (pod.spec.initContainers) pod.spec.initContainers = pod.spec.initContainers.map(guaranteed);
  });
  withTemplate('native sidecars first, no init containers', (pod) => {
    pod.metadata.annotations = { ...pod.metadata.annotations, 'mesh.example.com/first': 'yes' };
  });
  withTemplate('gpu wanted', (pod) => {
    pod.metadata.labels = { ...pod.metadata.labels, 'gpu.example.com/wants': 'one' };
    pod.spec.containers = pod.spec.containers.map((container: any, index: number) => (index === 0 ? { ...container, resources: { requests: { cpu: '100m' } } } : container));
  });
  withTemplate('nginx sidecar requested, a user volume of the same name', (pod) => {
    pod.metadata.annotations = { ...pod.metadata.annotations, 'sidecar-injector-webhook.morven.me/inject': 'true' };
    pod.spec.volumes = [...(pod.spec.volumes ?? []), { name: 'nginx-conf', emptyDir: {} }];
  });
  return out;
}

