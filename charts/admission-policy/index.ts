// The MutatingAdmissionPolicy backend: the same injections, applied by the kube-apiserver itself.
export * from './admission-policy-types';
export * from './injection-admission-policies';
export { PolicyLimitation, TemplateShape, configPolicyLimitations, policyLimitations } from './injection-policy';
