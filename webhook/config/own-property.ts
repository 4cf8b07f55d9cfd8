// Copying JSON objects key by key without losing a key named "__proto__".
//
// JSON.parse makes "__proto__" an ordinary own property, and so may a user's props; a plain
// `out[key] = value` instead calls Object.prototype's __proto__ setter, which drops the value (or, for
// an object, makes it the copy's prototype). Every key-by-key copy of user or request JSON goes
// through setOwn, so nothing a user wrote is dropped.

/** Sets `key` on `target` as an own, enumerable data property, as JSON.parse would. */
export function setOwn(target: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__') Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
  else target[key] = value;
}

/** Whether `target` has `key` as an own property (never one inherited from Object.prototype). */
export function hasOwnKey(target: object, key: string): boolean {
  return Object.prototype.hasOwnProperty.call(target, key);
}
