// Per-workload overrides, applied: the values app teams set by annotation (on the pod or pod template,
// and on the namespace as a default) merged into an injection's containers field by field, before the
// containers go into the pod. A value that does not parse, is out of bounds or would put a request
// above its limit is ignored and said so; the configured value then applies. Pure, like the engine.

import {
  type ContainerOverride,
  type ContainerSpec,
  type OverrideRejection,
  type ResolvedInjection,
  MAX_OVERRIDE_VALUE_LENGTH,
  type OverrideValueCheck,
  checkOverrideValue,
  configuredOverrideValue,
  configuredResource,
  overrideFieldName,
} from '../config';
import type { RenderedInjection } from './pod-patch-builder';
import { TwoLevelCache, stringBytes } from './bounded-cache';
import { cachedQuantity } from './qos';

/** Where an overridden field's value came from. */
export type OverrideSource = 'pod' | 'namespace' | 'config';

/** A value found in an annotation and not used, and why. */
export interface IgnoredOverride {
  /** Whose annotation: the pod's (or pod template's) or the namespace's. */
  readonly from: 'pod' | 'namespace';
  /** The annotation key (cut at 253 characters for one no override offers). */
  readonly annotation: string;
  /** The value as written (cut at 64 characters). */
  readonly value: string;
  /** Why it was not used, as a word to count by (`not-offered`: no override reads this key). */
  readonly reason: OverrideRejection | 'not-offered';
  /** Why, for people: `"9" is above the maximum 2`. */
  readonly message: string;
}

/** One offered field of one injected container, as it went into the pod. */
export interface OverrideOutcome {
  /** The injection that offers the field. */
  readonly injection: string;
  /** The injected container the field belongs to. */
  readonly container: string;
  /** `resources.requests.cpu`, `env.LOG_LEVEL`. */
  readonly field: string;
  /** The annotation the field is read from. */
  readonly annotation: string;
  /** The value the container got; undefined when neither an override nor the config sets it. */
  readonly value: string | undefined;
  /** Where `value` came from: the pod's annotation, the namespace's, or the config. */
  readonly source: OverrideSource;
  /** The configured value (what applies without an override). */
  readonly configured: string | undefined;
  /** Values found for this field and not used. */
  readonly ignored: readonly IgnoredOverride[];
}

/** One injection's containers with its overrides applied, and what became of each offered field. */
export interface AppliedOverrides {
  readonly rendered: RenderedInjection;
  readonly outcomes: readonly OverrideOutcome[];
  /** Whether some container differs from the config's (then it is no longer the config's own object). */
  readonly changed: boolean;
}

type Plain = Record<string, unknown>;
const isPlain = (value: unknown): value is Plain => value !== null && typeof value === 'object' && !Array.isArray(value);
const SHOWN_LENGTH = 64;
const cut = (value: string) => (value.length > SHOWN_LENGTH ? `${value.slice(0, SHOWN_LENGTH)}...` : value);

/** The container with the chosen values set: its other fields, requests, limits and env as configured. */
function withValues(container: ContainerSpec, chosen: readonly { override: ContainerOverride; value: string }[]): ContainerSpec {
  const out: Plain = { ...container };
  for (const { override, value } of chosen) {
    if ('env' in override) {
      out.env = (out.env as unknown[]).map((item) => (isPlain(item) && item.name === override.env ? { ...item, value } : item));
    } else {
      const [kind, name] = override.resource.split('.') as ['requests' | 'limits', string];
      const resources: Plain = isPlain(out.resources) ? { ...out.resources } : {};
      resources[kind] = { ...(isPlain(resources[kind]) ? resources[kind] : {}), [name]: value };
      out.resources = resources;
    }
  }
  return out as ContainerSpec;
}

/**
 * Applies `injection`'s overrides to `rendered` (its containers as they would go in): for each offered
 * field, the pod's annotation if its value is good, else the namespace's (with `fromNamespace`), else
 * the configured value. Returns undefined when the injection offers none.
 */
