// The MutatingAdmissionPolicy backend: the same injections, applied by the kube-apiserver itself.
export {
  ADMISSION_POLICY_API_VERSIONS,
  ADMISSION_POLICY_KUBERNETES_VERSIONS,
  INJECTOR_BACKENDS,
} from './admission-policy-types';
export type { AdmissionPolicyApiVersion, InjectorBackend } from './admission-policy-types';
export { AdmissionPolicyLimitationError, InjectionAdmissionPolicies } from './injection-admission-policies';
export type { InjectionAdmissionPoliciesProps, PodStatusPolicyObjects, ShapePolicyObjects } from './injection-admission-policies';
export { configPolicyLimitations, policyLimitations } from './injection-policy';
export type { PolicyLimitation } from './injection-policy';
export type { TemplateShape } from './template-shapes';
