// A ContainerMerge as CEL: the JSONPatch adds that set its fields in the pod's own containers, leaf by
// leaf, only where a value differs (so reinvocation finds nothing to do), the whole nested object when
// `whenMissing: create` and it is absent.

import { ContainerMerge, JsonObject, JsonValue } from '../../webhook/config';
import { celFieldPresent, celFieldSelect, celString, celStringList, jsonPointerToken } from './cel-text';
import { op } from './mutation-text';

/**
 * One merge into one container list. `skip`: every nested object of `fields` must exist in the
 * container, or the merge leaves that container alone. `create`: a missing nested object is added
 * whole. A leaf that already has the value is not patched (so reinvocation finds nothing to do).
 */
export function mergePatchOps(
template: string,
merge: ContainerMerge,
  list: 'containers' | 'initContainers',
  containerPointer: (list: 'containers' | 'initContainers', c: string) => string,
  value: (json: unknown) => string,
): string[] {
  const t = template;
  const selected = `(has(${t}.spec.${list}) ? ${t}.spec.${list} : []).filter(c, !(c.name in variables.injectedContainers) && c.name in ${celStringList(merge.containerNames)})`;
  const ops: string[] = [];
  // A key that is no CEL identifier (`nvidia.com/gpu`) is a map key: indexed, and tested with `in`.
  const access = (path: string[]) => path.reduce(celFieldSelect, 'c');
  const present = (path: string[]) => celFieldPresent(access(path.slice(0, -1)), path[path.length - 1]);
  const pointerOf = (path: string[]) => `${containerPointer(list, 'c')} + ${celString('/' + path.map(jsonPointerToken).join('/'))}`;
  const hasAll = (paths: string[][]) => paths.map(present);
  const leafUnchanged = (path: string[], leaf: JsonValue) => `(${present(path)} && ${access(path)} == ${value(leaf)})`;
  const emit = (conditions: string[], path: string[], patchValue: JsonValue) => {
    ops.push(`${selected}.filter(c, ${conditions.join(' && ')}).map(c, ${op(pointerOf(path), value(patchValue))})`);
  };

  const objectPaths = fieldPaths(merge.fields).filter((path) => isObject(valueAt(merge.fields, path)));
  if ((merge.whenMissing ?? 'skip') === 'skip') {
    const guard = hasAll(objectPaths);
    for (const path of fieldPaths(merge.fields)) {
      const leaf = valueAt(merge.fields, path);
      if (isObject(leaf)) continue;
      emit([...guard, `!${leafUnchanged(path, leaf)}`], path, leaf);
    }
  } else {
    for (const path of fieldPaths(merge.fields)) {
      const node = valueAt(merge.fields, path);
      const parents = hasAll(objectPaths.filter((candidate) => candidate.length < path.length && candidate.every((key, index) => path[index] === key)));
      if (isObject(node)) emit([...parents, `!${present(path)}`], path, node);
      else emit([...parents, `!${leafUnchanged(path, node)}`], path, node);
    }
  }
  return ops;
}

/** Every path from the root of `fields` to a value (objects are walked, everything else is a leaf). */
function fieldPaths(fields: JsonObject, prefix: string[] = []): string[][] {
  const paths: string[][] = [];
  for (const [key, value] of Object.entries(fields)) {
    const path = [...prefix, key];
    paths.push(path);
    if (isObject(value)) paths.push(...fieldPaths(value, path));
  }
  return paths;
}

export function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function valueAt(fields: JsonObject, path: string[]): JsonValue {
  let current: JsonValue = fields;
  for (const key of path) current = (current as JsonObject)[key];
  return current;
}
