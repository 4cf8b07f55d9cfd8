// The pod's QoS class in CEL, for `qos: 'preserve-guaranteed'`: whether the pod (template) is
// Guaranteed, as webhook/engine/qos.ts computes it, with the Kubernetes quantity library
// (k8s.io/apiserver/pkg/cel/library/quantity.go: isQuantity, quantity, isGreaterThan, compareTo;
// not `sign`, which that library declares as a global function although its doc shows `q.sign()`).
//
// Kubernetes (ComputePodQOS) sums requests and limits over the containers and init containers and
// calls a pod Guaranteed when every container has a cpu and a memory limit and the sums of requests
// (a missing request defaulted to its limit) equal the sums of limits. CEL has no fold to sum a list,
// so the policy checks each container instead: its requests equal its limits. That is the same
// answer for every pod the apiserver stores, because validation (after admission) refuses a request
// above its limit, and sums of requests each at most its limit are equal only when each one is.

import { celString } from './cel-text';

/** The compute resources that decide the class. */
const QOS_RESOURCES = ['cpu', 'memory'] as const;

/**
 * CEL: the `resources` object `r` (a container's, or the pod's own) is guaranteed: a cpu and memory
 * limit above zero, each request either left out (it defaults to the limit) or equal to it. A
 * quantity that does not parse makes no class, as in the engine (the apiserver refuses it anyway).
 */
function guaranteedResources(r: string): string {
  const terms = QOS_RESOURCES.map((name) => {
    const key = celString(name);
    const limit = `string(${r}.limits[${key}])`;
    const request = `string(${r}.requests[${key}])`;
    return (
      `${key} in ${r}.limits && isQuantity(${limit}) && quantity(${limit}).isGreaterThan(quantity("0")) && ` +
      `(!has(${r}.requests) || !(${key} in ${r}.requests) || (isQuantity(${request}) && quantity(${request}).compareTo(quantity(${limit})) == 0))`
    );
  });
  return `(has(${r}.limits) && ${terms.map((term) => `(${term})`).join(' && ')})`;
}

/**
 * CEL: the pod (template) at `template` is Guaranteed. Pod-level `resources`, when set, decide alone;
 * otherwise every container and init container (native sidecars included) must be guaranteed.
 */
export function podGuaranteedExpression(template: string): string {
  const spec = `${template}.spec`;
  const podLevel = podLevelResourcesExpression(template);
  const containers = `(${spec}.containers + (has(${spec}.initContainers) ? ${spec}.initContainers : []))`;
  return `(${podLevel}) ? ${guaranteedResources(`${spec}.resources`)} : ${containers}.all(c, has(c.resources) && ${guaranteedResources('c.resources')})`;
}

/** CEL: the pod (template) at `template` has pod-level resources, which alone decide its class. */
export function podLevelResourcesExpression(template: string): string {
  const spec = `${template}.spec`;
  return `has(${spec}.resources) && (has(${spec}.resources.requests) || has(${spec}.resources.limits))`;
}
