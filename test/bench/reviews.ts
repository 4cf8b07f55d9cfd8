// The request bodies the benchmarks send: recorded AdmissionReviews, compact as the apiserver sends
// them, and large pods built from a recorded one by adding environment variables to its container.
import { Review, loadReview } from '../support/recorded-reviews';

/** The recorded pod review the HTTP benchmarks send (the default config patches it: envoy + nginx). */
export const HTTP_REVIEW = 'pod-create-sleep';
/** The recorded review the large pods are built from. */
export const LARGE_BASE_REVIEW = 'pod-create-sleep';

/** A deterministic value of `length` characters (no escaping needed in JSON). */
function filler(seed: number, length: number): string {
  const alphabet = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=';
  let text = '';
  let state = (seed * 2654435761) >>> 0;
  while (text.length < length) {
    state = (state * 1103515245 + 12345) >>> 0;
    text += alphabet[state % alphabet.length];
  }
  return text;
}

/** Appends `count` env variables (about `valueLength` characters each) to the first container. */
export function withEnvVariables(review: Review, count: number, valueLength = 360): Review {
  const copy: Review = structuredClone(review);
  const container = copy.request.object.spec.containers[0];
  const env: unknown[] = container.env ?? (container.env = []);
  for (let i = 0; i < count; i++) env.push({ name: `BENCH_VARIABLE_${String(i).padStart(5, '0')}`, value: filler(i, valueLength) });
  return copy;
}

/** The compact JSON body of a review, as the apiserver sends it. */
export function body(review: Review): Buffer {
  return Buffer.from(JSON.stringify(review), 'utf8');
}

/** A review of `LARGE_BASE_REVIEW` grown with env variables until its compact body is ~`bytes` long. */
export function reviewOfSize(bytes: number): { review: Review; body: Buffer; variables: number } {
  const base = loadReview(LARGE_BASE_REVIEW);
  const baseSize = body(base).length;
  const perVariable = body(withEnvVariables(base, 100)).length - baseSize;
  let variables = Math.max(0, Math.round(((bytes - baseSize) / perVariable) * 100));
  let review = withEnvVariables(base, variables);
  let encoded = body(review);
  // One correction step lands within a variable's size of the target.
  while (encoded.length < bytes) {
    const missing = Math.ceil((bytes - encoded.length) / (perVariable / 100));
    variables += Math.max(1, missing);
    review = withEnvVariables(base, variables);
    encoded = body(review);
  }
  return { review, body: encoded, variables };
}

/** The 1,500-variable pod of the issue (about 600 kB). */
export function podWithVariables(count = 1500): { review: Review; body: Buffer } {
  const review = withEnvVariables(loadReview(LARGE_BASE_REVIEW), count);
  return { review, body: body(review) };
}
