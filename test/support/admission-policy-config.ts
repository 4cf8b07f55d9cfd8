// Test helper: the policies of a whole config, as the construct names them, without a cdk8s app.
import type { Injection, ResolvedInjectorConfig } from '../../webhook/config';
import { DEFAULT_INJECTIONS } from '../../app/default-injections';
import { injectionPolicies } from '../../charts/admission-policy/injection-policy';
import type { SimulatedPolicy } from './admission-policy-simulator';

export { configPolicyLimitations } from '../../charts/admission-policy/injection-policy';

export function injectionPoliciesOf(config: ResolvedInjectorConfig, failurePolicy: 'Ignore' | 'Fail' = 'Fail'): SimulatedPolicy[] {
  return config.injections.flatMap((injection) =>
    injectionPolicies(injection, config, { failurePolicy }).map((policy) => ({ metadata: { name: `test.${policy.injection}.${policy.shape}` }, spec: policy.spec })),
  );
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
