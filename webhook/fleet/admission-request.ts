// The AdmissionRequest the apiserver would send for an object, and its answer's patch as the apiserver
// decodes it: how the fleet's pods are judged by the very engine the webhook runs, and how the CLI's
// preview asks it.

import type { Operation } from 'fast-json-patch';
import { TARGET_KIND_RESOURCES } from '../config';
import type { AdmissionRequest, GroupVersionKind, KubernetesObject } from '../engine/admission-review';
import type { MutationResult } from '../engine/mutate';
import { targetKindOf } from '../engine/pod-template';

export function groupVersionKindOf(object: KubernetesObject): GroupVersionKind {
  const apiVersion = String(object.apiVersion);
  const slash = apiVersion.indexOf('/');
  return {
    group: slash < 0 ? '' : apiVersion.slice(0, slash),
    version: slash < 0 ? apiVersion : apiVersion.slice(slash + 1),
    kind: String(object.kind),
  };
}

function metadataOf(object: KubernetesObject): Record<string, unknown> {
  const metadata = object.metadata;
  return metadata && typeof metadata === 'object' && !Array.isArray(metadata) ? (metadata as Record<string, unknown>) : {};
}

/**
 * The AdmissionRequest the apiserver would send when `object` is created in `namespace`. It carries a
 * copy of the object unless `copy` is false: evaluate() writes nothing into its request
 * (test/engine/evaluate-purity.test.ts), so a caller that only evaluates it (status, the reconciler,
 * over every pod of a cluster) need not pay for a deep copy of each pod.
 */
export function createRequestFor(object: KubernetesObject, namespace: string, uid: string, copy = true): AdmissionRequest {
  const gvk = groupVersionKindOf(object);
  const targetKind = targetKindOf(gvk);
  const resource = { group: gvk.group, version: gvk.version, resource: targetKind ? TARGET_KIND_RESOURCES[targetKind].resource : gvk.kind.toLowerCase() + 's' };
  const name = metadataOf(object).name;
  return {
    uid,
    kind: gvk,
    resource,
    requestKind: gvk,
    requestResource: resource,
    ...(typeof name === 'string' ? { name } : {}),
    namespace,
    operation: 'CREATE',
    userInfo: { username: 'cdk8s-sidecar-injector-preview' },
    object: copy ? structuredClone(object) : object,
    oldObject: null,
    dryRun: true,
    options: { apiVersion: 'meta.k8s.io/v1', kind: 'CreateOptions' },
  };
}

/** The JSONPatch of an AdmissionResponse, decoded as the apiserver decodes it. */
export function decodeResponsePatch(result: MutationResult): Operation[] {
  const { response } = result;
  if (!response.patch) return [];
  return JSON.parse(Buffer.from(response.patch, 'base64').toString('utf8')) as Operation[];
}
