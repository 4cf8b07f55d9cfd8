// JSON text written by hand on the per-request path (the answer's head, the admission log line).

/** Longest string checked character by character; longer ones go to JSON.stringify directly. */
const MAX_SCANNED = 256;

/**
 * `JSON.stringify(value)` for a string. Printable ASCII without `"` or `\` (every uid, kind, name and
 * namespace Kubernetes accepts) is only quoted: a character loop that V8 compiles inline costs less than
 * JSON.stringify's call into the runtime and its serializer, which the admission line made about ten
 * times per request. Anything else, or anything long, goes to JSON.stringify, so the text is always the same.
 */
export function jsonString(value: string): string {
  if (value.length > MAX_SCANNED) return JSON.stringify(value);
  for (let i = 0; i < value.length; i++) {
    const code = value.charCodeAt(i);
    if (code < 0x20 || code > 0x7e || code === 0x22 || code === 0x5c) return JSON.stringify(value);
  }
  return `"${value}"`;
}
