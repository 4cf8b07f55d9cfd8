// Whether the kube-apiserver would call a mutating webhook for a request at all: the webhook
// configuration's rules, namespaceSelector and objectSelector, evaluated the way the apiserver does.
// Pure: no HTTP, files or clock, so the CLI and programmatic users get the same answer.

import type { LabelSelectorRequirement } from '../config';
import { hasOwnKey } from '../config/own-property';
import { LabelSelector, matchesLabelSelector } from './label-selector';

/** One rule of a webhook (admissionregistration.k8s.io/v1 RuleWithOperations). */
export interface WebhookRule {
  /** API groups the rule covers: `''` is the core group (pods), `apps`, `batch`, or `*` for all.
   * @default none: the rule covers nothing */
  readonly apiGroups?: readonly string[] | null;
  /** API versions the rule covers, such as `v1`, or `*`; with matchPolicy `Equivalent` a request in
   * another version of a covered resource is converted and still matches.
   * @default none */
  readonly apiVersions?: readonly string[] | null;
  /** Lower-case plural resources such as `pods` or `deployments`; `pods/*` adds subresources, `*`
   * is every resource but no subresource.
   * @default none */
  readonly resources?: readonly string[] | null;
  /** Operations covered: `CREATE`, `UPDATE`, `DELETE`, `CONNECT`, or `*` for all.
   * @default none */
  readonly operations?: readonly string[] | null;
  /** Which objects the rule covers by scope: `Cluster` (cluster-scoped), `Namespaced`, or `*` for both. @default '*' */
  readonly scope?: string | null;
}

/** A label selector as it appears in a webhook configuration: either part may be null or missing. */
export interface WebhookLabelSelector {
  /** Labels that must be present with exactly these values; null or missing adds no requirement. */
  readonly matchLabels?: Readonly<Record<string, string>> | null;
  /** Requirements the labels must all meet; null or missing adds no requirement. */
  readonly matchExpressions?: readonly LabelSelectorRequirement[] | null;
}

/** The fields of one webhook in a MutatingWebhookConfiguration that decide whether it is called. */
export interface MutatingWebhook {
  /** The webhook's fully qualified name, such as `sidecar-injector.sidecar-injector.svc`. */
  readonly name: string;
  /** The operations and resources the webhook is called for; a request must match one rule.
   * @default none: the webhook is never called */
  readonly rules?: readonly WebhookRule[] | null;
  /** Selects the namespaces (by their labels) whose objects are sent; not applied to cluster-scoped
   * objects. Null or missing selects every namespace. */
  readonly namespaceSelector?: WebhookLabelSelector | null;
  /** Selects objects by their own labels; null or missing selects every object. */
  readonly objectSelector?: WebhookLabelSelector | null;
  /** `Exact`: only requests in a version a rule lists match; `Equivalent`: a request for a covered
   * resource in another version matches too (the apiserver converts it to a listed version).
   * @default 'Equivalent' (admissionregistration.k8s.io/v1) */
  readonly matchPolicy?: 'Exact' | 'Equivalent' | string | null;
  /** CEL conditions: not evaluated here; reported so nobody mistakes "called" for certain. */
  readonly matchConditions?: readonly unknown[] | null;
  readonly [field: string]: unknown;
}

/** An admissionregistration.k8s.io/v1 MutatingWebhookConfiguration as parsed YAML or JSON; fields
 * other than `metadata.name` and `webhooks` are passed through and not read. */
export interface MutatingWebhookConfiguration {
  /** The object's metadata; only `name` is read, to name the configuration in explanations. */
  readonly metadata?: {
    /** Name of the MutatingWebhookConfiguration object. */
    readonly name?: string;
  } | null;
  /** The webhooks the configuration registers, each matched on its own. @default none */
  readonly webhooks?: readonly MutatingWebhook[] | null;
  readonly [field: string]: unknown;
}

/** What the apiserver knows about a request when it picks the webhooks to call. */
export interface AdmissionAttributes {
  /** API group of the request's resource; `''` for the core group (pods). */
  readonly group: string;
  /** API version of the request, such as `v1`. */
  readonly version: string;
  /** Lower-case plural resource, e.g. `pods`, `deployments`. */
  readonly resource: string;
  /** e.g. `status`; empty for the object itself. @default '' */
  readonly subresource?: string;
  /** The operation: `CREATE`, `UPDATE`, `DELETE` or `CONNECT`. */
  readonly operation: string;
  /** The object's namespace; undefined for a cluster-scoped object. */
  readonly namespace?: string;
  /**
   * The namespace's labels. The apiserver sets `kubernetes.io/metadata.name` on every namespace, so it
   * is added here when missing.
   * @default {}
   */
  readonly namespaceLabels?: Readonly<Record<string, string>>;
  /** The object's own labels (`metadata.labels`, not a pod template's). @default {} */
  readonly objectLabels?: Readonly<Record<string, string>>;
}

