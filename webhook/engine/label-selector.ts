import type { LabelSelectorRequirement } from '../config';
import { hasOwnKey } from '../config/own-property';

/** A Kubernetes label selector (`metav1.LabelSelector`); an empty selector matches every set of labels. */
export interface LabelSelector {
  /** Labels that must be present with exactly these values. @default none */
  readonly matchLabels?: Readonly<Record<string, string>>;
  /** Requirements the labels must all meet. @default none */
  readonly matchExpressions?: readonly LabelSelectorRequirement[];
}

/** Kubernetes label selector semantics: every matchLabels pair and every expression must hold. */
export function matchesLabelSelector(selector: LabelSelector, labels: Readonly<Record<string, string>>): boolean {
  for (const [key, value] of Object.entries(selector.matchLabels ?? {})) {
    if (labels[key] !== value) return false;
  }
  for (const expression of selector.matchExpressions ?? []) {
    const has = hasOwnKey(labels, expression.key);
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
