// The construct library's entry point. It loads cdk8s, constructs and node-forge, never express.
export * from './sidecar-injector';
export * from './sidecar-injector-chart';
export * from './certificates/webhook-certificate';
export * from './certificates/webhook-certificates';
export * from './certificates/certificate-store';
export * from './certificates/cert-manager-objects';
export * from './webhook-server';
export { PACKAGE_VERSION } from './version';
export * from '../webhook/config';
