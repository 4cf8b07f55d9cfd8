// One sentence per object saying what happens to it, shared by every command's output.

import { describeLocation } from './manifest-input';
import { TARGET_KIND_LIST, type ObjectPreview } from './preview';

/** `app.yaml, document 2, line 14` (with `, items[3]` for an item of a List): where the object is. */
export function describeSource(preview: ObjectPreview): string {
  return `${describeLocation(preview.input)}${preview.item !== undefined ? `, items[${preview.item}]` : ''}`;
}

/** `Pod shop/sleep`, `ConfigMap app-config`: how output names an object. */
export function describeObject(preview: ObjectPreview): string {
  const metadata = (preview.object.metadata ?? {}) as Record<string, unknown>;
  // Only the injector's kinds are known to be namespaced; others show the namespace they declare.
  const namespace = preview.targetKind ? preview.namespace : typeof metadata.namespace === 'string' ? metadata.namespace : undefined;
  return `${preview.gvk.kind} ${namespace ? `${namespace}/` : ''}${preview.name ?? '(no name)'}`;
}

/** The names of the injections the engine applied to the object. */
export function injectedNames(preview: ObjectPreview): string[] {
  return (preview.result?.decisions ?? []).filter((decision) => decision.reason === 'injected').map((decision) => decision.injection);
}

/** What happens to the object, in one sentence; `withReason: false` when the webhook checks are shown next to it. */
export function outcomeOf(preview: ObjectPreview, withReason = true): string {
  if (!preview.targetKind) return `passed through: not a kind the injector changes (${TARGET_KIND_LIST})`;
  if (!preview.sentToWebhook) {
    const first = preview.webhooks?.[0];
    return `not sent to the webhook${first && withReason ? `: ${first.reason}` : '; passed through unchanged'}`;
  }
  const injected = injectedNames(preview);
  if (preview.patch.length === 0) return 'sent to the webhook; nothing to change';
  return `${injected.length > 0 ? `injects ${injected.join(', ')}` : 'changed'} (${preview.patch.length} patch operation${preview.patch.length === 1 ? '' : 's'})`;
}
