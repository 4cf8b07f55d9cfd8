import { BoundedCache, TwoLevelCache, stringBytes } from './bounded-cache';

// RFC 6901: "~" and "/" inside a token must be escaped, or an annotation key such as
// "sidecar-injector.io/status" would address a nested path and the apiserver would reject the patch.

/** Escaped tokens by their text: the ones that need escaping are nearly always the config's own
 * annotation keys (the status annotation on every request). Bounded in entries and bytes. */
const escaped = new BoundedCache<string, string>({ maxEntries: 1024, maxBytes: 256 * 1024 });

export function escapePointerToken(token: string): string {
  if (!token.includes('~') && !token.includes('/')) return token;
  let text = escaped.get(token);
  if (text === undefined) {
    text = token.replace(/~/g, '~0').replace(/\//g, '~1');
    escaped.set(token, text, stringBytes(token) + stringBytes(text));
  }
  return text;
}

export function pointer(base: string, ...tokens: (string | number)[]): string {
  let out = base;
  for (const token of tokens) out += '/' + (typeof token === 'number' ? String(token) : escapePointerToken(token));
  return out;
}

/** Pointers made by `childPointer`, by base and token. Bounded in entries and bytes. */
const children = new TwoLevelCache<string, string, string>({ maxEntries: 1024, maxBytes: 256 * 1024 });

/**
 * `pointer(base, token)`, the same string each time for the same base and token. A patch's paths are
 * keys of the per-config patch cache (patch-encoding.ts), and a string built anew on each request is
 * hashed anew at each lookup; the config's own tokens under the few bases a pod has give the same few
 * strings, request after request, whose hashes V8 keeps.
 */
export function childPointer(base: string, token: string): string {
  let text = children.get(base, token);
  if (text === undefined) children.set(base, token, (text = pointer(base, token)), stringBytes(base) + stringBytes(token) + stringBytes(text));
  return text;
}