/** One check: whether it passed and, in words, why. */
export interface MatchCheck {
  /** Whether the check passed. */
  readonly matches: boolean;
  /** Why, in words: the rule that covers the request, or each selector requirement the labels fail. */
  readonly reason: string;
}

/** Whether the apiserver would call one webhook for a request, with the outcome of each of its checks. */
export interface WebhookMatch {
  /** The `name` of the webhook evaluated. */
  readonly webhook: string;
  /** Whether the apiserver sends this request to the webhook. */
  readonly called: boolean;
  /** Whether one of the webhook's rules covers the request's operation, group, version and resource. */
  readonly rules: MatchCheck;
  /** Whether the namespace's labels (with `kubernetes.io/metadata.name`) meet the namespaceSelector. */
  readonly namespaceSelector: MatchCheck;
  /** Whether the object's own labels meet the objectSelector. */
  readonly objectSelector: MatchCheck;
  /** Why the webhook is (or is not) called, in one sentence: the first check that failed, if any. */
  readonly reason: string;
}

/** The label every namespace carries, set by the apiserver to the namespace's name. */
export const NAMESPACE_NAME_LABEL = 'kubernetes.io/metadata.name';

/** The labels the apiserver matches a namespaceSelector against: `labels` plus the name label. */
export function namespaceLabelsFor(namespace: string, labels: Readonly<Record<string, string>> = {}): Record<string, string> {
  return { ...labels, [NAMESPACE_NAME_LABEL]: namespace };
}

/** Evaluates every webhook of `configuration` for the request; the request is sent if any is called. */
export function matchWebhookConfiguration(configuration: MutatingWebhookConfiguration, attributes: AdmissionAttributes): WebhookMatch[] {
  return (configuration.webhooks ?? []).map((webhook) => matchWebhook(webhook, attributes));
}

/** Evaluates one webhook for the request as the apiserver does: rules, then namespace, then object. */
export function matchWebhook(webhook: MutatingWebhook, attributes: AdmissionAttributes): WebhookMatch {
  const rules = matchRules(webhook, attributes);
  const namespaceSelector = matchNamespaceSelector(webhook.namespaceSelector, attributes);
  const objectSelector = checkSelector(webhook.objectSelector, attributes.objectLabels ?? {}, 'the object');
  const called = rules.matches && namespaceSelector.matches && objectSelector.matches;
  const failed = [rules, namespaceSelector, objectSelector].find((check) => !check.matches);
  let reason = failed ? failed.reason : 'rules, namespaceSelector and objectSelector all match';
  if (called && (webhook.matchConditions ?? []).length > 0) reason += ' (its matchConditions are CEL and were not evaluated)';
  return { webhook: webhook.name, called, rules, namespaceSelector, objectSelector, reason };
}

/** The request a predicate is made for, but for the namespace and the labels: one kind, one operation. */
export type RequestKind = Omit<AdmissionAttributes, 'namespace' | 'namespaceLabels' | 'objectLabels'>;

/**
 * Whether the apiserver calls some webhook of `configuration`, for many namespaced requests of one
 * kind (every pod of a cluster, as `status` and the reconciler judge them): the checks of matchWebhook,
 * without their words, each webhook's rules checked once and its namespaceSelector once per namespace.
 * What it remembers is one entry per namespace labels object it is given (a WeakMap on that object: no
 * more than the caller holds); a namespace whose labels are not known is checked every time.
 */
export function webhookCalledFor(configuration: MutatingWebhookConfiguration, kind: RequestKind): (namespace: string, namespaceLabels: Readonly<Record<string, string>> | undefined, objectLabels: Readonly<Record<string, string>>) => boolean {
  // A namespaced request's rules do not depend on which namespace: any one stands for all.
  const webhooks = (configuration.webhooks ?? []).filter((webhook) => matchRules(webhook, { ...kind, namespace: '' }).matches);
  const objectSelectors = webhooks.map((webhook) => asLabelSelector(webhook.objectSelector));
  const byLabels = new WeakMap<object, { readonly namespace: string; readonly selected: readonly boolean[] }>();
  return (namespace, namespaceLabels, objectLabels) => {
    let known = namespaceLabels ? byLabels.get(namespaceLabels) : undefined;
    if (known?.namespace !== namespace) {
      known = { namespace, selected: webhooks.map((webhook) => matchNamespaceSelector(webhook.namespaceSelector, { ...kind, namespace, namespaceLabels }).matches) };
      if (namespaceLabels) byLabels.set(namespaceLabels, known);
    }
    const selected = known.selected;
    return objectSelectors.some((selector, index) => selected[index] && matchesLabelSelector(selector, objectLabels));
  };
}

function listMatches(list: readonly string[] | null | undefined, value: string): boolean {
  return (list ?? []).some((item) => item === '*' || item === value);
}

