// Applying the webhook's JSONPatch to the user's parsed YAML document instead of to a plain object, so
// a patched manifest keeps its comments and layout. The engine only emits `add`; anything else, or a
// result that differs from the plain-object patch, makes the caller print the object afresh.

import type { Operation } from 'fast-json-patch';
import { Document, isCollection, isMap, isScalar, isSeq, parse, visit, type Node } from 'yaml';

function unescapeToken(token: string): string {
  return token.replace(/~1/g, '/').replace(/~0/g, '~');
}

/** Whether kubectl, which reads YAML 1.1, would read the plain scalar `text` as something else than the string. */
function readsDifferentlyInYaml11(text: string): boolean {
  try {
    return parse(text, { version: '1.1' }) !== text;
  } catch {
    return true;
  }
}

/** A node for `value` whose strings that YAML 1.1 would misread (`yes`, `on`, `0123`) are quoted. */
function createNode(document: Document, value: unknown): Node {
  const node = document.createNode(value) as Node;
  visit(node, {
    Scalar(_key, scalar) {
      if (typeof scalar.value === 'string' && readsDifferentlyInYaml11(scalar.value)) scalar.type = 'QUOTE_DOUBLE';
    },
  });
  if (isScalar(node) && typeof node.value === 'string' && readsDifferentlyInYaml11(node.value)) node.type = 'QUOTE_DOUBLE';
  return node;
}

/**
 * Applies `operations` to a copy of `document`; undefined when one of them cannot be applied this way.
 */
export function patchYamlDocument(document: Document, operations: readonly Operation[]): Document | undefined {
  const patched = document.clone();
  for (const operation of operations) {
    if (operation.op !== 'add') return undefined;
    const tokens = operation.path.split('/').slice(1).map(unescapeToken);
    const last = tokens.pop();
    if (last === undefined) return undefined;
    // Flow collections (`[a, b]`, `{ k: v }`) on the way become block ones, so an added container is
    // not one very long line.
    for (let depth = 0; depth <= tokens.length; depth++) {
      const node = depth === 0 ? patched.contents : patched.getIn(tokens.slice(0, depth), true);
      if (isCollection(node) && node.flow) node.flow = false;
    }
    const parent = tokens.length === 0 ? patched.contents : patched.getIn(tokens, true);
    if (isMap(parent)) {
      parent.set(last, createNode(patched, operation.value));
    } else if (isSeq(parent)) {
      const node = createNode(patched, operation.value);
      if (last === '-') {
        parent.items.push(node);
      } else {
        const index = Number(last);
        if (!/^\d+$/.test(last) || index > parent.items.length) return undefined;
        parent.items.splice(index, 0, node);
      }
    } else {
      return undefined;
    }
  }
  return patched;
}
