// Test helper: evaluates synthesized MutatingAdmissionPolicies with a JavaScript CEL implementation
// (@marcbachmann/cel-js, with homogeneous aggregate literals as the kube-apiserver compiles them), and
// applies their JSONPatch operations the way the apiserver does: match conditions, then each mutation
// in order on the object the previous one left; reinvoked once, as the apiserver reinvokes a policy
// with reinvocationPolicy IfNeeded after any mutation ran. It proves the CEL parses, type-checks and
// computes the same object as the webhook; the e2e suite proves it on a real apiserver. The mutation's
// JSONPatch{...} constructor (the same constant text in every policy, checked as text) is the only part
// cel-js cannot construct; the simulator evaluates the rest of the expression.
import { applyPatch, Operation } from 'fast-json-patch';
import { Environment } from '@marcbachmann/cel-js';
import { parseQuantity } from '../../webhook/config';

import { FOLDED_TAIL, SHARED_SCOPE, foldedConditions, isFolded, mutationGuard, patchData } from '../../charts/admission-policy/mutation-text';

/**
 * The CEL of each of a policy's mutations without its JSONPatch{...} constructor: lists of {path, value}
 * maps. A folded mutation keeps the policy's conditions around its adds; when it has none, its failing
 * test leaves the object as it was, as an empty patch does.
 */
export function patchDataExpressions(spec: any): string[] {
  return (spec.mutations as any[]).map((mutation, index) => {
    const expression: string | undefined = mutation.patchType === 'JSONPatch' ? mutation.jsonPatch?.expression : undefined;
    if (typeof expression !== 'string') throw new Error(`unexpected mutations[${index}] ${JSON.stringify(mutation)}`);
    return isFolded(expression) ? expression.slice(1, -FOLDED_TAIL.length) : patchData(expression);
  });
}

export interface SimulatedPolicy {
  readonly metadata: { readonly name: string };
  readonly spec: any;
  /** The values its mutations bind before the injections' parts (ShapePolicy.bindings). */
  readonly bindings?: readonly { readonly name: string; readonly expression: string }[];
}

export interface SimulatedRequest {
  readonly kind: { group: string; version: string; kind: string };
  readonly resource: { group: string; version: string; resource: string };
  readonly operation: string;
  /** `status` for a pod's status write: the rules must name `pods/status`. */
  readonly subResource?: string;
  readonly namespace?: string;
  /** The Namespace object of `namespace`, as the apiserver hands it to CEL as `namespaceObject`. */
  readonly namespaceObject?: any;
  readonly object: any;
  /** The object as stored, for an UPDATE or DELETE (null otherwise, as the apiserver gives it). */
  readonly oldObject?: any;
  /** The object's name (empty for a create with generateName). */
  readonly name?: string;
  /** Whose request it is (`request.userInfo`). */
  readonly userInfo?: { readonly username: string; readonly groups?: readonly string[] };
  /** A server-side dry run (`request.dryRun`). */
  readonly dryRun?: boolean;
}

let environment: Environment | undefined;

/**
 * A Kubernetes quantity as the CEL quantity library holds it (k8s.io/apiserver/pkg/cel/library/quantity.go
 * wraps resource.Quantity): exact, in nano-units, which is Quantity's own precision (finer values are
 * rounded up), so comparisons and sums are exact as in Kubernetes.
 */
export class CelQuantity {
  constructor(readonly nanos: bigint) {}
}

const NANOS = 1_000_000_000n;
const INT64_MAX = (1n << 63n) - 1n;
const INT64_MIN = -(1n << 63n);

/** Kubernetes parses only strings here (`quantity(1)` does not type-check): a number is no quantity. */
function quantityOf(text: string): CelQuantity | undefined {
  if (typeof text !== 'string') return undefined;
  const nanos = parseQuantity(text);
  return nanos === undefined ? undefined : new CelQuantity(nanos);
}

function quantityOrThrow(text: string): CelQuantity {
  const quantity = quantityOf(text);
  // quantity.go: resource.ParseQuantity's error becomes the CEL error.
  if (!quantity) throw new Error(`quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$' (got ${JSON.stringify(text)})`);
  return quantity;
}

function int64(value: bigint, what: string): bigint {
  if (value > INT64_MAX || value < INT64_MIN) throw new Error(`${what}: integer overflow`);
  return value;
}

function sign(value: bigint): bigint {
  return value > 0n ? 1n : value < 0n ? -1n : 0n;
}

