// The shared injection config: types, validator and template syntax. Imports nothing outside this folder.
export * from './injector-config';
export * from './validate-injector-config';
export * from './kubernetes-names';
export * from './placeholders';
export * from './pod-security';
export * from './kubernetes-quantity';
export * from './runtime-settings';
export * from './injection-hash';
export * from './container-overrides';
export * from './revisions';
export * from './reconciler-settings';
export * from './audit-message';
