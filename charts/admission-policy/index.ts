// The MutatingAdmissionPolicy backend: the same injections, applied by the kube-apiserver itself.
export {
  ADMISSION_POLICY_API_VERSIONS,
  ADMISSION_POLICY_KUBERNETES_VERSIONS,
  INJECTOR_BACKENDS,
} from './admission-policy-types';
export type { AdmissionPolicyApiVersion, InjectorBackend } from './admission-policy-types';
export { AdmissionPolicyLimitationError, InjectionAdmissionPolicies } from './injection-admission-policies';
export type { AuditShapeObjects, InjectionAdmissionPoliciesProps, PodStatusPolicyObjects, PolicyBindingSelectors, ShapePolicyObjects } from './injection-admission-policies';
export { UnservedRevisionPolicy } from './unserved-revision-policy';
export type { UnservedRevisionPolicyProps } from './unserved-revision-policy';
export { configPolicyLimitations, policyLimitations } from './injection-policy';
export type { PolicyLimitation } from './injection-policy';
export type { TemplateShape } from './template-shapes';
