// `cdk8s-sidecar-injector/engine`: what only TypeScript callers need, outside the jsii assembly (charts/engine.ts).
export * from './lib/charts/engine';