export function applyOverrides(
  injection: ResolvedInjection,
  rendered: RenderedInjection,
  podAnnotations: Readonly<Record<string, string>>,
  namespaceAnnotations: Readonly<Record<string, string>> | undefined,
): AppliedOverrides | undefined {
  const overrides = injection.overrides;
  if (!overrides || overrides.length === 0) return undefined;
  const outcomes: OverrideOutcome[] = [];
  let changed = false;
  const lists: Plain = {};
  for (const list of ['containers', 'initContainers'] as const) {
    const containers = rendered[list];
    if (!containers) continue;
    lists[list] = containers.map((container) => {
      const picks = choose(injection, container, podAnnotations, namespaceAnnotations);
      if (picks.length === 0) return container;
      const chosen = picks.filter((entry) => entry.source !== 'config').map((entry) => ({ override: entry.override, value: entry.value! }));
      for (const entry of picks) {
        outcomes.push({ injection: injection.name, container: container.name, field: overrideFieldName(entry.override), annotation: entry.override.annotation, value: entry.value, source: entry.source, configured: entry.configured, ignored: entry.ignored });
      }
      if (chosen.length === 0) return container;
      changed = true;
      return withValues(container, chosen);
    });
  }
  return { rendered: changed ? ({ ...rendered, ...lists } as RenderedInjection) : rendered, outcomes, changed };
}

/** Each field `injection` offers in `container` (none: []), its value chosen, a request kept at most its limit. */
function choose(injection: ResolvedInjection, container: ContainerSpec, podAnnotations: Readonly<Record<string, string>>, namespaceAnnotations: Readonly<Record<string, string>> | undefined): Pick[] {
  const offered = (injection.overrides ?? []).filter((override) => override.container === container.name);
  if (offered.length === 0) return [];
  const picks = offered.map((override) => pick(container, override, podAnnotations, override.fromNamespace ? namespaceAnnotations : undefined));
  consistentRequests(container, picks);
  return picks;
}

interface Pick {
  readonly override: ContainerOverride;
  value: string | undefined;
  source: OverrideSource;
  readonly configured: string | undefined;
  readonly ignored: IgnoredOverride[];
}

/**
 * Each override's judgement of the values it was given (the config's override object, then the
 * annotation's text): the pods of a workload carry the same value, and `status` and the reconciler judge
 * every pod of a cluster. Bounded in entries and bytes; a value past MAX_OVERRIDE_VALUE_LENGTH (refused
 * anyway) is judged every time and not kept.
 */
const judgedValues = new TwoLevelCache<ContainerOverride, string, OverrideValueCheck>({ maxEntries: 1024, maxBytes: 512 * 1024 });
/** What one judgement may hold beside its value: its message quotes the value (cut) and a bound. */
const JUDGEMENT_BYTES = 512;

function judgedValue(override: ContainerOverride, raw: string): OverrideValueCheck {
  let check = judgedValues.get(override, raw);
  if (check === undefined) {
    check = checkOverrideValue(override, raw);
    if (raw.length <= MAX_OVERRIDE_VALUE_LENGTH) judgedValues.set(override, raw, check, 2 * stringBytes(raw) + JUDGEMENT_BYTES);
  }
  return check;
}

function pick(container: ContainerSpec, override: ContainerOverride, podAnnotations: Readonly<Record<string, string>>, namespaceAnnotations: Readonly<Record<string, string>> | undefined): Pick {
  const configured = configuredOverrideValue(container, override);
  const entry: Pick = { override, value: configured, source: 'config', configured, ignored: [] };
  const candidates: ['pod' | 'namespace', string | undefined][] = [
    ['pod', ownValue(podAnnotations, override.annotation)],
    ['namespace', namespaceAnnotations ? ownValue(namespaceAnnotations, override.annotation) : undefined],
  ];
  for (const [from, raw] of candidates) {
    if (raw === undefined) continue;
    const check = judgedValue(override, raw);
    if (check.ok) {
      entry.value = check.value;
      entry.source = from;
      break;
    }
    entry.ignored.push({ from, annotation: override.annotation, value: cut(raw), reason: check.reason, message: check.message });
  }
  return entry;
}

