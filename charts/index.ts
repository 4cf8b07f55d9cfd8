// The construct library's entry point. It loads cdk8s, constructs and node-forge, never express.
export * from './sidecar-injector';
export * from './sidecar-injector-chart';
export type { NamespaceReader } from './namespace-reader';
export { InjectorReconciler, reconcilerClusterRules, reconcilerNamespaceRules } from './reconciler';
export type { ReconcilerTarget } from './reconciler';
export { ReconcilerFence } from './reconciler-fence';
export type { FencedSidecars, FencedWriter, ReconcilerFenceProps } from './reconciler-fence';
export type { ContainerMergeProps, InjectedContainer, InjectedEnvVar, InjectedVolume, InjectedVolumeMount, InjectionProps, RevisionProps } from './injection-props';
export type { RoutedSelectors, RoutingRequirement, RoutingSelector } from './revision-props';
export * from './certificates/webhook-certificate';
export * from './certificates/webhook-certificates';
export * from './certificates/certificate-store';
// certManagerObjects() is how WebhookCertificates.certManager() makes its objects; only the issuer reference is public.
export type { CertManagerIssuerRef } from './certificates/cert-manager-objects';
export * from './webhook-server';
export * from './admission-policy';
export * from './monitoring';
export { PACKAGE_VERSION } from './version';
// The injection config users write and the checks they can run on it. Not the webhook's runtime
// settings (environment variable names, memory sizing, TLS file names) nor the validator's helpers:
// those are internal to the server and the constructs, and are imported from '../webhook/config'.
export {
  annotationKeys,
  CONFIG_FILE_NAME,
  DEFAULT_ANNOTATION_PREFIX,
  INJECTION_MODES,
  NATIVE_SIDECAR_MODES,
  NATIVE_SIDECAR_POSITIONS,
  QOS_POLICIES,
  TARGET_KINDS,
  UNSERVED_REVISION_ACTIONS,
} from '../webhook/config/injector-config';
export type {
  AlwaysTrigger,
  AnnotationTrigger,
  ContainerMerge,
  ContainerSpec,
  EnvVarSpec,
  Injection,
  InjectionMode,
  InjectionRevision,
  InjectionTrigger,
  InjectorConfig,
  JsonObject,
  JsonValue,
  LabelSelectorRequirement,
  LabelSelectorTrigger,
  NativeSidecarMode,
  NativeSidecarPosition,
  QosPolicy,
  RequestedTrigger,
  ResolvedInjection,
  ResolvedInjectorConfig,
  ResolvedRevision,
  RevisionTag,
  TargetKind,
  UnservedRevisionAction,
  VolumeMountSpec,
  VolumeSpec,
} from '../webhook/config/injector-config';
export {
  InjectorConfigError,
  injectorConfigIssues,
  injectorConfigWarnings,
  loadInjectorConfig,
  resolveInjectorConfig,
} from '../webhook/config/validate-injector-config';
export type { ConfigIssue } from '../webhook/config/validate-injector-config';
export { MISSING_ACTIONS, OUTDATED_ACTIONS, parseReconcilerSettings, reconcilerSettingsIssues, repairedForAnnotation } from '../webhook/config/reconciler-settings';
export type { MissingAction, OutdatedAction, ReconcilerInjector, ReconcilerSettings } from '../webhook/config/reconciler-settings';
export { chosenRevision, defaultRevision, revisionConfig, revisionLabel } from '../webhook/config/revisions';
export type { RevisionChooser } from '../webhook/config/revisions';
export { POD_SECURITY_LEVELS, podSecurityViolations } from '../webhook/config/pod-security';
export type { PodSecurityLevel, PodSecurityViolation } from '../webhook/config/pod-security';
export { RESOURCE_OVERRIDE_FIELDS, checkOverrideValue, overrideFieldName } from '../webhook/config/container-overrides';
export type { ContainerOverride, EnvOverride, OverrideAccepted, OverrideRefused, OverrideRejection, OverrideValueCheck, ResourceOverride, ResourceOverrideField } from '../webhook/config/container-overrides';
export { PLACEHOLDERS } from '../webhook/config/placeholders';
export type { PlaceholderName } from '../webhook/config/placeholders';
export { LOG_LEVELS } from '../webhook/config/runtime-settings';
export type { LogLevel } from '../webhook/config/runtime-settings';
// The webhook's own engine and the apiserver's choice of webhooks, for previews (the CLI) and tests.
export { evaluate, mutate } from '../webhook/engine/mutate';
export type { DecisionReason, EvaluationContext, InjectionDecision, MutationResult, PodWarning, PodWarningReason, UnservedRevisionChooser } from '../webhook/engine/mutate';
export type { IgnoredOverride, OverrideOutcome, OverrideSource } from '../webhook/engine/container-overrides';
export type { QosClass } from '../webhook/engine/qos';
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
