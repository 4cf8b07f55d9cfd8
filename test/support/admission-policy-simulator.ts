// Test helper: evaluates synthesized MutatingAdmissionPolicies with a JavaScript CEL implementation
// (@marcbachmann/cel-js, with homogeneous aggregate literals as the kube-apiserver compiles them), and
// applies their JSONPatch operations the way the apiserver does: match conditions, then variables in
// order, then the patch; policies reinvoked while any of them changed the object. It proves the CEL
// parses, type-checks and computes the same object as the webhook; the e2e suite proves it on a real
// apiserver. The mutation's JSONPatch{...} constructor (the same constant text in every policy, checked
// as text) is the only part cel-js cannot construct; the simulator evaluates the rest of the expression.
import { applyPatch, Operation } from 'fast-json-patch';
import { Environment } from '@marcbachmann/cel-js';

import { TO_JSON_PATCH } from '../../charts/admission-policy/injection-policy';

/** The CEL of a policy's mutation without its JSONPatch{...} constructor: the list of {path, value} maps. */
export function patchDataExpression(spec: any): string {
  const expression: string | undefined = spec.mutations.length === 1 ? spec.mutations[0].jsonPatch?.expression : undefined;
  if (!expression?.endsWith(TO_JSON_PATCH)) throw new Error(`unexpected mutations ${JSON.stringify(spec.mutations)}`);
  return expression.slice(0, -TO_JSON_PATCH.length);
}

export interface SimulatedPolicy {
  readonly metadata: { readonly name: string };
  readonly spec: any;
}

export interface SimulatedRequest {
  readonly kind: { group: string; version: string; kind: string };
  readonly resource: { group: string; version: string; resource: string };
  readonly operation: string;
  readonly namespace?: string;
  readonly object: any;
}

let environment: Environment | undefined;

/** A CEL environment with the functions the Kubernetes CEL libraries add that policies use. */
export function kubernetesCelEnvironment(): Environment {
  if (environment) return environment;
  environment = new Environment({ unlistedVariablesAreDyn: true }).registerFunction({
    // Kubernetes' lists library: the index of the first equal element, or -1.
    name: 'indexOf',
    receiverType: 'list',
    returnType: 'int',
    params: [{ name: 'item', type: 'dyn' }],
    handler: (list: unknown[], item: unknown) => BigInt(list.findIndex((candidate) => JSON.stringify(candidate) === JSON.stringify(item))),
  });
  return environment;
}

/** cel-js returns ints as BigInt; JSON has numbers. */
function fromCel(value: unknown): unknown {
  if (typeof value === 'bigint') return Number(value);
  if (Array.isArray(value)) return value.map(fromCel);
  if (value instanceof Map) return Object.fromEntries([...value.entries()].map(([k, v]) => [k, fromCel(v)]));
  if (value !== null && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, fromCel(v)]));
  return value;
}

/** JSON numbers as the BigInt ints cel-js compares with CEL int literals. */
function toCel(value: unknown): unknown {
  if (typeof value === 'number' && Number.isInteger(value)) return BigInt(value);
  if (Array.isArray(value)) return value.map(toCel);
  if (value !== null && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, toCel(v)]));
  return value;
}

function ruleMatches(spec: any, request: SimulatedRequest): boolean {
  return (spec.matchConstraints.resourceRules as any[]).some(
    (rule) => rule.apiGroups.includes(request.resource.group) && rule.resources.includes(request.resource.resource) && rule.operations.includes(request.operation),
  );
}

export interface PolicyEvaluation {
  readonly matched: boolean;
  /** The first match condition that was false. */
  readonly skippedBy?: string;
  readonly patch: Operation[];
}

/** One policy against one object: its match conditions, variables and patch. */
export function evaluatePolicy(policy: SimulatedPolicy, request: SimulatedRequest, object: any): PolicyEvaluation {
  const env = kubernetesCelEnvironment();
  const spec = policy.spec;
  if (!ruleMatches(spec, request)) return { matched: false, patch: [] };
  const context: Record<string, unknown> = {
    object: toCel(object),
    request: toCel({ kind: request.kind, resource: request.resource, operation: request.operation, namespace: request.namespace ?? '' }),
  };
  for (const condition of spec.matchConditions ?? []) {
    if (env.evaluate(condition.expression, context) !== true) return { matched: true, skippedBy: condition.name, patch: [] };
  }
  const data = env.evaluate(patchDataExpression(spec), context);
  const patch = (fromCel(data) as { path: string; value: unknown }[]).map((p) => ({ op: 'add' as const, path: p.path, value: p.value }));
  return { matched: true, patch };
}

/** Every policy in the order of their names (as the apiserver), reinvoked (at most twice more) while any changed the object. */
export function admitWithPolicies(unordered: readonly SimulatedPolicy[], request: SimulatedRequest): any {
  const policies = [...unordered].sort((a, b) => (a.metadata.name < b.metadata.name ? -1 : a.metadata.name > b.metadata.name ? 1 : 0));
  let object = structuredClone(request.object);
  for (let round = 0; round < 3; round++) {
    let changed = false;
    for (const policy of policies) {
      const { patch } = evaluatePolicy(policy, request, object);
      if (patch.length === 0) continue;
      const next = applyPatch(structuredClone(object), patch, true, false).newDocument;
      if (JSON.stringify(next) !== JSON.stringify(object)) changed = true;
      object = next;
    }
    if (!changed) break;
  }
  return object;
}
