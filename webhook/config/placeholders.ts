// The template syntax of injections: `{{ name }}` placeholders in string values, nothing else.
// Substitution is plain string replacement: no expressions, no code execution, no recursion.
import { hasOwnKey, setOwn } from './own-property';

/** The placeholders an injection's strings may use. */
export const PLACEHOLDERS = {
  /** The value of the annotation that triggered the injection (annotation triggers only). */
  annotation: 'annotation',
  /** The object's `metadata.name`, or its `metadata.generateName` when the apiserver has not named it yet. */
  name: 'name',
  /** The namespace of the admission request. */
  namespace: 'namespace',
} as const;

/** The name of a placeholder an injection's strings may use: `annotation`, `name` or `namespace` (written `{{ name }}`). */
export type PlaceholderName = keyof typeof PLACEHOLDERS;

export type PlaceholderValues = Partial<Record<PlaceholderName, string>>;

const PLACEHOLDER = /\{\{\s*([^{}]*?)\s*\}\}/g;

/** Every placeholder name used in `text`, in order, including ones that are not valid names. */
export function placeholdersIn(text: string): string[] {
  const names: string[] = [];
  if (!text.includes('{{')) return names;
  for (const match of text.matchAll(PLACEHOLDER)) names.push(match[1]);
  return names;
}

export function isPlaceholderName(name: string): name is PlaceholderName {
  return hasOwnKey(PLACEHOLDERS, name);
}

export class PlaceholderRenderError extends Error {}

/**
 * Replaces every placeholder in `text`. Throws PlaceholderRenderError when a placeholder has no value
 * or an empty one: an injected `wait-for-it` with an empty host is worse than no injection.
 */
export function renderPlaceholders(text: string, values: PlaceholderValues): string {
  if (!text.includes('{{')) return text;
  return text.replace(PLACEHOLDER, (_match, name: string) => {
    const value = isPlaceholderName(name) ? values[name] : undefined;
    if (value === undefined || value === '') {
      throw new PlaceholderRenderError(`placeholder {{${name}}} has no value for this object`);
    }
    return value;
  });
}

/** Applies `visit` to every string inside a JSON value (not to keys) and returns the new value. */
export function mapJsonStrings<T>(value: T, visit: (text: string) => string): T {
  if (typeof value === 'string') return visit(value) as unknown as T;
  if (Array.isArray(value)) return value.map((item) => mapJsonStrings(item, visit)) as unknown as T;
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) setOwn(out, key, mapJsonStrings(item, visit));
    return out as T;
  }
  return value;
}

/** Whether any string inside a JSON value contains a placeholder. */
export function containsPlaceholder(value: unknown): boolean {
  if (typeof value === 'string') return value.includes('{{');
  if (Array.isArray(value)) return value.some(containsPlaceholder);
  if (value !== null && typeof value === 'object') return Object.values(value).some(containsPlaceholder);
  return false;
}
