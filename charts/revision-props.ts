// Revisions in the construct: the `revisions` prop as Kubernetes JSON and checked against the schema,
// and what the webhook configuration (or the policies) need to route each chooser to its revision.
import { ConfigIssue, Injection, ResolvedInjectorConfig, TargetKind, defaultRevision, revisionChoosers, revisionConfigs, revisionLabel, servedChoosers } from '../webhook/config';
import { policyBackendIssues } from './admission-policy/injector-backend';
import type { InjectorBackend } from './admission-policy/admission-policy-types';
import { RevisionProps, injectionSchemaIssues, resolveInjectionProps } from './injection-props';

/** The `revisions` prop with each injection as Kubernetes JSON; anything malformed is passed on for the validator to name. */
export function resolveRevisionProps(revisions: readonly RevisionProps[] | undefined): { name: string; injections: Injection[] }[] | undefined {
  if (revisions === undefined) return undefined;
  if (!Array.isArray(revisions)) return revisions as never;
  return revisions.map((revision) =>
    revision !== null && typeof revision === 'object' && Array.isArray(revision.injections) ? { ...revision, injections: revision.injections.map(resolveInjectionProps) } : (revision as never),
  );
}

/** Schema violations of every revision's injected objects, at `revisions[N].injections[M]...`, skipping paths already reported. */
export function revisionSchemaIssues(revisions: readonly { readonly injections: readonly Injection[] }[], reported: ReadonlySet<string>): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  if (!Array.isArray(revisions)) return issues;
  revisions.forEach((revision, revisionIndex) => {
    if (!Array.isArray(revision?.injections)) return;
    revision.injections.forEach((injection: Injection, index: number) => {
      for (const issue of injectionSchemaIssues(injection, index, `revisions[${revisionIndex}].injections`)) if (!reported.has(issue.path)) issues.push(issue);
    });
  });
  return issues;
}

/** With a policy backend, each revision's injections CEL cannot express, at `revisions[N].injections[M]`. */
export function revisionedPolicyIssues(backend: InjectorBackend, config: ResolvedInjectorConfig): ConfigIssue[] {
  return revisionConfigs(config).flatMap((view, index) =>
    policyBackendIssues(backend, view.injections, 0).map((issue) => ({ ...issue, path: `revisions[${index}].${issue.path}` })),
  );
}

/** One revision's place in the routing: the label values that choose it, the kinds it injects, whether it is the default's. */
export interface RoutedRevision {
  readonly name: string;
  /** Its own name, then the names of the tags pointing at it. */
  readonly choosers: readonly string[];
  readonly targetKinds: readonly TargetKind[];
  /** Whether the default tag points at it: enabled namespaces without the label get it. */
  readonly isDefault: boolean;
}

/** How the apiserver sends each object to its revision: one entry (or binding) per revision and chooser. */
export interface RevisionRouting {
  /** `<prefix>/rev`. */
  readonly label: string;
  readonly revisions: readonly RoutedRevision[];
  /** Every label value served: revision and tag names. */
  readonly served: readonly string[];
  /** Every kind some revision injects: what the entries for unserved labels match. */
  readonly targetKinds: readonly TargetKind[];
}

/** The routing of `config`'s revisions; undefined when it has none (one entry, `/mutate`, as before). */
export function revisionRouting(config: ResolvedInjectorConfig): RevisionRouting | undefined {
  if (!config.revisions) return undefined;
  const defaultName = defaultRevision(config);
  const revisions = revisionConfigs(config).map((view) => ({
    name: view.revision!,
    choosers: revisionChoosers(config, view.revision!),
    targetKinds: [...new Set(view.injections.flatMap((injection) => injection.targetKinds))],
    isDefault: view.revision === defaultName,
  }));
  return {
    label: revisionLabel(config.annotationPrefix),
    revisions,
    served: servedChoosers(config),
    targetKinds: [...new Set(revisions.flatMap((revision) => revision.targetKinds))],
  };
}

