// `diff`: the JSONPatch the webhook would answer for each object, one operation per line, for review
// in a pull request.

import type { Operation } from 'fast-json-patch';
import { describeSource, describeObject, outcomeOf } from './outcome';
import type { ObjectPreview } from './preview';

/** What `diff -o json` prints for each object. */
export interface ObjectPatch {
  readonly source: string;
  readonly document: number;
  /** The object's index in a List document's items; null when the object is the document. */
  readonly item: number | null;
  readonly kind: string;
  readonly namespace: string;
  readonly name: string | null;
  readonly patch: readonly Operation[];
}

export function objectPatches(previews: readonly ObjectPreview[]): ObjectPatch[] {
  return previews.map((preview) => ({
    source: preview.input.source,
    document: preview.input.index,
    item: preview.item ?? null,
    kind: preview.gvk.kind,
    namespace: preview.namespace,
    name: preview.name ?? null,
    patch: preview.patch,
  }));
}

function formatOperation(operation: Operation): string {
  const value = 'value' in operation ? ` ${JSON.stringify(operation.value)}` : '';
  const from = 'from' in operation ? ` from ${operation.from}` : '';
  return `${operation.op} ${operation.path}${from}${value}`;
}

export function formatDiff(previews: readonly ObjectPreview[]): string {
  return previews
    .map((preview) => {
      const header = `# ${describeObject(preview)} (${describeSource(preview)}): ${outcomeOf(preview)}`;
      return [header, ...preview.patch.map(formatOperation)].join('\n') + '\n';
    })
    .join('');
}
