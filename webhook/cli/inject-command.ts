// `inject`: the manifests as the apiserver would store them, every object patched by the webhook's
// answer, in the input's order. Objects nothing changes are written back exactly as the user wrote
// them; patched ones keep the user's comments.

import { Document } from 'yaml';
import { describeLocation } from './manifest-input';
import { describeObject } from './outcome';
import type { ObjectPreview } from './preview';
import { patchYamlDocument } from './yaml-patch';

/**
 * The mutated manifests as multi-document YAML. Strings that YAML 1.1 would read as something else
 * (`"yes"`, `"on"`, `"0123"`) stay quoted, because kubectl reads YAML 1.1.
 */
export function formatInjected(previews: readonly ObjectPreview[]): string {
  return previews
    .map((preview, position) => {
      let text = preview.patch.length === 0 ? preview.input.text.replace(/^(?:[ \t]*\r?\n)+/, '') : patchedText(preview);
      if (!text.endsWith('\n')) text += '\n';
      return position === 0 || startsWithDocumentMarker(text) ? text : '---\n' + text;
    })
    .join('');
}

/**
 * A patched object: the user's document with the patch applied (comments kept), provided that gives
 * exactly the object the plain JSONPatch gives; otherwise the object printed afresh.
 */
function patchedText(preview: ObjectPreview): string {
  const patched = patchYamlDocument(preview.input.document, preview.patch);
  if (patched && patched.errors.length === 0 && JSON.stringify(patched.toJS()) === JSON.stringify(preview.output)) {
    return patched.toString({ lineWidth: 0 });
  }
  return new Document(preview.output, { compat: 'yaml-1.1' }).toString({ lineWidth: 0 });
}

/** Whether `text` opens with its own `---` line (after comments or directives). */
function startsWithDocumentMarker(text: string): boolean {
  return /^(?:[ \t]*(?:#.*)?\r?\n|%.*\r?\n)*---(?:[ \t]|\r?\n|$)/.test(text);
}

/** What `inject` reports on stderr: engine warnings, and objects the webhook would not be called for. */
export function injectNotes(previews: readonly ObjectPreview[]): string[] {
  const notes: string[] = [];
  for (const preview of previews) {
    const where = `${describeLocation(preview.input)}: ${describeObject(preview)}`;
    if (preview.targetKind && !preview.sentToWebhook) {
      notes.push(`note: ${where}: not injected: ${preview.webhooks?.[0]?.reason ?? 'no webhook is called'}`);
    }
    for (const warning of preview.result?.response.warnings ?? []) notes.push(`warning: ${where}: ${warning}`);
  }
  return notes;
}
