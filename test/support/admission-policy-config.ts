// Test helper: the policies of a whole config, as the construct names them, without a cdk8s app.
import type { ResolvedInjectorConfig } from '../../webhook/config';
import { injectionPolicies } from '../../charts/admission-policy/injection-policy';
import type { SimulatedPolicy } from './admission-policy-simulator';

export { configPolicyLimitations } from '../../charts/admission-policy/injection-policy';

export function injectionPoliciesOf(config: ResolvedInjectorConfig, failurePolicy: 'Ignore' | 'Fail' = 'Fail'): SimulatedPolicy[] {
  return config.injections.flatMap((injection) =>
    injectionPolicies(injection, config, { failurePolicy }).map((policy) => ({ metadata: { name: `test.${policy.injection}.${policy.shape}` }, spec: policy.spec })),
  );
}
