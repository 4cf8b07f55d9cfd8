// Objects read from an untrusted AdmissionReview: anything may be null, a list or a scalar instead.

/** A JSON object as read from a request. */
export type Json = Record<string, unknown>;

/** Whether `value` is a JSON object (not null, not a list). */
export function isJsonObject(value: unknown): value is Json {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
