// `inject`: the manifests as the apiserver would store them, every object patched by the webhook's
// answer, in the input's order. Objects nothing changes are written back exactly as the user wrote
// them; patched ones keep the user's comments.

import type { Operation } from 'fast-json-patch';
import { Document } from 'yaml';
import type { KubernetesObject } from '../engine/admission-review';
import type { InputDocument } from './manifest-input';
import { describeSource, describeObject } from './outcome';
import type { ObjectPreview } from './preview';
import { patchYamlDocument } from './yaml-patch';

/** One input document and what happens to it: its object's patch, or its List items' patches combined. */
interface DocumentResult {
  readonly input: InputDocument;
  readonly patch: Operation[];
  readonly output: KubernetesObject;
}

function documentResults(previews: readonly ObjectPreview[]): DocumentResult[] {
  const results = new Map<InputDocument, DocumentResult>();
  for (const preview of previews) {
    const object = preview.input.object!;
    let result = results.get(preview.input);
    if (!result) {
      // A List's items are patched in a copy of the List, each at its own index.
      const output = preview.item === undefined ? preview.output : { ...object, items: [...(object.items as unknown[])] };
      result = { input: preview.input, patch: [], output };
      results.set(preview.input, result);
    }
    if (preview.item === undefined) {
      result.patch.push(...preview.patch);
    } else {
      result.patch.push(...preview.patch.map((operation) => ({ ...operation, path: `/items/${preview.item}${operation.path}` })));
      (result.output.items as unknown[])[preview.item] = preview.output;
    }
  }
  return [...results.values()];
}

/**
 * The mutated manifests as multi-document YAML, one document per input document. Strings that YAML 1.1
 * would read as something else (`"yes"`, `"on"`, `"0123"`) stay quoted, because kubectl reads YAML 1.1.
 */
export function formatInjected(previews: readonly ObjectPreview[]): string {
  return documentResults(previews)
    .map((result, position) => {
      let text = result.patch.length === 0 ? result.input.text.replace(/^(?:[ \t]*\r?\n)+/, '') : patchedText(result);
      if (!text.endsWith('\n')) text += '\n';
      return position === 0 || startsWithDocumentMarker(text) ? text : '---\n' + text;
    })
    .join('');
}

/**
 * A patched document: the user's document with the patch applied (comments kept), provided that gives
 * exactly the object the plain JSONPatch gives; otherwise the object printed afresh.
 */
function patchedText(result: DocumentResult): string {
  const patched = patchYamlDocument(result.input.document, result.patch);
  if (patched && patched.errors.length === 0 && JSON.stringify(patched.toJS()) === JSON.stringify(result.output)) {
    return patched.toString({ lineWidth: 0 });
  }
  return new Document(result.output, { compat: 'yaml-1.1' }).toString({ lineWidth: 0 });
}

/** Whether `text` opens with its own `---` line (after comments or directives). */
function startsWithDocumentMarker(text: string): boolean {
  return /^(?:[ \t]*(?:#.*)?\r?\n|%.*\r?\n)*---(?:[ \t]|\r?\n|$)/.test(text);
}

/** What `inject` reports on stderr: engine warnings, and objects the webhook would not be called for. */
export function injectNotes(previews: readonly ObjectPreview[]): string[] {
  const notes: string[] = [];
  for (const preview of previews) {
    const where = `${describeSource(preview)}: ${describeObject(preview)}`;
    if (preview.targetKind && !preview.sentToWebhook) {
      notes.push(`note: ${where}: not injected: ${preview.webhooks?.[0]?.reason ?? 'no webhook is called'}`);
    }
    for (const warning of preview.result?.response.warnings ?? []) notes.push(`warning: ${where}: ${warning}`);
  }
  return notes;
}
