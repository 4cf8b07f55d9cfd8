// The few admissionregistration.k8s.io types this backend emits, written by hand from the Kubernetes API
// reference. MutatingAdmissionPolicy has the same fields in v1alpha1 (Kubernetes 1.32, 1.33), v1beta1
// (1.34, 1.35) and v1 (1.36); v1beta1 and v1 add enum constraints to patchType and reinvocationPolicy
// in their OpenAPI schemas (test/fixtures/openapi-v3-mutating-admission-policy/README.md).

/** The API version of `admissionregistration.k8s.io` to emit the policies in. */
export type AdmissionPolicyApiVersion = 'v1' | 'v1beta1' | 'v1alpha1';

/** Every API version the policies can be emitted in, newest first. */
export const ADMISSION_POLICY_API_VERSIONS: readonly AdmissionPolicyApiVersion[] = ['v1', 'v1beta1', 'v1alpha1'];

/** Kubernetes releases that serve each API version (the beta and alpha ones only behind the feature gate). */
export const ADMISSION_POLICY_KUBERNETES_VERSIONS: Readonly<Record<AdmissionPolicyApiVersion, string>> = {
  v1alpha1: '1.32 and 1.33 (feature gate MutatingAdmissionPolicy, runtime config admissionregistration.k8s.io/v1alpha1)',
  v1beta1: '1.34 and 1.35 (feature gate MutatingAdmissionPolicy, runtime config admissionregistration.k8s.io/v1beta1)',
  v1: '1.36 and later',
};

import type { LabelSelector } from '../../webhook/engine/label-selector';

/** A Kubernetes label selector, as the engine evaluates it. */
export type { LabelSelector };

export interface NamedRuleWithOperations {
  readonly apiGroups: readonly string[];
  readonly apiVersions: readonly string[];
  readonly resources: readonly string[];
  readonly operations: readonly ('CREATE' | 'UPDATE' | 'CONNECT' | 'DELETE' | '*')[];
  readonly scope?: 'Cluster' | 'Namespaced' | '*';
}

export interface MatchResources {
  readonly resourceRules?: readonly NamedRuleWithOperations[];
  readonly namespaceSelector?: LabelSelector;
  readonly objectSelector?: LabelSelector;
  readonly matchPolicy?: 'Exact' | 'Equivalent';
}

export interface MatchCondition {
  readonly name: string;
  readonly expression: string;
}

export interface Variable {
  readonly name: string;
  readonly expression: string;
}

export interface Mutation {
  readonly patchType: 'JSONPatch' | 'ApplyConfiguration';
  readonly jsonPatch?: { readonly expression: string };
  readonly applyConfiguration?: { readonly expression: string };
}

export interface MutatingAdmissionPolicySpec {
  readonly matchConstraints: MatchResources;
  readonly matchConditions?: readonly MatchCondition[];
  readonly variables?: readonly Variable[];
  readonly mutations: readonly Mutation[];
  readonly failurePolicy: 'Ignore' | 'Fail';
  readonly reinvocationPolicy: 'IfNeeded' | 'Never';
}

/** A ValidatingAdmissionPolicy's spec, as far as this package writes one (admissionregistration.k8s.io/v1). */
export interface ValidatingAdmissionPolicySpec {
  readonly matchConstraints: MatchResources;
  readonly matchConditions?: readonly MatchCondition[];
  /** Named values the validations read as `variables.<name>`, each evaluated when first read. */
  readonly variables?: readonly Variable[];
  readonly validations: readonly { readonly expression: string; readonly message?: string; readonly messageExpression?: string; readonly reason?: string }[];
  readonly failurePolicy: 'Ignore' | 'Fail';
}

export interface MutatingAdmissionPolicyBindingSpec {
  readonly policyName: string;
  readonly matchResources?: MatchResources;
}

/**
 * Which backend applies the injections. `webhook`: the mutating webhook (Deployment, Service, TLS
 * Secret, ConfigMap, MutatingWebhookConfiguration). `admissionPolicy`: MutatingAdmissionPolicies in
 * the kube-apiserver, nothing else. `both-where-possible`: policies for the injections CEL can express,
 * the webhook for the others; every injection a valid config holds is expressible, so no webhook.
 */
export type InjectorBackend = 'webhook' | 'admissionPolicy' | 'both-where-possible';

/** Every backend, in the order of the docs. */
export const INJECTOR_BACKENDS: readonly InjectorBackend[] = ['webhook', 'admissionPolicy', 'both-where-possible'];