/** A label selector as the webhook entries and policy bindings write it. */
export interface RoutingSelector {
  /** Labels that must all be present with these values. @default none */
  readonly matchLabels?: Readonly<Record<string, string>>;
  /** Requirements that must all hold. @default none */
  readonly matchExpressions?: readonly RoutingRequirement[];
}

/** One requirement of a RoutingSelector, as Kubernetes writes it. */
export interface RoutingRequirement {
  /** The label key. */
  readonly key: string;
  /** `In`, `NotIn`, `Exists` or `DoesNotExist`. */
  readonly operator: string;
  /** The values for `In` and `NotIn`. @default none */
  readonly values?: readonly string[];
}

/** Where one webhook entry (or policy binding) sends objects: who chose, and its selectors. */
export interface RoutedSelectors {
  /** `workload`: the pod template's label; `namespace`: the namespace's; `default`: neither, in an enabled namespace. */
  readonly chooser: 'workload' | 'namespace' | 'default';
  /** The namespaces the entry (or binding) applies in. */
  readonly namespaceSelector: RoutingSelector;
  /** The objects the entry (or binding) applies to. */
  readonly objectSelector: RoutingSelector;
}

/**
 * The selectors that send each object to exactly one revision, or to the unserved answer: a pod template's
 * label chooses first (in any namespace but the excluded ones), then its namespace's, then the default tag
 * in the enabled namespaces. `enabled` is the injector's namespace selector with the exclusions;
 * `objects` its object selector with the exclusion label; `excluded` the exclusions alone. The default's
 * entry is one of its own (`default`), whatever revision it sends to, so moving the default tag changes
 * where it points and the tag's place in the choosers' lists, nothing else.
 */
export function routingSelectors(
  routing: RevisionRouting,
  enabled: RoutingSelector,
  objects: RoutingSelector,
  excluded: RoutingRequirement,
): { default?: { readonly revision: string; readonly selectors: RoutedSelectors }; revisions: Map<string, RoutedSelectors[]>; unserved: RoutedSelectors[] } {
  const { label } = routing;
  const withObjects = (...requirements: RoutingRequirement[]) => ({ matchLabels: objects.matchLabels, matchExpressions: [...(objects.matchExpressions ?? []), ...requirements] });
  const unlabelled = { key: label, operator: 'DoesNotExist' };
  const revisions = new Map<string, RoutedSelectors[]>();
  for (const revision of routing.revisions) {
    const chosenBy = { key: label, operator: 'In', values: [...revision.choosers] };
    revisions.set(revision.name, [
      { chooser: 'workload', namespaceSelector: { matchExpressions: [excluded] }, objectSelector: withObjects(chosenBy) },
      { chooser: 'namespace', namespaceSelector: { matchExpressions: [chosenBy, excluded] }, objectSelector: withObjects(unlabelled) },
    ]);
  }
  const defaultRevision = routing.revisions.find((revision) => revision.isDefault);
  const defaultRoute = defaultRevision && {
    revision: defaultRevision.name,
    selectors: {
      chooser: 'default' as const,
      namespaceSelector: { matchLabels: enabled.matchLabels, matchExpressions: [...(enabled.matchExpressions ?? []), unlabelled] },
      objectSelector: withObjects(unlabelled),
    },
  };
  const unserved = { key: label, operator: 'NotIn', values: [...routing.served] };
  const labelled = { key: label, operator: 'Exists' };
  return {
    ...(defaultRoute ? { default: defaultRoute } : {}),
    revisions,
    unserved: [
      { chooser: 'workload', namespaceSelector: { matchExpressions: [excluded] }, objectSelector: withObjects(labelled, unserved) },
      { chooser: 'namespace', namespaceSelector: { matchExpressions: [labelled, unserved, excluded] }, objectSelector: withObjects(unlabelled) },
    ],
  };
}
