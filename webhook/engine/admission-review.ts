// The admission.k8s.io wire types the engine reads and writes, and the decoding that turns an
// untrusted body into them with a message a cluster operator can act on.

import { isJsonObject as isObject } from './json-object';

export const ADMISSION_API_VERSIONS = ['admission.k8s.io/v1', 'admission.k8s.io/v1beta1'] as const;
export type AdmissionApiVersion = (typeof ADMISSION_API_VERSIONS)[number];

/** The type of an object in an admission request, as the apiserver names it (`request.kind`). */
export interface GroupVersionKind {
  /** API group; `''` for the core group (Pod), `apps` for Deployment, `batch` for Job. */
  readonly group: string;
  /** API version within the group, such as `v1`. */
  readonly version: string;
  /** Kind, such as `Pod` or `Deployment`. */
  readonly kind: string;
}

/** Any Kubernetes object as parsed JSON (`apiVersion`, `kind`, `metadata`, `spec`, ...), unvalidated. */
export type KubernetesObject = Record<string, unknown>;

/** The `request` of an admission.k8s.io AdmissionReview: what the apiserver asks the webhook about. */
export interface AdmissionRequest {
  /** Identifier of this admission call, echoed in the response's `uid`. */
  readonly uid: string;
  /** Group, version and kind of the object being admitted. */
  readonly kind: GroupVersionKind;
  /** The operation being admitted: `CREATE`, `UPDATE`, `DELETE` or `CONNECT`. */
  readonly operation: 'CREATE' | 'UPDATE' | 'DELETE' | 'CONNECT' | string;
  /** Namespace of the object; absent for cluster-scoped objects. */
  readonly namespace?: string;
  /** Name of the object; absent on CREATE when the apiserver will generate it from `metadata.generateName`. */
  readonly name?: string;
  /** The object as it would be stored (CREATE, UPDATE); null or absent for DELETE. */
  readonly object?: KubernetesObject | null;
  /** The object as stored before the operation (UPDATE, DELETE); null or absent for CREATE. */
  readonly oldObject?: KubernetesObject | null;
  /** The subresource written, such as `status` for a pod's status (the kubelet's writes); absent for the object itself. */
  readonly subResource?: string;
  /** True when the request will not be persisted (`kubectl --dry-run=server`); the webhook has no side effects either way. */
  readonly dryRun?: boolean;
  readonly [field: string]: unknown;
}

/** The `response` of an admission.k8s.io AdmissionReview: the webhook's answer, with the patch it applies. */
export interface AdmissionResponse {
  /** The `uid` of the request this answers. */
  uid: string;
  /** Whether the apiserver may admit the object; this webhook always allows and only patches. */
  allowed: boolean;
  /** `JSONPatch` when `patch` is set (the only patch type admission.k8s.io/v1 defines). */
  patchType?: 'JSONPatch';
  /** base64 of the JSON patch. */
  patch?: string;
  /** Warnings the apiserver returns to the client (kubectl prints them as `Warning: ...`). */
  warnings?: string[];
  /** A failure status when the request is not allowed. */
  status?: {
    /** HTTP status code of the failure, such as 400 or 403. */
    code: number;
    /** Human-readable reason shown to the client. */
    message: string;
  };
}

export interface AdmissionReview {
  apiVersion: AdmissionApiVersion;
  kind: 'AdmissionReview';
  request?: AdmissionRequest;
  response?: AdmissionResponse;
}

/** A body that is not an AdmissionReview this webhook can answer: becomes HTTP 400 with this message. */
export class BadAdmissionReview extends Error {
  constructor(
    message: string,
    /** The request uid when it could be read, so the error can still echo it. */
    readonly uid?: string,
  ) {
    super(message);
    this.name = 'BadAdmissionReview';
  }
}

/** Names an untrusted value in an error message without serializing it (it may be huge or deeply nested). */
function describe(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (typeof value === 'string') return JSON.stringify(value.length > 64 ? value.slice(0, 64) + '...' : value);
  if (value === null || typeof value === 'number' || typeof value === 'boolean') return String(value);
  return Array.isArray(value) ? 'an array' : 'an object';
}

/** Checks the shape of a parsed body and returns it as an AdmissionReview with a request. */
export function decodeAdmissionReview(body: unknown): AdmissionReview & { request: AdmissionRequest } {
  if (!isObject(body)) throw new BadAdmissionReview('body must be a JSON object (an AdmissionReview)');
  if (body.kind !== 'AdmissionReview') {
    throw new BadAdmissionReview(`kind must be "AdmissionReview", got ${describe(body.kind)}`);
  }
  if (!ADMISSION_API_VERSIONS.includes(body.apiVersion as AdmissionApiVersion)) {
    throw new BadAdmissionReview(
      `apiVersion must be one of ${ADMISSION_API_VERSIONS.join(', ')}, got ${describe(body.apiVersion)}`,
    );
  }
  const request = body.request;
  if (!isObject(request)) throw new BadAdmissionReview('request is missing: an AdmissionReview sent to a webhook carries a request');
  const uid = request.uid;
  if (typeof uid !== 'string' || uid.length === 0) throw new BadAdmissionReview('request.uid is missing or not a string');
  const kind = request.kind;
  if (!isObject(kind) || typeof kind.kind !== 'string' || typeof kind.group !== 'string' || typeof kind.version !== 'string') {
    throw new BadAdmissionReview('request.kind must be {group, version, kind}', uid);
  }
  if (typeof request.operation !== 'string') throw new BadAdmissionReview('request.operation is missing or not a string', uid);
  if (request.namespace !== undefined && typeof request.namespace !== 'string') {
    throw new BadAdmissionReview('request.namespace must be a string', uid);
  }
  if (request.object !== undefined && request.object !== null && !isObject(request.object)) {
    throw new BadAdmissionReview('request.object must be an object', uid);
  }
  return body as unknown as AdmissionReview & { request: AdmissionRequest };
}

/** Wraps a response in the AdmissionReview envelope of the apiVersion the request came in. */
export function admissionReviewResponse(apiVersion: AdmissionApiVersion, response: AdmissionResponse): AdmissionReview {
  return { apiVersion, kind: 'AdmissionReview', response };
}
