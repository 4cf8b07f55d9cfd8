// Turning JSON values and `{{placeholder}}` strings into CEL source text.
//
// The kube-apiserver compiles admission-policy CEL with homogeneous aggregate literals: every element
// of a list literal and every value of a map literal must have the same type. Injected containers are
// raw JSON with strings, numbers, lists and objects side by side, so every value of a literal that is
// not all strings is wrapped in `dyn()`. JSONPatch values built from plain CEL maps and lists are
// converted to JSON by the apiserver; no `Object.*` type names are needed for them.

import { PLACEHOLDERS, isPlaceholderName, type JsonValue } from '../../webhook/config';

/** Placeholder name -> the CEL expression (of type string) that gives its value for the admitted object. */
export type PlaceholderExpressions = Readonly<Record<keyof typeof PLACEHOLDERS, string>>;

/** A CEL string literal: JSON's escapes are a subset of CEL's, and CEL accepts UTF-8 text as is. */
export function celString(text: string): string {
  return JSON.stringify(text);
}

/** `["a", "b"]` */
export function celStringList(items: readonly string[]): string {
  return `[${items.map(celString).join(', ')}]`;
}

const PLACEHOLDER = /\{\{\s*([^{}]*?)\s*\}\}/g;

/**
 * A string that may hold placeholders, as a CEL expression of type string:
 * `"http://" + variables.name + ":8080"`.
 */
export function celTemplateString(text: string, placeholders: PlaceholderExpressions): string {
  if (!text.includes('{{')) return celString(text);
  const parts: string[] = [];
  let last = 0;
  for (const match of text.matchAll(PLACEHOLDER)) {
    const name = match[1];
    if (!isPlaceholderName(name)) throw new Error(`unknown placeholder {{${name}}}`);
    if (match.index! > last) parts.push(celString(text.slice(last, match.index)));
    parts.push(placeholders[name]);
    last = match.index! + match[0].length;
  }
  if (last < text.length) parts.push(celString(text.slice(last)));
  return parts.join(' + ');
}

/** Whether every value is a string (then a literal needs no `dyn()`). */
function allStrings(values: readonly JsonValue[]): boolean {
  return values.every((value) => typeof value === 'string');
}

/**
 * A JSON value as a CEL literal expression. Strings may hold placeholders. Numbers keep their JSON
 * kind: whole numbers become CEL ints, the others doubles.
 */
export function celValue(value: JsonValue, placeholders: PlaceholderExpressions): string {
  if (value === null) return 'null';
  if (typeof value === 'string') return celTemplateString(value, placeholders);
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new Error(`${value} is not a JSON number`);
    if (Number.isInteger(value)) return String(value);
    const text = String(value);
    return /[.eE]/.test(text) ? text : `${text}.0`;
  }
  if (Array.isArray(value)) {
    const wrap = !allStrings(value);
    return `[${value.map((item) => (wrap ? `dyn(${celValue(item, placeholders)})` : celValue(item, placeholders))).join(', ')}]`;
  }
  const entries = Object.entries(value);
  const wrap = !allStrings(entries.map(([, item]) => item));
  return `{${entries.map(([key, item]) => `${celString(key)}: ${wrap ? `dyn(${celValue(item, placeholders)})` : celValue(item, placeholders)}`).join(', ')}}`;
}

/** RFC 6901 escaping of one JSON pointer token. */
export function jsonPointerToken(token: string): string {
  return token.replace(/~/g, '~0').replace(/\//g, '~1');
}

/** A field name that CEL can select with `.name` and test with `has(x.name)`. */
const CEL_IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;
const CEL_RESERVED = new Set([
  'true', 'false', 'null', 'in', 'as', 'break', 'const', 'continue', 'else', 'for', 'function', 'if', 'import',
  'let', 'loop', 'package', 'namespace', 'return', 'var', 'void', 'while',
]);

export function isCelFieldName(name: string): boolean {
  return CEL_IDENTIFIER.test(name) && !CEL_RESERVED.has(name);
}

/**
 * `base.key`, or `base["key"]` for a key CEL cannot select with a dot (`nvidia.com/gpu`): only a
 * map's key can be such a name, and a map can be indexed.
 */
export function celFieldSelect(base: string, key: string): string {
  return isCelFieldName(key) ? `${base}.${key}` : `${base}[${celString(key)}]`;
}

/** Whether `base` has `key`: `has(base.key)`, or `"key" in base` for a map key that is no identifier. */
export function celFieldPresent(base: string, key: string): string {
  return isCelFieldName(key) ? `has(${base}.${key})` : `${celString(key)} in ${base}`;
}
