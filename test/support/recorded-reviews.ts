// The AdmissionReviews recorded from a real kube-apiserver 1.32, and applying a response's patch to
// the object it came from, as the apiserver does.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { applyPatch, Operation } from 'fast-json-patch';
import type { AdmissionResponse } from '../../webhook/engine';

export const REVIEWS_DIR = path.resolve(__dirname, '../fixtures/admission-reviews');

export type Review = { apiVersion: string; kind: string; request: any };

export function reviewNames(): string[] {
  return fs.readdirSync(REVIEWS_DIR).filter((f) => f.endsWith('.json')).map((f) => f.replace(/\.json$/, '')).sort();
}

/** A fresh copy of a recorded review, e.g. loadReview('pod-create-sleep'). */
export function loadReview(name: string): Review {
  return JSON.parse(fs.readFileSync(path.join(REVIEWS_DIR, `${name}.json`), 'utf8'));
}

/**
 * `review` (of a named object) as the same object reaches the webhook from a controller that names it
 * from a generateName (a ReplicaSet's pod): not named yet, so no request.name and metadata.generateName
 * `<name>-` first, where Go writes ObjectMeta's name. Such reviews repeat but for their uid, and the
 * webhook answers the repeats from the first answer (webhook/server/repeated-reviews.ts); a named
 * object's review never repeats, so it is answered the long way every time.
 */
export function asUnnamed(review: Review): Review {
  const copy: Review = structuredClone(review);
  delete copy.request.name;
  const metadata = copy.request.object?.metadata;
  if (metadata?.name !== undefined) {
    const { name, ...rest } = metadata;
    copy.request.object.metadata = { generateName: `${name}-`, ...rest };
  }
  return copy;
}

export function decodePatch(response: AdmissionResponse): Operation[] {
  if (!response.patch) return [];
  if (response.patchType !== 'JSONPatch') throw new Error(`patchType is ${response.patchType}, expected JSONPatch`);
  return JSON.parse(Buffer.from(response.patch, 'base64').toString('utf8'));
}

/** Applies the response's patch to a copy of `object`, validating every operation like the apiserver. */
export function applyResponse<T>(object: T, response: AdmissionResponse): T {
  const operations = decodePatch(response);
  return applyPatch(structuredClone(object), operations, true, false).newDocument;
}

/** The pod template of a Pod or workload object. */
export function podOf(object: any): { metadata: any; spec: any } {
  switch (object.kind) {
    case 'Pod':
      return object;
    case 'CronJob':
      return object.spec.jobTemplate.spec.template;
    default:
      return object.spec.template;
  }
}

export const names = (list: { name: string }[] | undefined) => (list ?? []).map((item) => item.name);
