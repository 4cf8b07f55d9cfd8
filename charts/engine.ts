// `cdk8s-sidecar-injector/engine`: what only TypeScript callers need, outside the jsii assembly. The
// constructs with the props in their JSON form (the config's own words, `trigger: { type: 'always' }`),
// the engine's mutate and evaluate, the config validator, the webhook matchers and the config types, for
// the CLI, the tests and previews. The construct library's jsii entry point is ./index.ts. Like it, this
// loads cdk8s, constructs and node-forge, never express.
// What ./index.ts exports, with the props and choices in the JSON form too: each props type here is
// ./json-props.ts' JsonForm of the jsii one, and each enum both the enum and its words.
export { Trigger, WorkloadOverride, InjectorErrors, WebhookCertificates, WebhookServer } from './index';
export type {
  AnnotationTriggerOptions,
  BundleServerOptions,
  CertManagerOptions,
  EnvOverrideOptions,
  ExistingSecretOptions,
  GeneratedCertificatesOptions,
  LabelSelectorTriggerOptions,
  NamespaceReader,
  PrometheusOperatorProps,
  ResourceOverrideOptions,
  ResourceRequirementsProps,
  SecretOutputOptions,
  SloProps,
  WebhookCertificate,
} from './index';
export { SidecarInjector, SidecarInjectorChart } from './json-props';
export type { RevisionPolicies } from './admission-policy/revision-admission-policies';
export type { JsonForm } from './json-form';
import type { JsonForm } from './json-form';
import type * as api from './index';
import * as choices from './api/choices';
/** SidecarInjectorProps in the JSON form: the jsii props, or the config's own words where they choose. */
export type SidecarInjectorProps = JsonForm<api.SidecarInjectorProps>;
/** SidecarInjectorChartProps in the JSON form: the jsii props, or the config's own words where they choose. */
export type SidecarInjectorChartProps = JsonForm<api.SidecarInjectorChartProps>;
/** InjectionProps in the JSON form: the jsii props, or the config's own words where they choose. */
export type InjectionProps = JsonForm<api.InjectionProps>;
/** ContainerMergeProps in the JSON form: the jsii props, or the config's own words where they choose. */
export type ContainerMergeProps = JsonForm<api.ContainerMergeProps>;
/** RevisionProps in the JSON form: the jsii props, or the config's own words where they choose. */
export type RevisionProps = JsonForm<api.RevisionProps>;
/** RevisionTagProps in the JSON form: the jsii props, or the config's own words where they choose. */
export type RevisionTagProps = JsonForm<api.RevisionTagProps>;
/** ReconcilerProps in the JSON form: the jsii props, or the config's own words where they choose. */
export type ReconcilerProps = JsonForm<api.ReconcilerProps>;
/** MonitoringProps in the JSON form: the jsii props, or the config's own words where they choose. */
export type MonitoringProps = JsonForm<api.MonitoringProps>;
/** LabelSelectorProps in the JSON form: the jsii props, or the config's own words where they choose. */
export type LabelSelectorProps = JsonForm<api.LabelSelectorProps>;
/** LabelSelectorRequirementProps in the JSON form: the jsii props, or the config's own words where they choose. */
export type LabelSelectorRequirementProps = JsonForm<api.LabelSelectorRequirementProps>;
/* eslint-disable @typescript-eslint/no-redeclare -- each choice is the enum (a value) and, as a type, the enum or its words */
/** The FailurePolicy enum (./api/choices.ts). */
export const FailurePolicy = choices.FailurePolicy;
/** A FailurePolicy member, or its word as the config writes it. */
export type FailurePolicy = JsonForm<choices.FailurePolicy>;
/** The ImagePullPolicy enum (./api/choices.ts). */
export const ImagePullPolicy = choices.ImagePullPolicy;
/** A ImagePullPolicy member, or its word as the config writes it. */
export type ImagePullPolicy = JsonForm<choices.ImagePullPolicy>;
/** The LogLevel enum (./api/choices.ts). */
export const LogLevel = choices.LogLevel;
/** A LogLevel member, or its word as the config writes it. */
export type LogLevel = JsonForm<choices.LogLevel>;
/** The InjectorBackend enum (./api/choices.ts). */
export const InjectorBackend = choices.InjectorBackend;
/** A InjectorBackend member, or its word as the config writes it. */
export type InjectorBackend = JsonForm<choices.InjectorBackend>;
/** The AdmissionPolicyApiVersion enum (./api/choices.ts). */
export const AdmissionPolicyApiVersion = choices.AdmissionPolicyApiVersion;
/** A AdmissionPolicyApiVersion member, or its word as the config writes it. */
export type AdmissionPolicyApiVersion = JsonForm<choices.AdmissionPolicyApiVersion>;
/** The PodSecurityLevel enum (./api/choices.ts). */
export const PodSecurityLevel = choices.PodSecurityLevel;
/** A PodSecurityLevel member, or its word as the config writes it. */
export type PodSecurityLevel = JsonForm<choices.PodSecurityLevel>;
/** The TargetKind enum (./api/choices.ts). */
export const TargetKind = choices.TargetKind;
/** A TargetKind member, or its word as the config writes it. */
export type TargetKind = JsonForm<choices.TargetKind>;
/** The QosPolicy enum (./api/choices.ts). */
export const QosPolicy = choices.QosPolicy;
/** A QosPolicy member, or its word as the config writes it. */
export type QosPolicy = JsonForm<choices.QosPolicy>;
/** The PodResourcesPolicy enum (./api/choices.ts). */
export const PodResourcesPolicy = choices.PodResourcesPolicy;
/** A PodResourcesPolicy member, or its word as the config writes it. */
export type PodResourcesPolicy = JsonForm<choices.PodResourcesPolicy>;
/** The InjectionMode enum (./api/choices.ts). */
export const InjectionMode = choices.InjectionMode;
/** A InjectionMode member, or its word as the config writes it. */
export type InjectionMode = JsonForm<choices.InjectionMode>;
/** The NativeSidecarMode enum (./api/choices.ts). */
export const NativeSidecarMode = choices.NativeSidecarMode;
/** A NativeSidecarMode member, or its word as the config writes it. */
export type NativeSidecarMode = JsonForm<choices.NativeSidecarMode>;
/** The NativeSidecarPosition enum (./api/choices.ts). */
export const NativeSidecarPosition = choices.NativeSidecarPosition;
/** A NativeSidecarPosition member, or its word as the config writes it. */
export type NativeSidecarPosition = JsonForm<choices.NativeSidecarPosition>;
/** The MergeWhenMissing enum (./api/choices.ts). */
export const MergeWhenMissing = choices.MergeWhenMissing;
/** A MergeWhenMissing member, or its word as the config writes it. */
export type MergeWhenMissing = JsonForm<choices.MergeWhenMissing>;
/** The LabelSelectorOperator enum (./api/choices.ts). */
export const LabelSelectorOperator = choices.LabelSelectorOperator;
/** A LabelSelectorOperator member, or its word as the config writes it. */
export type LabelSelectorOperator = JsonForm<choices.LabelSelectorOperator>;
/** The MissingAction enum (./api/choices.ts). */
export const MissingAction = choices.MissingAction;
/** A MissingAction member, or its word as the config writes it. */
export type MissingAction = JsonForm<choices.MissingAction>;
/** The OutdatedAction enum (./api/choices.ts). */
export const OutdatedAction = choices.OutdatedAction;
/** A OutdatedAction member, or its word as the config writes it. */
export type OutdatedAction = JsonForm<choices.OutdatedAction>;
/** The ResourceOverrideField enum (./api/choices.ts). */
export const ResourceOverrideField = choices.ResourceOverrideField;
/** A ResourceOverrideField member, or its word as the config writes it. */
export type ResourceOverrideField = JsonForm<choices.ResourceOverrideField>;
/* eslint-enable @typescript-eslint/no-redeclare */
export { DEFAULT_WEBHOOK_IMAGE, SidecarInjectorPropsError, ALWAYS_EXCLUDED_NAMESPACES, POD_SECURITY_WARNING } from './sidecar-injector';
export { InjectorReconciler, reconcilerClusterRules, reconcilerNamespaceRules } from './reconciler';
export type { ReconcilerTarget } from './reconciler';
export { ReconcilerFence } from './reconciler-fence';
export type { FencedSidecars, FencedWriter, ReconcilerFenceProps } from './reconciler-fence';
export type { InjectionInput } from './injection-props';
export { resolveInjectionProps } from './injection-props';
export type { RoutedSelectors, RoutingRequirement, RoutingSelector } from './revision-props';
export * from './certificates/webhook-certificate';
export type { WebhookCertificateBinding, WebhookCertificateTarget } from './certificates/webhook-certificates';
export * from './certificates/certificate-store';
// certManagerObjects() is how WebhookCertificates.certManager() makes its objects; only the issuer reference is public.
export type { CertManagerIssuerRef } from './certificates/cert-manager-objects';
export * from './webhook-server';
export { durationText } from './monitoring/monitoring-props';
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
  InjectionRevision,
  InjectionTrigger,
  InjectorConfig,
  JsonObject,
  JsonValue,
  LabelSelectorRequirement,
  LabelSelectorTrigger,
  RequestedTrigger,
  ResolvedInjection,
  ResolvedInjectorConfig,
  ResolvedRevision,
  RevisionTag,
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
export type { ReconcilerInjector, ReconcilerSettings } from '../webhook/config/reconciler-settings';
export { chosenRevision, defaultRevision, revisionConfig, revisionLabel } from '../webhook/config/revisions';
export type { RevisionChooser } from '../webhook/config/revisions';
export { POD_SECURITY_LEVELS, podSecurityViolations } from '../webhook/config/pod-security';
export type { PodSecurityViolation } from '../webhook/config/pod-security';
export { RESOURCE_OVERRIDE_FIELDS, checkOverrideValue, overrideFieldName } from '../webhook/config/container-overrides';
export type { ContainerOverride, EnvOverride, OverrideAccepted, OverrideRefused, OverrideRejection, OverrideValueCheck, ResourceOverride } from '../webhook/config/container-overrides';
export { PLACEHOLDERS } from '../webhook/config/placeholders';
export type { PlaceholderName } from '../webhook/config/placeholders';
export { LOG_LEVELS } from '../webhook/config/runtime-settings';
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