/** As the apiserver's rule matcher: `*` is every resource but no subresource, `x/*` is x and its subresources. */
function resourceMatches(resources: readonly string[] | null | undefined, resource: string, subresource: string): boolean {
  return (resources ?? []).some((entry) => {
    const slash = entry.indexOf('/');
    const entryResource = slash < 0 ? entry : entry.slice(0, slash);
    const entrySubresource = slash < 0 ? '' : entry.slice(slash + 1);
    return (entryResource === '*' || entryResource === resource) && (entrySubresource === '*' || entrySubresource === subresource);
  });
}

function matchRules(webhook: MutatingWebhook, attributes: AdmissionAttributes): MatchCheck {
  const subresource = attributes.subresource ?? '';
  const what = `${attributes.operation} ${attributes.resource}${subresource ? '/' + subresource : ''} (${attributes.group ? attributes.group + '/' : ''}${attributes.version})`;
  const scope = attributes.namespace === undefined ? 'Cluster' : 'Namespaced';
  const equivalent = (webhook.matchPolicy ?? 'Equivalent') === 'Equivalent';
  const rules = webhook.rules ?? [];
  for (const [index, rule] of rules.entries()) {
    if (!listMatches(rule.operations, attributes.operation)) continue;
    if (!listMatches(rule.apiGroups, attributes.group)) continue;
    if (!resourceMatches(rule.resources, attributes.resource, subresource)) continue;
    if (rule.scope && rule.scope !== '*' && rule.scope !== scope) continue;
    if (listMatches(rule.apiVersions, attributes.version)) return { matches: true, reason: `rule ${index + 1} covers ${what}` };
    // matchPolicy Equivalent: the apiserver converts the object to a version the rule lists.
    if (equivalent) return { matches: true, reason: `rule ${index + 1} covers ${what}, converted to ${(rule.apiVersions ?? []).join(', ')} (matchPolicy: Equivalent)` };
  }
  return { matches: false, reason: `no rule covers ${what}` };
}

function matchNamespaceSelector(selector: WebhookLabelSelector | null | undefined, attributes: AdmissionAttributes): MatchCheck {
  // Cluster-scoped objects other than namespaces are never filtered by namespaceSelector.
  if (attributes.namespace === undefined) return { matches: true, reason: 'cluster-scoped: namespaceSelector does not apply' };
  const labels = namespaceLabelsFor(attributes.namespace, attributes.namespaceLabels);
  return checkSelector(selector, labels, `namespace "${attributes.namespace}"`);
}

/** Every requirement of `selector` that `labels` fail, in words; undefined when all hold. */
export function selectorMismatch(selector: WebhookLabelSelector | null | undefined, labels: Readonly<Record<string, string>>, subject = 'the object'): string | undefined {
  if (!selector) return undefined;
  const failures: string[] = [];
  // Each requirement on its own, through the one label selector implementation the engine uses.
  for (const [key, value] of Object.entries(selector.matchLabels ?? {})) {
    if (!matchesLabelSelector({ matchLabels: { [key]: value } }, labels)) failures.push(`needs label ${key}=${value} (${subject} ${describeLabel(labels, key)})`);
  }
  for (const expression of selector.matchExpressions ?? []) {
    if (matchesLabelSelector({ matchExpressions: [expression] }, labels)) continue;
    const values = (expression.values ?? []).join(', ');
    const has = `(${subject} ${describeLabel(labels, expression.key)})`;
    switch (expression.operator) {
      case 'In':
        failures.push(`needs label ${expression.key} in (${values}) ${has}`);
        break;
      case 'NotIn':
        failures.push(`excludes ${expression.key} in (${values}) ${has}`);
        break;
      case 'Exists':
        failures.push(`needs label ${expression.key} ${has}`);
        break;
      case 'DoesNotExist':
        failures.push(`excludes objects labelled ${expression.key} ${has}`);
        break;
      default:
        failures.push(`requirement ${expression.key} ${String(expression.operator)} does not hold ${has}`);
    }
  }
  return failures.length > 0 ? failures.join('; ') : undefined;
}

function describeLabel(labels: Readonly<Record<string, string>>, key: string): string {
  return hasOwnKey(labels, key) ? `has ${key}=${labels[key]}` : `has no label ${key}`;
}

/** A webhook's selector (whose parts may be null in YAML) as the engine's LabelSelector; none selects every object. */
function asLabelSelector(selector: WebhookLabelSelector | null | undefined): LabelSelector {
  return { matchLabels: selector?.matchLabels ?? undefined, matchExpressions: selector?.matchExpressions ?? undefined };
}

function checkSelector(selector: WebhookLabelSelector | null | undefined, labels: Readonly<Record<string, string>>, subject: string): MatchCheck {
  if (matchesLabelSelector(asLabelSelector(selector), labels)) return { matches: true, reason: `${subject} matches` };
  return { matches: false, reason: `${subject} is not selected: ${selectorMismatch(selector, labels, subject)}` };
}
