// Which injections of a policy share one mutation. The apiserver's cost of a MutatingAdmissionPolicy
// grows with its number of mutations, not with the size of their CEL: for every mutation, even one
// whose patch is empty, it converts the object for CEL, encodes it to JSON, applies the patch and
// decodes it again (k8s.io/apiserver .../policy/mutating/patch/json_patch.go; measured on 1.36.3: 90% of
// the policies' CPU, the CEL itself about 4%). So consecutive injections share one mutation whenever
// every one of them computes, from the object as admitted, the same patch it would compute from the
// object the earlier ones left: the conditions below keep apart what a later one would read of an
// earlier one's changes, except what it reads from the earlier one's part of the mutation instead
// (a label or annotation its trigger reads, the sidecars placed first, a container that ends a
// Guaranteed class: injection-policy.ts). Lists, metadata maps and the status annotation are then made
// once per mutation.

import { type ContainerMerge, type JsonObject, type ResolvedInjection, parseQuantity } from '../../webhook/config';
import { qosClassOf, withLimitsAtRequests } from '../../webhook/engine/qos';

/** Injections in config order, cut into runs that can share one mutation. */
export function mutationGroups(injections: readonly ResolvedInjection[]): ResolvedInjection[][] {
  const groups: ResolvedInjection[][] = [];
  for (const injection of injections) {
    const current = groups[groups.length - 1];
    if (current && current.every((earlier) => independent(earlier, injection))) current.push(injection);
    else groups.push([injection]);
  }
  return groups;
}

/** Whether `later` computes the same patch before and after `earlier` is applied (config validation
 * already keeps container and volume names apart between injections). */
function independent(earlier: ResolvedInjection, later: ResolvedInjection): boolean {
  // Both would add the readiness gate: the later one must see the earlier one's.
  if (earlier.readinessGate === true && later.readinessGate === true) return false;
  for (const map of ['labels', 'annotations'] as const) {
    const added = Object.keys(earlier[map] ?? {});
    if (added.some((key) => key in (later[map] ?? {}))) return false; // the earlier one's value would be kept
    // A label or annotation the later one's trigger reads is read through the earlier one's part.
  }
  for (const field of ['env', 'volumeMounts'] as const) {
    // Both would make the list in a container that has none; a merge may write it too.
    if ((earlier[field]?.length ?? 0) > 0 && (later[field]?.length ?? 0) > 0) return false;
    if ((earlier[field]?.length ?? 0) > 0 && mergesTouch(later, field)) return false;
    if ((later[field]?.length ?? 0) > 0 && mergesTouch(earlier, field)) return false;
  }
  const secrets = new Set((earlier.imagePullSecrets ?? []).map((secret) => secret.name));
  if ((later.imagePullSecrets ?? []).some((secret) => secrets.has(secret.name))) return false;
  if (mergePathsOverlap(earlier.merges ?? [], later.merges ?? [])) return false;
  // Read through the earlier one's part of the mutation instead (injection-policy.ts): the sidecars it
  // inserts first (a later merge's init container index, a later first-placed injection's index), and
  // whether a container it added ends a Guaranteed class (a later preserve-guaranteed). A merge of
  // resources changes the class of the pod's own containers: not read that way.
  if (later.qos === 'preserve-guaranteed' && (earlier.merges ?? []).some((merge) => 'resources' in merge.fields)) return false;
  return true;
}

/**
 * Whether an injection's trigger reads a label or annotation that a later one adds: the webhook then
 * applies the earlier one after the later one, in the same admission, and a policy only when it is
 * reinvoked. (`requested` reads <prefix>/inject once, from the object as admitted, in both.)
 */
export function readsWhatALaterOneAdds(injections: readonly ResolvedInjection[]): boolean {
  return injections.some((earlier, index) =>
    injections.slice(index + 1).some((later) => (['labels', 'annotations'] as const).some((map) => triggerKeys(earlier, map).some((key) => key in (later[map] ?? {})))),
  );
}

/** The label or annotation keys `injection`'s trigger (and its `{{annotation}}`) reads as the webhook re-reads them. */
function triggerKeys(injection: ResolvedInjection, map: 'labels' | 'annotations'): string[] {
  const trigger = injection.trigger;
  if (map === 'annotations') return trigger.type === 'annotation' ? [trigger.key] : [];
  if (trigger.type !== 'labelSelector') return [];
  return [...Object.keys(trigger.matchLabels ?? {}), ...(trigger.matchExpressions ?? []).map((requirement) => requirement.key)];
}

/** The containers `injection` adds to a Guaranteed pod that are not themselves Guaranteed (so the pod
 * no longer is). */
export function nonGuaranteedContainers(injection: ResolvedInjection): string[] {
  return [...(injection.containers ?? []), ...(injection.initContainers ?? [])]
    .filter((container) => qosClassOf([injection.qos === 'preserve-guaranteed' ? withLimitsAtRequests(container as JsonObject) : container]) !== 'Guaranteed')
    .map((container) => container.name);
}

function mergesTouch(injection: ResolvedInjection, field: string): boolean {
  return (injection.merges ?? []).some((merge) => field in merge.fields);
}

/** Whether a field one merge sets is, or holds, or sits in one the other sets. */
function mergePathsOverlap(a: readonly ContainerMerge[], b: readonly ContainerMerge[]): boolean {
  const pathsOf = (merges: readonly ContainerMerge[]) => merges.flatMap((merge) => leafPaths(merge.fields));
  const left = pathsOf(a);
  return pathsOf(b).some((path) => left.some((other) => isPrefix(path, other) || isPrefix(other, path)));
}

function leafPaths(fields: JsonObject, prefix: string[] = []): string[][] {
  return Object.entries(fields).flatMap(([key, value]) =>
    typeof value === 'object' && value !== null && !Array.isArray(value) ? [[...prefix, key], ...leafPaths(value as JsonObject, [...prefix, key])] : [[...prefix, key]],
  );
}

function isPrefix(prefix: string[], path: string[]): boolean {
  return prefix.length <= path.length && prefix.every((key, index) => path[index] === key);
}

/**
 * The containers `injection` adds that end a Guaranteed class decided by pod-level resources: under
 * podResources 'add' the pod's cpu and memory requests and limits grow by each container's request
 * (its limit where none) and limit (its request where none), so they stay equal only where those are.
 * Under 'share' the pod's figures do not change: none.
 */
export function podLevelUnbalancedContainers(injection: ResolvedInjection): string[] {
  if ((injection.podResources ?? 'add') !== 'add') return [];
  const figure = (map: unknown, name: string) => (map && typeof map === 'object' ? parseQuantity((map as Record<string, unknown>)[name]) : undefined);
  return [...(injection.containers ?? []), ...(injection.initContainers ?? [])]
    .filter((container) => {
      const resources = (injection.qos === 'preserve-guaranteed' ? withLimitsAtRequests(container as JsonObject) : (container as JsonObject)).resources as Record<string, unknown> | undefined;
      return ['cpu', 'memory'].some((name) => {
        const request = figure(resources?.requests, name);
        const limit = figure(resources?.limits, name);
        return (request ?? limit) !== (limit ?? request);
      });
    })
    .map((container) => container.name);
}