/** A CEL environment with the functions the Kubernetes CEL libraries add that policies use. */
export function kubernetesCelEnvironment(): Environment {
  if (environment) return environment;
  environment = new Environment({ unlistedVariablesAreDyn: true })
    .registerFunction({
      // Kubernetes' lists library: the index of the first equal element, or -1.
      name: 'indexOf',
      receiverType: 'list',
      returnType: 'int',
      params: [{ name: 'item', type: 'dyn' }],
      handler: (list: unknown[], item: unknown) => BigInt(list.findIndex((candidate) => JSON.stringify(candidate) === JSON.stringify(item))),
    })
    // Kubernetes' quantity library, the functions of quantity.go with its semantics.
    .registerType('Quantity', CelQuantity)
    .registerFunction('quantity(string): Quantity', quantityOrThrow)
    .registerFunction('isQuantity(string): bool', (text: string) => quantityOf(text) !== undefined)
    // A global function in quantity.go (cel.Overload, not MemberOverload), whatever its doc comment
    // says: `q.sign()` does not compile on the apiserver, so it does not here.
    .registerFunction('sign(Quantity): int', (q: CelQuantity) => sign(q.nanos))
    .registerFunction('Quantity.isInteger(): bool', (q: CelQuantity) => q.nanos % NANOS === 0n && q.nanos / NANOS <= INT64_MAX && q.nanos / NANOS >= INT64_MIN)
    .registerFunction('Quantity.asInteger(): int', (q: CelQuantity) => {
      if (q.nanos % NANOS !== 0n) throw new Error('cannot convert value to integer');
      return int64(q.nanos / NANOS, 'asInteger');
    })
    .registerFunction('Quantity.asApproximateFloat(): double', (q: CelQuantity) => Number(q.nanos) / 1e9)
    .registerFunction('Quantity.compareTo(Quantity): int', (a: CelQuantity, b: CelQuantity) => sign(a.nanos - b.nanos))
    .registerFunction('Quantity.isGreaterThan(Quantity): bool', (a: CelQuantity, b: CelQuantity) => a.nanos > b.nanos)
    .registerFunction('Quantity.isLessThan(Quantity): bool', (a: CelQuantity, b: CelQuantity) => a.nanos < b.nanos)
    .registerFunction('Quantity.add(Quantity): Quantity', (a: CelQuantity, b: CelQuantity) => new CelQuantity(a.nanos + b.nanos))
    .registerFunction('Quantity.add(int): Quantity', (a: CelQuantity, b: bigint) => new CelQuantity(a.nanos + b * NANOS))
    .registerFunction('Quantity.sub(Quantity): Quantity', (a: CelQuantity, b: CelQuantity) => new CelQuantity(a.nanos - b.nanos))
    .registerFunction('Quantity.sub(int): Quantity', (a: CelQuantity, b: bigint) => new CelQuantity(a.nanos - b * NANOS));
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

// A rule's resources name the request's: exactly, or by a wildcard, as the apiserver reads them: `*`
// every resource, `<resource>/*` its subresources, and `*` slash `*` every resource and every subresource.
function resourceMatches(resources: readonly string[], request: SimulatedRequest): boolean {
  if (resources.includes('*/*')) return true;
  if (request.subResource) return resources.includes(`${request.resource.resource}/${request.subResource}`) || resources.includes(`${request.resource.resource}/*`) || resources.includes(`*/${request.subResource}`);
  return resources.includes(request.resource.resource) || resources.includes('*');
}

function ruleMatches(spec: any, request: SimulatedRequest): boolean {
  return (spec.matchConstraints.resourceRules as any[]).some(
    (rule) =>
      (rule.apiGroups.includes(request.resource.group) || rule.apiGroups.includes('*')) &&
      resourceMatches(rule.resources, request) &&
      (rule.operations.includes(request.operation) || rule.operations.includes('*')),
  );
}

export interface MutationEvaluation {
  /** The first condition of the mutation's guard (a folded mutation's policy conditions, then, for a
   * mutation of one injection, its guard; read from their `// name` comment lines) that was false. */
  readonly skippedBy?: string;
  /** What the mutation patched, applied to the object the previous mutation left. */
  readonly patch: Operation[];
}

export interface PolicyEvaluation {
  readonly matched: boolean;
  /** The first of the policy's match conditions that was false. */
  readonly skippedBy?: string;
  /** Each mutation, in order, when the policy's match conditions held. */
  readonly mutations: MutationEvaluation[];
  /** The object after every mutation. */
  readonly object: any;
}

function contextOf(request: SimulatedRequest, object: any): Record<string, unknown> {
  return {
    // The request's namespace as the apiserver gives it to admission CEL (null for cluster-scoped objects).
    namespaceObject: toCel(request.namespaceObject ?? null),
    object: toCel(object),
    oldObject: toCel(request.oldObject ?? null),
    request: toCel({
      kind: request.kind,
      resource: request.resource,
      // As the apiserver hands it over: omitted when empty (no such key in CEL).
      ...(request.subResource ? { subResource: request.subResource } : {}),
      operation: request.operation,
      namespace: request.namespace ?? '',
      ...(request.name ? { name: request.name } : {}),
      dryRun: request.dryRun ?? false,
      userInfo: request.userInfo ?? { username: '' },
    }),
  };
}

/**
 * The policy's `variables`, each evaluated when an expression first reads it, as the apiserver does
 * (lazily, once per request): a variable no rule of this write reads is never evaluated.
 */
function withVariables(env: Environment, variables: readonly { name: string; expression: string }[] | undefined, context: Record<string, unknown>): Record<string, unknown> {
  const values: Record<string, unknown> = {};
  const scope = { ...context, variables: values };
  for (const { name, expression } of variables ?? []) {
    let evaluated: { value: unknown } | undefined;
    Object.defineProperty(values, name, {
      enumerable: true,
      get: () => (evaluated ??= { value: env.evaluate(expression, scope) }).value,
    });
  }
  return scope;
}

/**
 * The CEL context a shared mutation's injection's guard is evaluated in: the request, the object and
 * the values the mutation binds before the injections' parts.
 */
export function guardContext(policy: SimulatedPolicy, request: SimulatedRequest, object: any): Record<string, unknown> {
  const env = kubernetesCelEnvironment();
  const context = contextOf(request, object);
  for (const { name, expression } of policy.bindings ?? []) {
    context[name] = env.evaluate(expression.replace(/\bvariables\.([A-Za-z_][A-Za-z0-9_]*)/g, '$1'), context);
  }
  return context;
}

/** A shared mutation's guard condition evaluated in `guardContext`, its bound values read by name. */
export function evaluateGuardCondition(expression: string, context: Record<string, unknown>): unknown {
  return kubernetesCelEnvironment().evaluate(expression.replace(new RegExp(`\\b${SHARED_SCOPE}[0-9]+\\.`, 'g'), ''), context);
}

/**
 * One policy against one object: its match conditions, then its mutations in order, each evaluated on
 * the object the previous one left (as the apiserver does). A mutation whose guard fails must patch nothing.
 */
export function evaluatePolicy(policy: SimulatedPolicy, request: SimulatedRequest, admitted: any): PolicyEvaluation {
  const env = kubernetesCelEnvironment();
  const spec = policy.spec;
  if (!ruleMatches(spec, request)) return { matched: false, mutations: [], object: admitted };
  for (const condition of spec.matchConditions ?? []) {
    if (env.evaluate(condition.expression, contextOf(request, admitted)) !== true) return { matched: true, skippedBy: condition.name, mutations: [], object: admitted };
  }
  let object = admitted;
  const mutations: MutationEvaluation[] = [];
  for (const [index, data] of patchDataExpressions(spec).entries()) {
    const context = contextOf(request, object);
    const expression: string = spec.mutations[index].jsonPatch.expression;
    const guard = [...(foldedConditions(expression) ?? []), ...mutationGuard(expression)];
    const skippedBy = guard.find((condition) => env.evaluate(condition.expression, context) !== true)?.name;
    const patch = (fromCel(env.evaluate(data, context)) as { path: string; value: unknown }[]).map((p) => ({ op: 'add' as const, path: p.path, value: p.value }));
    if (skippedBy !== undefined && patch.length > 0) throw new Error(`${policy.metadata.name} mutations[${index}]: its guard condition ${skippedBy} is false, yet it patched ${JSON.stringify(patch)}`);
    if (patch.length > 0) object = applyPatch(structuredClone(object), patch, true, false).newDocument;
    mutations.push({ skippedBy, patch });
  }
  return { matched: true, mutations, object };
}

/**
 * The policies that match the request, as the apiserver admits with them: each once, then, when any
 * mutation ran (even one that changed nothing), once more those with reinvocationPolicy IfNeeded whose
 * mutations ran (policy/mutating/dispatcher.go). The apiserver runs separate policies in no fixed
 * order, so the order of injections must come from one policy's mutations: more than one matching
 * policy is an error here.
 */
export function admitWithPolicies(policies: readonly SimulatedPolicy[], request: SimulatedRequest): any {
  const matching = policies.filter((policy) => ruleMatches(policy.spec, request));
  if (matching.length > 1) throw new Error(`${request.kind.kind}: ${matching.length} policies match (${matching.map((p) => p.metadata.name).join(', ')}); their order would be undefined`);
  let object = structuredClone(request.object);
  const ran: SimulatedPolicy[] = [];
  for (const policy of matching) {
    const evaluation = evaluatePolicy(policy, request, object);
    if (evaluation.mutations.length > 0) ran.push(policy);
    object = evaluation.object;
  }
  for (const policy of ran.filter((candidate) => candidate.spec.reinvocationPolicy === 'IfNeeded')) object = evaluatePolicy(policy, request, object).object;
  return object;
}

/**
 * A ValidatingAdmissionPolicy against the object as the mutating admission left it: its rules and match
 * conditions, then each validation; the messages of the validations that failed (what the apiserver
 * returns as warnings under validationActions Warn), none when it does not match.
 */
export function failedValidations(policy: SimulatedPolicy, request: SimulatedRequest, object: any): string[] {
  const env = kubernetesCelEnvironment();
  if (!ruleMatches(policy.spec, request)) return [];
  const context = contextOf(request, object);
  for (const condition of policy.spec.matchConditions ?? []) {
    if (env.evaluate(condition.expression, context) !== true) return [];
  }
  const scope = withVariables(env, policy.spec.variables, context);
  return (policy.spec.validations as any[])
    .filter((validation) => env.evaluate(validation.expression, scope) !== true)
    .map((validation) => (validation.messageExpression !== undefined ? String(env.evaluate(validation.messageExpression, scope)) : String(validation.message)));
}
