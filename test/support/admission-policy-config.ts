// Test helper: the policies of a whole config, as the construct names them, without a cdk8s app.
import type { Injection, ResolvedInjectorConfig } from '../../webhook/config';
import { DEFAULT_INJECTIONS } from '../../app/default-injections';
import { mutationGuard, shapePolicies } from '../../charts/admission-policy/injection-policy';
import type { SimulatedPolicy } from './admission-policy-simulator';
import { podOf } from './recorded-reviews';

export const TEST_ANNOTATION_PREFIX = 'sidecar-injector.io';
const PREFIX = TEST_ANNOTATION_PREFIX;

export { configPolicyLimitations } from '../../charts/admission-policy/injection-policy';

export function injectionPoliciesOf(config: ResolvedInjectorConfig, failurePolicy: 'Ignore' | 'Fail' = 'Fail'): SimulatedPolicy[] {
  const names = config.injections.map((injection) => injection.name);
  return shapePolicies(config, names, { failurePolicy }).map((policy) => ({ metadata: { name: `test.${policy.shape}` }, spec: policy.spec }));
}

/**
 * The injections a synthesized policy applies, in the order of its mutations: each mutation's
 * `not-already-injected` guard names its injection in the status-annotation check.
 */
export function injectionsOfPolicy(policy: { spec: { mutations: readonly any[] } }): string[] {
  return policy.spec.mutations.map((mutation, index) => {
    const condition = mutationGuard(mutation.jsonPatch.expression).find((c) => c.name === 'not-already-injected');
    const name = condition && /\.exists\(s, s\.trim\(\) == ("(?:[^"\\]|\\.)*")\)\)$/.exec(condition.expression)?.[1];
    if (!name) throw new Error(`mutations[${index}] has no not-already-injected guard naming its injection`);
    return JSON.parse(name) as string;
  });
}

/** The seed injections without qos "preserve-guaranteed" (which stays on the webhook), and one of each other feature. */
export const POLICY_TEST_INJECTIONS: Injection[] = [
  ...DEFAULT_INJECTIONS.map(({ qos: _qos, ...injection }) => injection as Injection),
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
  withTemplate('wait-for-it on the object only', (_pod, whole) => {
    whole.metadata.annotations = { ...whole.metadata.annotations, 'com.foreach/wait-for-it': 'db:5432' };
  });
  withTemplate('nginx sidecar requested, a user volume of the same name', (pod) => {
    pod.metadata.annotations = { ...pod.metadata.annotations, 'sidecar-injector-webhook.morven.me/inject': 'true' };
    pod.spec.volumes = [...(pod.spec.volumes ?? []), { name: 'nginx-conf', emptyDir: {} }];
  });
  return out;
}