function ownValue(annotations: Readonly<Record<string, string>>, key: string): string | undefined {
  return Object.prototype.hasOwnProperty.call(annotations, key) && typeof annotations[key] === 'string' ? annotations[key] : undefined;
}

/**
 * Keeps each request at most its limit, as the apiserver requires: an overridden request above the
 * limit, or an overridden limit below the request, goes back to the configured value (both, when both
 * were overridden), which the validator has checked is consistent.
 */
function consistentRequests(container: ContainerSpec, picks: Pick[]): void {
  for (const name of ['cpu', 'memory']) {
    const request = picks.find((entry) => 'resource' in entry.override && entry.override.resource === `requests.${name}`);
    const limit = picks.find((entry) => 'resource' in entry.override && entry.override.resource === `limits.${name}`);
    const requestValue = request ? request.value : configuredResource(container, 'requests', name);
    const limitValue = limit ? limit.value : configuredResource(container, 'limits', name);
    const r = cachedQuantity(requestValue);
    const l = cachedQuantity(limitValue);
    if (r === undefined || l === undefined || r <= l) continue;
    for (const entry of [request, limit]) {
      if (!entry || entry.source === 'config') continue;
      const other = entry === request ? `limit ${limitValue}` : `request ${requestValue}`;
      const relation = entry === request ? 'is above the' : 'is below the';
      entry.ignored.push({ from: entry.source, annotation: entry.override.annotation, value: cut(entry.value!), reason: 'request-above-limit', message: `"${cut(entry.value!)}" ${relation} ${name} ${other}` });
      entry.value = entry.configured;
      entry.source = 'config';
    }
  }
}

/** The warning the response carries for one ignored value, and what the field keeps instead. */
export function ignoredOverrideWarning(ignored: IgnoredOverride, kept: OverrideOutcome, namespace: string | undefined): string {
  const where = ignored.from === 'pod' ? 'annotation' : namespace ? `namespace ${namespace} annotation` : 'namespace annotation';
  const from = kept.source === 'config' ? ' as configured' : ` from the ${kept.source}`;
  return `${where} ${ignored.annotation} ignored (injection "${kept.injection}"): ${ignored.message}; ${kept.container} keeps ${kept.field} ${kept.value ?? '(unset)'}${from}`;
}

/** The warning for a pod annotation under an offered prefix that no override reads (a typo, or a field not offered). */
export function notOfferedWarning(key: string, offered: readonly string[]): string {
  return `annotation ${key.slice(0, 253)} ignored: no injection offers it as an override (offered: ${offered.join(', ')})`;
}

/**
 * For a workload template the injection was applied to before: each offered field whose value in the
 * template's container is not what the annotations ask for now. Overrides are read when the template
 * is injected, never again (an UPDATE finds it injected), so this is said rather than left silent.
 * Limits are not compared under `qos: 'preserve-guaranteed'` (they follow the requests there).
 */
export function staleTemplateOverrides(
  injection: ResolvedInjection,
  templateContainers: readonly unknown[],
  podAnnotations: Readonly<Record<string, string>>,
  namespaceAnnotations: Readonly<Record<string, string>> | undefined,
): string[] {
  const messages: string[] = [];
  for (const configured of [...(injection.containers ?? []), ...(injection.initContainers ?? [])]) {
    const present = templateContainers.find((candidate) => isPlain(candidate) && candidate.name === configured.name) as ContainerSpec | undefined;
    if (!present) continue;
    for (const entry of choose(injection, configured, podAnnotations, namespaceAnnotations)) {
      if (injection.qos === 'preserve-guaranteed' && 'resource' in entry.override && entry.override.resource.startsWith('limits.')) continue;
      const now = configuredOverrideValue(present, entry.override);
      if (entry.value === undefined || now === entry.value) continue;
      messages.push(
        `injection "${injection.name}" was applied to this template before: ${configured.name} has ${overrideFieldName(entry.override)} ${now ?? '(unset)'}, ` +
          `not ${entry.value}${entry.source === 'config' ? ' (configured)' : ` from ${entry.override.annotation}`}; overrides of a workload's template are read only when it is first injected`,
      );
    }
  }
  return messages;
}
