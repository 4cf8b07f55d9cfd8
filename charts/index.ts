// The construct library as jsii carries it to TypeScript, Python, Java, Go and C#: constructs, their props
// (structs), the choices (enums, and classes with static factories where a choice carries data) and the
// checks on what it throws. It loads cdk8s, constructs and node-forge, never express. What only TypeScript
// callers need (the engine, the validator, the config types) is `cdk8s-sidecar-injector/engine` (./engine.ts).
export { SidecarInjector } from './sidecar-injector';
export type { SidecarInjectorProps, ReconcilerProps, LabelSelectorProps, ResourceRequirementsProps, RevisionTagProps } from './sidecar-injector-props';
export { SidecarInjectorChart } from './sidecar-injector-chart';
export type { SidecarInjectorChartProps } from './sidecar-injector-chart';
export type { InjectionProps, ContainerMergeProps, RevisionProps } from './injection-props';
export type { NamespaceReader } from './namespace-reader';
export * from './api/choices';
export { Trigger } from './api/trigger';
export type { AnnotationTriggerOptions, LabelSelectorRequirementProps, LabelSelectorTriggerOptions } from './api/trigger';
export { WorkloadOverride } from './api/override';
export type { EnvOverrideOptions, ResourceOverrideOptions } from './api/override';
export { InjectorErrors } from './api/injector-errors';
export type { WebhookCertificate } from './certificates/webhook-certificate';
export { WebhookCertificates } from './certificates/webhook-certificates';
export type { CertManagerOptions, ExistingSecretOptions, GeneratedCertificatesOptions, SecretOutputOptions } from './certificates/webhook-certificates';
export type { CertManagerIssuerRef } from './certificates/cert-manager-objects';
export { WebhookServer } from './webhook-server';
export type { BundleServerOptions } from './webhook-server';
export type { MonitoringProps, PrometheusOperatorProps, SloProps } from './monitoring/monitoring-props';
