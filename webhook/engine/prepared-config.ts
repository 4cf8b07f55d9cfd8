// What evaluate() works out once per config rather than on every request: the annotation keys, each
// injection's lookups, decisions and hash entry, the patch encoder, the override keys. Made once per
// config object (a reload brings a new one), so a revision's view is prepared once too.

import {
  ResolvedInjection,
  ResolvedInjectorConfig,
  TARGET_KINDS,
  type TargetKind,
  annotationKeys,
  auditMessage,
  compileValuePattern,
  containsPlaceholder,
  injectionHashEntry,
  readinessConditionType,
} from '../config';
import { Json } from './json-object';
import { PatchEncoder, markStable } from './patch-encoding';

import type { DecisionReason, InjectionDecision, PodWarning } from './decisions';

export const RENDERED_FIELDS = [
  'containers', 'initContainers', 'volumes', 'volumeMounts', 'env', 'imagePullSecrets', 'labels', 'annotations', 'merges',
] as const;

/** What evaluate() works out once per config rather than on every request. */
export interface PreparedConfig {
  readonly keys: ReturnType<typeof annotationKeys>;
  /** The kinds some injection targets: other kinds are out of scope for all. */
  readonly targetKinds: ReadonlySet<string>;
  /** The config's injections, in order, with what is worked out once for each. */
  readonly injections: readonly PreparedInjection[];
  /** This config's patches seen before, by their operations. */
  readonly encoder: PatchEncoder;
  /** The readiness gate that injections with `readinessGate` add (stable: a patch cache key). */
  readonly readinessGate: Json & { conditionType: string };
  /** Whether any injection adds it (most configs: none, and the admission skips the check). */
  readonly anyReadinessGate: boolean;
  /** The `prefix/` of every override annotation: a pod annotation under one that no override offers is warned about. */
  readonly overridePrefixes: ReadonlySet<string>;
  /** The annotation keys overrides offer. */
  readonly offeredKeys: ReadonlySet<string>;
  /** Every annotation key the config names (offered, triggers, added, the injector's own): never "not offered". */
  readonly knownKeys: ReadonlySet<string>;
  /**
   * For each workload kind, the injections that offer overrides to the pods it makes without
   * targeting the kind itself (they target `Pod`, and enforce): a bad value in its pod template is
   * warned about at the workload's admission, where the app team typed it. Empty for `Pod`.
   */
  readonly podOverridesPreviewed: Readonly<Record<TargetKind, ReadonlySet<string>>>;
}

/** One injection of a config, with what evaluate() would otherwise work out on every request. */
export interface PreparedInjection {
  readonly injection: ResolvedInjection;
  /** Its place in the config's injections (and in the decisions). */
  readonly index: number;
  /** Whether it targets each kind (its targetKinds, as a lookup). */
  readonly targetsKind: Readonly<Record<TargetKind, boolean>>;
  /** Its rendered fields hold a placeholder. */
  readonly templated: boolean;
  /** It adds containers or merges resources (then the QoS class may change). */
  readonly changesContainers: boolean;
  /** It merges resources into existing containers (then the QoS is tallied again). */
  readonly mergesResources: boolean;
  /** Its trigger's valuePattern, compiled. */
  readonly valuePattern?: { matches(value: string): boolean };
  /** The decisions it can get. */
  readonly decisions: Readonly<Record<DecisionReason, InjectionDecision>>;
  /** `name=hash` of the injection as configured, for the hashes annotation. */
  readonly hashEntry: string;
  /** It offers overrides: its containers are merged with annotation values before they go in. */
  readonly offersOverrides: boolean;
  /** In audit mode: the warning saying what it would add (made once); undefined when it enforces. */
  readonly audit: PodWarning | undefined;
}

const preparedCache = new WeakMap<ResolvedInjectorConfig, PreparedConfig>();

