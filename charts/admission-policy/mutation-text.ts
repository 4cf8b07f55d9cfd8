// How a policy's mutation is written as CEL text and read back: the `{path, value}` adds (op, when),
// the guard lines that name each condition, shared mutations' leading line, the folded form that carries
// the policy's own conditions, and the binding of named values in dependency order (bindInOrder). The
// simulator and the tests read mutations back with the same functions that wrote them.

import type { MatchCondition, Variable } from './admission-policy-types';
import { celString } from './cel-text';


/** `{"path": ..., "value": ...}`: one JSONPatch add, as plain data until the mutation turns it into JSONPatch. */
export function op(path: string, value: string): string {
  return `{"path": dyn(${path}), "value": dyn(${value})}`;
}

/** `cond ? [item] : []` */
export function when(condition: string, item: string): string {
  return `(${condition} ? [${item}] : [])`;
}

export function concat(lists: string[]): string {
  return lists.length === 0 ? '[]' : lists.join(' + ');
}

/**
 * `(\n  // name\n  (condition) &&\n  // name\n  (condition)\n) ? data : []`: the named conditions, one per
 * line, each after a CEL comment with its name, guarding `data`.
 */
export function guardedPatch(conditions: readonly MatchCondition[], data: string, otherwise = '[]'): string {
  if (conditions.length === 0) return data;
  const lines = conditions.map((condition, index) => `  // ${condition.name}\n  (${condition.expression})${index < conditions.length - 1 ? ' &&' : ''}`);
  return `(\n${lines.join('\n')}\n) ? ${data} : ${otherwise}`;
}

