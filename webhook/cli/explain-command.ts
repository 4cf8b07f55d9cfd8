// `explain`: for each object, whether the apiserver calls the webhook (rules, namespaceSelector,
// objectSelector), then every injection's decision and reason, then every warning.

import type { ResolvedInjectorConfig } from '../config';
import type { WebhookMatch } from '../engine/webhook-match';
import { DecisionDetail, decisionDetails, describeOverride } from './decision-details';
import { describeSource, describeObject, injectedNames, outcomeOf } from './outcome';
import type { ObjectPreview } from './preview';

/** What `explain -o json` prints for each object: a stable shape for scripts. */
export interface ObjectExplanation {
  readonly source: string;
  readonly document: number;
  readonly line: number;
  /** The object's index in a List document's items; null when the object is the document. */
  readonly item: number | null;
  readonly apiVersion: string;
  readonly kind: string;
  readonly namespace: string;
  readonly name: string | null;
  /** Whether the injector changes objects of this kind at all. */
  readonly injectableKind: boolean;
  /** The namespace labels the namespaceSelector was matched against. */
  readonly namespaceLabels: Readonly<Record<string, string>>;
  /** Each webhook's verdict; null when no webhook configuration was given (`--config`). */
  readonly webhooks: readonly WebhookMatch[] | null;
  readonly sentToWebhook: boolean;
  /** With revisions: the revision the object was previewed under and what chose it; null without revisions. */
  readonly revision: string | null;
  readonly injections: readonly DecisionDetail[];
  readonly injected: readonly string[];
  readonly warnings: readonly string[];
  readonly patchOperations: number;
  readonly outcome: string;
}

export function explainObjects(previews: readonly ObjectPreview[], config: ResolvedInjectorConfig): ObjectExplanation[] {
  return previews.map((preview) => ({
    source: preview.input.source,
    document: preview.input.index,
    line: preview.input.line,
    item: preview.item ?? null,
    apiVersion: String(preview.object.apiVersion),
    kind: preview.gvk.kind,
    namespace: preview.namespace,
    name: preview.name ?? null,
    injectableKind: preview.targetKind !== undefined,
    namespaceLabels: preview.namespaceLabels,
    webhooks: preview.webhooks ?? null,
    sentToWebhook: preview.sentToWebhook,
    revision: preview.revision ?? null,
    injections: decisionDetails(preview, config),
    injected: injectedNames(preview),
    warnings: preview.result?.response.warnings ?? [],
    patchOperations: preview.patch.length,
    outcome: outcomeOf(preview),
  }));
}

function formatLabels(labels: Readonly<Record<string, string>>): string {
  return Object.entries(labels).map(([key, value]) => `${key}=${value}`).join(', ');
}

/** The human-readable explanation. */
export function formatExplanation(previews: readonly ObjectPreview[], config: ResolvedInjectorConfig): string {
  const explanations = explainObjects(previews, config);
  const blocks = previews.map((preview, position) => {
    const explanation = explanations[position];
    const lines = [`${describeObject(preview)} (${describeSource(preview)})`];
    if (explanation.injectableKind) {
      if (!explanation.webhooks) {
        lines.push('  webhook: not evaluated (no webhook configuration: use --from to check rules and selectors); assumed called');
      } else if (explanation.webhooks.length === 0) {
        lines.push('  webhook: the webhook configuration has no webhooks');
      } else {
        lines.push(`  namespace ${preview.namespace} labels: ${formatLabels(explanation.namespaceLabels)}`);
        for (const webhook of explanation.webhooks) {
          lines.push(`  webhook ${webhook.webhook}: ${webhook.called ? 'called' : 'NOT called'}`);
          lines.push(`    rules:             ${webhook.rules.matches ? 'match' : 'no match'}: ${webhook.rules.reason}`);
          lines.push(`    namespaceSelector: ${webhook.namespaceSelector.matches ? 'match' : 'no match'}: ${webhook.namespaceSelector.reason}`);
          lines.push(`    objectSelector:    ${webhook.objectSelector.matches ? 'match' : 'no match'}: ${webhook.objectSelector.reason}`);
        }
      }
    }
    if (explanation.revision !== null) lines.push(`  revision: ${explanation.revision}`);
    if (explanation.injections.length > 0) {
      lines.push('  injections:');
      const nameWidth = Math.max(...explanation.injections.map((decision) => decision.injection.length));
      const reasonWidth = Math.max(...explanation.injections.map((decision) => decision.reason.length));
      for (const decision of explanation.injections) {
        lines.push(`    ${decision.injection.padEnd(nameWidth)}  ${decision.reason.padEnd(reasonWidth)}  ${decision.detail}`);
        for (const outcome of decision.overrides ?? []) lines.push(`      override: ${describeOverride(outcome)}`);
      }
    }
    if (explanation.warnings.length > 0) {
      lines.push('  warnings:');
      for (const warning of explanation.warnings) lines.push(`    - ${warning}`);
    }
    lines.push(`  result: ${outcomeOf(preview, false)}`);
    return lines.join('\n');
  });
  return blocks.join('\n\n') + (blocks.length > 0 ? '\n' : '');
}