/** The config is never changed in place (a reload brings a new object), so this is made once per config. */
export function preparedOf(config: ResolvedInjectorConfig): PreparedConfig {
  let prepared = preparedCache.get(config);
  if (!prepared) {
    prepared = {
      keys: annotationKeys(config.annotationPrefix),
      targetKinds: new Set(config.injections.flatMap((injection) => injection.targetKinds)),
      injections: config.injections.map((injection, index) => ({
        injection,
        index,
        targetsKind: Object.fromEntries(TARGET_KINDS.map((kind) => [kind, injection.targetKinds.includes(kind)])) as Record<TargetKind, boolean>,
        templated: RENDERED_FIELDS.some((field) => containsPlaceholder(injection[field])),
        changesContainers: addsContainers(injection) || mergesResources(injection),
        mergesResources: mergesResources(injection),
        valuePattern: injection.trigger.type === 'annotation' && injection.trigger.valuePattern !== undefined ? compileValuePattern(injection.trigger.valuePattern) : undefined,
        decisions: decisionsOf(injection),
        hashEntry: injectionHashEntry(injection),
        offersOverrides: (injection.overrides?.length ?? 0) > 0,
        // Always set, so every entry has one shape (the loop over them stays monomorphic).
        audit: injection.mode === 'audit' ? auditWarning(injection) : undefined,
      })),
      encoder: new PatchEncoder(),
      readinessGate: Object.freeze({ conditionType: readinessConditionType(config.annotationPrefix) }),
      anyReadinessGate: config.injections.some((injection) => injection.readinessGate === true),
      ...overrideKeysOf(config),
      podOverridesPreviewed: podOverridesPreviewedOf(config),
    };
    // Its objects are what patches add (or, templated, what renders them): keys of the encoder's cache.
    markStable(config.injections);
    markStable(prepared.readinessGate);
    preparedCache.set(config, prepared);
  }
  return prepared;
}

function overrideKeysOf(config: ResolvedInjectorConfig): Pick<PreparedConfig, 'overridePrefixes' | 'offeredKeys' | 'knownKeys'> {
  const offeredKeys = new Set(config.injections.flatMap((injection) => (injection.overrides ?? []).map((override) => override.annotation)));
  const knownKeys = new Set<string>([...offeredKeys, ...Object.values(annotationKeys(config.annotationPrefix))]);
  for (const injection of config.injections) {
    if (injection.trigger.type === 'annotation') knownKeys.add(injection.trigger.key);
    for (const key of Object.keys(injection.annotations ?? {})) knownKeys.add(key);
  }
  const overridePrefixes = new Set([...offeredKeys].map((key) => key.slice(0, key.indexOf('/') + 1)));
  return { overridePrefixes, offeredKeys, knownKeys };
}

/** The injections whose overrides a workload kind's admission previews for its pods (see PreparedConfig). */
export function podOverridesPreviewedOf(config: ResolvedInjectorConfig): Record<TargetKind, ReadonlySet<string>> {
  const previewed = config.injections.filter((injection) => injection.mode !== 'audit' && (injection.overrides?.length ?? 0) > 0 && injection.targetKinds.includes('Pod'));
  const byKind = {} as Record<TargetKind, ReadonlySet<string>>;
  for (const kind of TARGET_KINDS) {
    byKind[kind] = new Set(kind === 'Pod' ? [] : previewed.filter((injection) => !injection.targetKinds.includes(kind)).map((injection) => injection.name));
  }
  return byKind;
}

/** The warning of an injection in audit mode (config/audit-message.ts: the policy backend says the same). */
function auditWarning(injection: ResolvedInjection): PodWarning {
  return Object.freeze({ injection: injection.name, reason: 'audit', message: auditMessage(injection), shown: true });
}

/** Every DecisionReason (the compiler checks that none is missing). */
const DECISION_REASONS = Object.keys({
  disabled: true,
  'out-of-scope': true,
  'opted-out': true,
  'already-injected': true,
  'trigger-not-met': true,
  'render-failed': true,
  'no-change': true,
  injected: true,
  audit: true,
} satisfies Record<DecisionReason, true>) as DecisionReason[];

/** The decisions an injection can get, made once each: the same answer on every request allocates nothing. */
function decisionsOf(injection: ResolvedInjection): Readonly<Record<DecisionReason, InjectionDecision>> {
  return Object.freeze(Object.fromEntries(DECISION_REASONS.map((reason) => [reason, Object.freeze({ injection: injection.name, reason })]))) as Record<DecisionReason, InjectionDecision>;
}

export function addsContainers(injection: ResolvedInjection): boolean {
  return (injection.containers?.length ?? 0) > 0 || (injection.initContainers?.length ?? 0) > 0;
}

export function mergesResources(injection: ResolvedInjection): boolean {
  return (injection.merges ?? []).some((merge) => merge.fields.resources !== undefined);
}