/** The line a shared mutation starts with, naming its injections in order (read back by `mutationInjections`). */
export const GROUP_LINE = /^\(\/\/ injections (\[.*\])\n/;

/** What a shared mutation's values bound by depth are read through: `shared<depth>.<name>` (bindInOrder). */
export const SHARED_SCOPE = 'shared';

/** The injections a shared mutation applies, in order (undefined for a mutation of one injection). */
export function mutationInjections(expression: string): string[] | undefined {
  const match = GROUP_LINE.exec(patchData(expression));
  return match ? (JSON.parse(match[1]) as string[]) : undefined;
}

const GUARD_LINE = /^ {2}\/\/ ([a-z][a-z0-9-]*)\n {2}\((.*)\)( &&)?$/;

/**
 * The named conditions guarding the patch of a mutation of one injection, read back from its CEL
 * text (as `patchData` writes them: `((\n  // name\n  (condition) && ...\n) ? data : [])`), in
 * order; empty when it has none. A folded mutation's own conditions are `foldedConditions`.
 */
export function mutationGuard(expression: string): MatchCondition[] {
  return leadingGuard(patchData(expression));
}

/** The named conditions of the guard `text` starts with (after at most one character), or none. */
function leadingGuard(text: string): MatchCondition[] {
  const start = text.indexOf('(\n');
  const end = text.indexOf('\n) ? ');
  if (start < 0 || start > 1 || end < 0) return [];
  return guardConditions(text.slice(start + 2, end).split('\n'));
}

/** The named conditions of guard lines: pairs of a `// <name>` line and its `(<CEL>) &&` line. */
function guardConditions(lines: readonly string[]): MatchCondition[] {
  const conditions: MatchCondition[] = [];
  for (let index = 0; index + 1 < lines.length; index += 2) {
    const match = GUARD_LINE.exec(`${lines[index]}\n${lines[index + 1]}`);
    if (!match) throw new Error(`not a guard line: ${lines[index]} / ${lines[index + 1]}`);
    conditions.push({ name: match[1], expression: match[2] });
  }
  return conditions;
}

/**
 * The guards of each injection a mutation applies, in order: one for a mutation of one injection, one
 * per injection of a shared mutation (each injection's part starts with its guard lines).
 */
export function mutationGuards(expression: string): MatchCondition[][] {
  const blocks = [...patchData(expression).matchAll(/\(\n((?: {2}\/\/ [a-z][a-z0-9-]*\n {2}\(.*\)(?: &&)?\n)+)\) \? /g)];
  return blocks.map((block) => guardConditions(block[1].trimEnd().split('\n')));
}

/** Turns the list of `{path, value}` maps into the JSONPatch operations the apiserver applies. */
export const TO_JSON_PATCH = '.map(p, JSONPatch{op: "add", path: string(p.path), value: p.value})';

/**
 * The end of a folded mutation: its adds as JSONPatch, or when it has none a test that fails, which
 * leaves the object as it was (json_patch.go returns it without encoding the patched JSON and
 * decoding it again, as it does for an empty patch).
 */
export const FOLDED_TAIL = `].map(patch, size(patch) == 0 ? [JSONPatch{op: "test", path: "/kind", value: "no injection applies"}] : patch${TO_JSON_PATCH})[0]`;

/**
 * A mutation that carries its policy's conditions (a policy without match conditions):
 * `[(\n  // pod-spec-present\n  (...) && ...\n) ? (adds) : []]` then `FOLDED_TAIL`.
 */
export function foldedPatch(conditions: readonly MatchCondition[], adds: string): string {
  return `[${guardedPatch(conditions, adds)}${FOLDED_TAIL}`;
}

/** Whether a mutation carries its policy's conditions (`foldedPatch`). */
export function isFolded(expression: string): boolean {
  return expression.startsWith('[(\n') && expression.endsWith(FOLDED_TAIL);
}

/** The policy's conditions a folded mutation starts with; undefined for another mutation. */
export function foldedConditions(expression: string): MatchCondition[] | undefined {
  return isFolded(expression) ? leadingGuard(expression.slice(1)) : undefined;
}

/**
 * The CEL of a mutation's adds, as a list of `{path, value}` maps, without the JSONPatch constructor
 * (the same constant text in every mutation): for a folded mutation the adds inside its policy's
 * conditions, else the whole expression before `TO_JSON_PATCH`.
 */
export function patchData(expression: string): string {
  if (isFolded(expression)) {
    const inner = expression.slice(1, -FOLDED_TAIL.length);
    const start = inner.indexOf('\n) ? ') + '\n) ? '.length;
    if (!inner.endsWith(' : []')) throw new Error(`not a folded mutation: ${expression.slice(0, 80)}...`);
    return inner.slice(start, -' : []'.length);
  }
  if (!expression.endsWith(TO_JSON_PATCH)) throw new Error(`not a mutation this backend writes: ${expression.slice(0, 80)}...`);
  return expression.slice(0, -TO_JSON_PATCH.length);
}

/**
 * The named expressions as one CEL expression computing `result`, each name bound once, in order.
 * Kubernetes 1.32 cannot read `spec.variables` from a mutation (its patch environment does not resolve
 * the `variables` type) and has no `cel.bind`, so the policy carries no variables: every value is
 * computed once, where the expression needs it, in a comprehension over one item:
 * `[value].map(name, rest)[0]`.
 *
 * What that costs at admission shapes the text. A name nothing reads is left out; one that is a
 * literal or another name, or that is read once outside any comprehension's loop, is written where it
 * is read (evaluated once there too, or not at all when a condition skips it). The others are bound
 * by depth: each value with the others that read none of the same depth's (in order), as a map
 * (`[{"a": dyn(..), "b": dyn(..)}].map(<scope><depth>, rest)[0]`, read as `<scope><depth>.a`), or
 * alone under its own name. The apiserver's cost tracker walks every enclosing comprehension for each
 * step it evaluates (cel-go's asCostTracker), so a dozen values nested one in another cost each later
 * step a dozen lookups; bound by depth, the deepest step is a few levels down.
 */
export function bindInOrder(named: readonly Variable[], result: string, scope = 'bound'): string {
  const local = (expression: string) => expression.replace(/\bvariables\.([A-Za-z_][A-Za-z0-9_]*)/g, '$1');
  const names = named.map((variable) => variable.name);
  if (new Set(names).size !== names.length) throw new Error(`a name is bound twice: ${names.join(', ')}`);
  // Which values are written where they are read, from the last: `texts[0]` is the result, the rest
  // the values kept so far, in order.
  const texts = [result];
  const kept: string[] = [];
  for (let index = named.length - 1; index >= 0; index--) {
    const { name } = named[index];
    const value = local(named[index].expression);
    const uses = texts.map((text) => identifierUses(text, name));
    const count = uses.reduce((sum, at) => sum + at.length, 0);
    if (count === 0) continue;
    const simple = /^(?:[A-Za-z_][A-Za-z0-9_]*|true|false|-?[0-9]+|\[\]|"")$/.test(value);
    const once = count === 1 && uses.every((at, text) => at.length === 0 || !inLoop(texts[text], at[0]));
    if (simple || once) {
      const replacement = simple ? value : `(${value})`;
      texts.forEach((text, at) => (texts[at] = replaceUses(text, uses[at], name.length, () => replacement)));
      continue;
    }
    texts.splice(1, 0, value);
    kept.unshift(name);
  }
  const values = texts.slice(1);
  // Depth: one more than the deepest value it reads, and never less than the value before it's, so the
  // values keep their order in the text (an injection's part before a later injection's).
  const depth: number[] = [];
  kept.forEach((_, index) => {
    const reads = Math.max(-1, ...kept.slice(0, index).map((other, at) => (identifierUses(values[index], other).length > 0 ? depth[at] : -1))) + 1;
    depth.push(Math.max(reads, depth[index - 1] ?? 0));
  });
  let body = texts[0];
  for (let level = Math.max(-1, ...depth); level >= 0; level--) {
    const members = kept.flatMap((name, index) => (depth[index] === level ? [{ name, value: values[index] }] : []));
    if (members.length === 1) {
      body = `[${members[0].value}].map(${members[0].name}, ${body})[0]`;
      continue;
    }
    const map = `${scope}${level}`;
    for (const { name } of members) body = replaceUses(body, identifierUses(body, name), name.length, () => `${map}.${name}`);
    body = `[{${members.map(({ name, value }) => `${celString(name)}: dyn(${value})`).join(', ')}}].map(${map}, ${body})[0]`;
  }
  return body;
}

/** `text` with the `length` characters at each of `uses` (ascending) replaced. */
function replaceUses(text: string, uses: readonly number[], length: number, replacement: () => string): string {
  let out = text;
  for (const at of [...uses].reverse()) out = out.slice(0, at) + replacement() + out.slice(at + length);
  return out;
}

/** Where CEL `text` reads the name `name`: not in a string literal or comment, nor as a field (`x.name`). */
function identifierUses(text: string, name: string): number[] {
  const uses: number[] = [];
  forEachCode(text, (index) => {
    if (!text.startsWith(name, index) || /[A-Za-z0-9_.]/.test(text[index - 1] ?? '') || /[A-Za-z0-9_]/.test(text[index + name.length] ?? '')) return;
    uses.push(index);
  });
  return uses;
}

/** Calls `visit` with every index of `text` that is CEL code: outside string literals and `//` comments. */
function forEachCode(text: string, visit: (index: number) => void): void {
  for (let index = 0; index < text.length; index++) {
    if (text[index] === '"') {
      for (index++; index < text.length && text[index] !== '"'; index++) if (text[index] === '\\') index++;
      continue;
    }
    if (text.startsWith('//', index)) {
      index = text.indexOf('\n', index);
      if (index < 0) return;
      continue;
    }
    visit(index);
  }
}

const MACRO = /\.(?:map|filter|exists|exists_one|all)\($/;

/**
 * Whether `at` in CEL `text` is inside the loop body of a comprehension (`list.map(x, <here>)` and the
 * like), which runs once per element. A binding (`[value].map(name, <here>)[0]`) runs it once: not a loop.
 */
function inLoop(text: string, at: number): boolean {
  const closing: Record<number, number> = {};
  const opened: number[] = [];
  forEachCode(text, (index) => {
    const char = text[index];
    if (char === '(' || char === '[' || char === '{') opened.push(index);
    else if (char === ')' || char === ']' || char === '}') closing[opened.pop()!] = index;
  });
  const openingOf = Object.fromEntries(Object.entries(closing).map(([open, close]) => [close, Number(open)]));
  let loop = false;
  forEachCode(text, (index) => {
    if (loop || text[index] !== '(' || index > at || !MACRO.test(text.slice(Math.max(0, index - 12), index + 1))) return;
    const close = closing[index];
    if (close === undefined || close < at) return;
    // The body starts after the comma that follows the iteration variable.
    const comma = text.indexOf(',', index);
    if (comma < 0 || comma > at) return;
    const dot = text.lastIndexOf('.', index);
    const receiverEnd = dot - 1;
    const receiverStart = openingOf[receiverEnd];
    const literalList = text[receiverEnd] === ']' && receiverStart !== undefined && !/[A-Za-z0-9_)\]]/.test(text.slice(0, receiverStart).trimEnd().slice(-1));
    const binding = literalList && text.startsWith('[0]', close + 1);
    if (!binding) loop = true;
  });
  return loop;
}

