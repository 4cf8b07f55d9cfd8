// RFC 6901: "~" and "/" inside a token must be escaped, or an annotation key such as
// "sidecar-injector.io/status" would address a nested path and the apiserver would reject the patch.

export function escapePointerToken(token: string): string {
  if (!token.includes('~') && !token.includes('/')) return token;
  return token.replace(/~/g, '~0').replace(/\//g, '~1');
}

export function pointer(base: string, ...tokens: (string | number)[]): string {
  let out = base;
  for (const token of tokens) out += '/' + (typeof token === 'number' ? String(token) : escapePointerToken(token));
  return out;
}
