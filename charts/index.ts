// The construct library's entry point. It loads cdk8s, constructs and node-forge, never express.
export * from './sidecar-injector';
export * from './sidecar-injector-chart';
export type { ContainerMergeProps, InjectedContainer, InjectedEnvVar, InjectedVolume, InjectedVolumeMount, InjectionProps } from './injection-props';
export * from './certificates/webhook-certificate';
export * from './certificates/webhook-certificates';
export * from './certificates/certificate-store';
export * from './certificates/cert-manager-objects';
export * from './webhook-server';
export * from './admission-policy';
export { PACKAGE_VERSION } from './version';
export * from '../webhook/config';
// The webhook's own engine and the apiserver's choice of webhooks, for previews (the CLI) and tests.
export { evaluate, mutate } from '../webhook/engine/mutate';
export type { DecisionReason, InjectionDecision, MutationResult, PodWarning, PodWarningReason } from '../webhook/engine/mutate';
export type { PatchOperation } from '../webhook/engine/pod-patch-builder';
export type { AdmissionRequest, AdmissionResponse, GroupVersionKind, KubernetesObject } from '../webhook/engine/admission-review';
export { matchesLabelSelector } from '../webhook/engine/label-selector';
export type { LabelSelector } from '../webhook/engine/label-selector';
export {
  matchWebhook,
  matchWebhookConfiguration,
  namespaceLabelsFor,
  selectorMismatch,
  NAMESPACE_NAME_LABEL,
} from '../webhook/engine/webhook-match';
export type {
  AdmissionAttributes,
  MatchCheck,
  MutatingWebhook,
  MutatingWebhookConfiguration,
  WebhookLabelSelector,
  WebhookMatch,
  WebhookRule,
} from '../webhook/engine/webhook-match';
