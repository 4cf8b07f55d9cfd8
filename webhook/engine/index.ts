// The pure mutation engine: no HTTP, files or clock.
export * from './admission-review';
export * from './mutate';
export type { PatchOperation } from './pod-patch-builder';
export { qosClassOf, type QosClass } from './qos';
export * from './unserved-revision';
