import { TwoLevelCache } from './bounded-cache';

// RFC 6901: "~" and "/" inside a token must be escaped, or an annotation key such as
// "sidecar-injector.io/status" would address a nested path and the apiserver would reject the patch.

/** Escaped tokens by their text: the ones that need escaping are nearly always the config's own
 * annotation keys (the status annotation on every request). Bounded; cleared when full. */
const escaped = new Map<string, string>();
const ESCAPED_ENTRIES = 1024;

export function escapePointerToken(token: string): string {
  if (!token.includes('~') && !token.includes('/')) return token;
  let text = escaped.get(token);
  if (text === undefined) {
    text = token.replace(/~/g, '~0').replace(/\//g, '~1');
    if (escaped.size >= ESCAPED_ENTRIES) escaped.clear();
    escaped.set(token, text);
  }
  return text;
}

export function pointer(base: string, ...tokens: (string | number)[]): string {
  let out = base;
  for (const token of tokens) out += '/' + (typeof token === 'number' ? String(token) : escapePointerToken(token));
  return out;
}

/** Pointers made by `childPointer`, by base and token. */
const children = new TwoLevelCache<string, string, string>(1024);

/**
 * `pointer(base, token)`, the same string each time for the same base and token. A patch's paths are
 * keys of the per-config patch cache (patch-encoding.ts), and a string built anew on each request is
 * hashed anew at each lookup; the config's own tokens under the few bases a pod has give the same few
 * strings, request after request, whose hashes V8 keeps.
 */
export function childPointer(base: string, token: string): string {
  let text = children.get(base, token);
  if (text === undefined) children.set(base, token, (text = pointer(base, token)));
  return text;
}
