// A trigger's checks: its type and fields, RE2 value patterns (what Kubernetes CEL's matches() accepts,
// linear time), and label selector requirements.

import { RE2JS } from 're2js';
import { type ConfigIssue, IssueCollector, describe, isPlainObject, notOneOf } from './config-issues';
import { labelValueError, qualifiedNameError } from './kubernetes-names';

export function validateTrigger(trigger: unknown, path: string, out: IssueCollector): string | undefined {
  if (!isPlainObject(trigger)) {
    out.add(path, `must be an object with a type (always, annotation, labelSelector, requested), got ${describe(trigger)}`);
    return undefined;
  }
  const known: Record<string, string[]> = {
    always: ['type'],
    requested: ['type'],
    annotation: ['type', 'key', 'valuePattern'],
    labelSelector: ['type', 'matchLabels', 'matchExpressions'],
  };
  const type = trigger.type;
  if (typeof type !== 'string' || !(type in known)) {
    out.add(`${path}.type`, notOneOf(type, Object.keys(known)));
    return undefined;
  }
  for (const key of Object.keys(trigger)) {
    if (!known[type].includes(key)) out.add(`${path}.${key}`, `not a field of a ${type} trigger`);
  }
  if (type === 'annotation') {
    if (typeof trigger.key !== 'string') {
      out.add(`${path}.key`, `must be an annotation key, got ${describe(trigger.key)}`);
    } else {
      const error = qualifiedNameError(trigger.key);
      if (error) out.add(`${path}.key`, `"${trigger.key}" is not a valid annotation key: ${error}`);
    }
    if (trigger.valuePattern !== undefined) {
      if (typeof trigger.valuePattern !== 'string') {
        out.add(`${path}.valuePattern`, `must be a regular expression string, got ${describe(trigger.valuePattern)}`);
      } else {
        const error = valuePatternError(trigger.valuePattern);
        if (error) out.add(`${path}.valuePattern`, error);
      }
    }
  }
  if (type === 'labelSelector') {
    validateStringMap(trigger.matchLabels, `${path}.matchLabels`, out, true, undefined);
    const expressions = trigger.matchExpressions;
    if (expressions !== undefined && !Array.isArray(expressions)) {
      out.add(`${path}.matchExpressions`, `must be a list, got ${describe(expressions)}`);
    }
    const list = Array.isArray(expressions) ? expressions : [];
    list.forEach((expression: unknown, index: number) => {
      validateRequirement(expression, `${path}.matchExpressions[${index}]`, out);
    });
    if (isEmpty(trigger.matchLabels) && list.length === 0) {
      out.add(path, 'a labelSelector trigger needs matchLabels or matchExpressions (use type "always" to match everything)');
    }
  }
  return type;
}

/**
 * Compiles a trigger's `valuePattern` with RE2 semantics (linear-time matching, the syntax of
 * Kubernetes CEL's `matches()`), for a match of the whole value. Throws on a pattern RE2 rejects.
 */
export function compileValuePattern(pattern: string): { matches(value: string): boolean } {
  const compiled = RE2JS.compile(pattern);
  // A pattern without a metacharacter ("true", "enabled") matches only itself: a whole-value match is
  // then a string comparison, without running RE2's matcher on every admission.
  if (!RE2_METACHARACTER.test(pattern)) return { matches: (value) => value === pattern };
  return { matches: (value) => compiled.matches(value) };
}

/** Characters with a meaning in RE2 syntax; a pattern with none of them is a literal. */
const RE2_METACHARACTER = /[\\.+*?()|[\]{}^$]/;

function valuePatternError(pattern: string): string | undefined {
  try {
    compileValuePattern(pattern);
    return undefined;
  } catch (error) {
    const reason = (error as Error).message.replace(/^error parsing regexp: /, '');
    return `is not a valid regular expression in RE2 syntax (the syntax of Kubernetes CEL's matches(); no backreferences or lookaround, so matching stays linear in time): ${reason}`;
  }
}

/** Problems with one label selector requirement ({key, operator, values}), at `path`. */
export function labelSelectorRequirementIssues(expression: unknown, path: string): ConfigIssue[] {
  const out = new IssueCollector();
  validateRequirement(expression, path, out);
  return out.issues;
}

function validateRequirement(expression: unknown, path: string, out: IssueCollector): void {
  if (!isPlainObject(expression)) {
    out.add(path, `must be an object with key and operator, got ${describe(expression)}`);
    return;
  }
  if (typeof expression.key !== 'string' || qualifiedNameError(expression.key)) {
    const reason = typeof expression.key === 'string' ? qualifiedNameError(expression.key) : describe(expression.key);
    out.add(`${path}.key`, `must be a valid label key: ${reason}`);
  }
  const operator = expression.operator;
  const values = expression.values;
  if (operator === 'In' || operator === 'NotIn') {
    if (!Array.isArray(values) || values.length === 0) {
      out.add(`${path}.values`, `must be a non-empty list for operator ${operator}`);
    } else {
      values.forEach((value: unknown, index: number) => {
        const error = typeof value === 'string' ? labelValueError(value) : `must be a string, got ${describe(value)}`;
        if (error) out.add(`${path}.values[${index}]`, error);
      });
    }
  } else if (operator === 'Exists' || operator === 'DoesNotExist') {
    if (values !== undefined && !(Array.isArray(values) && values.length === 0)) {
      out.add(`${path}.values`, `must be empty for operator ${operator}`);
    }
  } else {
    out.add(`${path}.operator`, notOneOf(operator, ['In', 'NotIn', 'Exists', 'DoesNotExist']));
  }
}

export function isEmpty(value: unknown): boolean {
  if (value === undefined) return true;
  if (Array.isArray(value)) return value.length === 0;
  if (isPlainObject(value)) return Object.keys(value).length === 0;
  return false;
}

export function validateStringMap(
  map: unknown,
  path: string,
  out: IssueCollector,
  labels: boolean,
  reserved: { inject: string; status: string; hashes: string } | undefined,
): void {
  if (map === undefined) return;
  if (!isPlainObject(map)) {
    out.add(path, `must be a map of strings, got ${describe(map)}`);
    return;
  }
  for (const [key, value] of Object.entries(map)) {
    const keyError = qualifiedNameError(key);
    if (keyError) out.add(`${path}["${key}"]`, `is not a valid ${labels ? 'label' : 'annotation'} key: ${keyError}`);
    if (reserved && (key === reserved.inject || key === reserved.status || key === reserved.hashes)) {
      out.add(`${path}["${key}"]`, 'is reserved for the injector itself');
    }
    if (typeof value !== 'string') {
      out.add(`${path}["${key}"]`, `must be a string, got ${describe(value)}`);
    } else if (labels && !value.includes('{{')) {
      const valueError = labelValueError(value);
      if (valueError) out.add(`${path}["${key}"]`, `label value "${value}" ${valueError}`);
    }
  }
}
