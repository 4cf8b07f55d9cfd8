import type { LabelSelectorRequirement } from '../config';

export interface LabelSelector {
  readonly matchLabels?: Readonly<Record<string, string>>;
  readonly matchExpressions?: readonly LabelSelectorRequirement[];
}

/** Kubernetes label selector semantics: every matchLabels pair and every expression must hold. */
export function matchesLabelSelector(selector: LabelSelector, labels: Readonly<Record<string, string>>): boolean {
  for (const [key, value] of Object.entries(selector.matchLabels ?? {})) {
    if (labels[key] !== value) return false;
  }
  for (const expression of selector.matchExpressions ?? []) {
    const has = Object.prototype.hasOwnProperty.call(labels, expression.key);
    const value = labels[expression.key];
    switch (expression.operator) {
      case 'In':
        if (!has || !(expression.values ?? []).includes(value)) return false;
        break;
      case 'NotIn':
        if (has && (expression.values ?? []).includes(value)) return false;
        break;
      case 'Exists':
        if (!has) return false;
        break;
      case 'DoesNotExist':
        if (has) return false;
        break;
    }
  }
  return true;
}
