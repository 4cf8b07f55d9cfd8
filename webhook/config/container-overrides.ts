// Per-workload overrides: the fields of an injected container that a platform team lets app teams set
// by annotation (a sidecar's cpu request, a log level), with the bounds each value must meet. This file
// holds the type, its validation and the check of one value, shared by the construct (synth), the
// webhook's engine and the CLI, so all three judge an annotation the same way.

import { parseQuantity } from './kubernetes-quantity';

/** The resource fields an override can set: one quantity of the injected container's requests or limits. */
export const RESOURCE_OVERRIDE_FIELDS = ['requests.cpu', 'requests.memory', 'limits.cpu', 'limits.memory'] as const;
/** One of {@link RESOURCE_OVERRIDE_FIELDS}, such as `requests.cpu`. */
export type ResourceOverrideField = (typeof RESOURCE_OVERRIDE_FIELDS)[number];

/** Lets app teams set one resource quantity of an injected container, within bounds. */
export interface ResourceOverride {
  /**
   * The annotation the value is read from, a qualified name such as `envoy.example.com/cpu-request`:
   * on the pod (for a workload, its pod template or its own metadata, the template's winning) and,
   * with `fromNamespace`, on the namespace, where it is the default that a workload's own beats.
   */
  readonly annotation: string;
  /** The name of the injected container (one of this injection's `containers` or `initContainers`). */
  readonly container: string;
  /** The quantity set: `requests.cpu`, `requests.memory`, `limits.cpu` or `limits.memory`. The
   * container's other requests and limits stay as configured. */
  readonly resource: ResourceOverrideField;
  /** The largest value accepted, a quantity such as `"2"` or `"1Gi"`; a larger one is ignored (with a warning). */
  readonly max: string;
  /** The smallest value accepted, a quantity. @default any value above zero */
  readonly min?: string;
  /** Whether the namespace's annotation of the same key is a default for the pods in it. The webhook
   * then reads namespaces (a ClusterRole to list and watch them), which it otherwise never does.
   * @default false */
  readonly fromNamespace?: boolean;
}

/** Lets app teams choose the value of one environment variable of an injected container from a fixed set. */
export interface EnvOverride {
  /** The annotation the value is read from, as for {@link ResourceOverride.annotation}. */
  readonly annotation: string;
  /** The name of the injected container (one of this injection's `containers` or `initContainers`). */
  readonly container: string;
  /** The environment variable, which the container's `env` must list with a literal `value` (the default). */
  readonly env: string;
  /** The values accepted, exactly as written; any other is ignored (with a warning). */
  readonly allowedValues: readonly string[];
  /** As for {@link ResourceOverride.fromNamespace}. @default false */
  readonly fromNamespace?: boolean;
}

/** A field of an injected container that app teams may set by annotation: a resource quantity or an env var's value. */
export type ContainerOverride = ResourceOverride | EnvOverride;

/** The field an override sets, as printed: `resources.requests.cpu`, `env.LOG_LEVEL`. */
export function overrideFieldName(override: ContainerOverride): string {
  return 'resource' in override ? `resources.${override.resource}` : `env.${override.env}`;
}

/** Why an annotation's value was not used. */
export type OverrideRejection = 'unparsable' | 'out-of-bounds' | 'not-allowed' | 'request-above-limit';

/** The longest annotation value read for an override: quantities and enum values are short. */
export const MAX_OVERRIDE_VALUE_LENGTH = 64;

/**
 * A quantity as an override accepts it: digits with an optional fraction and one of Kubernetes' suffixes.
 * Narrower than what the apiserver parses (no sign, no exponent), so whatever passes here it accepts too.
 */
const OVERRIDE_QUANTITY = /^(?:\d+(?:\.\d+)?|\.\d+)(?:m|k|M|G|T|P|Ki|Mi|Gi|Ti|Pi)?$/;

/** The value to use, or why not: one annotation's value judged against its override's bounds. */
export type OverrideValueCheck = OverrideAccepted | OverrideRefused;

/** A value an override accepts. */
export interface OverrideAccepted {
  /** Accepted. */
  readonly ok: true;
  /** The value to set, as written. */
  readonly value: string;
}

/** A value an override refuses, and why. */
export interface OverrideRefused {
  /** Refused. */
  readonly ok: false;
  /** Why, as a word to count by. */
  readonly reason: OverrideRejection;
  /** Why, for people: `"3" is above the maximum 2`. */
  readonly message: string;
}

/** An override's bounds, parsed once per override (the config's objects): every admission checks against them. */
const boundsOf = new WeakMap<ContainerOverride, { readonly max: bigint; readonly min: bigint | undefined }>();

function bounds(override: ContainerOverride & { readonly max: string; readonly min?: string }): { readonly max: bigint; readonly min: bigint | undefined } {
  let parsed = boundsOf.get(override);
  if (!parsed) boundsOf.set(override, (parsed = { max: parseQuantity(override.max)!, min: override.min === undefined ? undefined : parseQuantity(override.min)! }));
  return parsed;
}

/** Judges one annotation value against `override`: parsed, bounded, or one of the allowed values. */
export function checkOverrideValue(override: ContainerOverride, value: string): OverrideValueCheck {
  // Not trimmed: both backends read the annotation byte for byte (CEL has no trim in every version).
  // Quoted for a message only: most values are good, and are not.
  const shown = () => JSON.stringify(value.length > MAX_OVERRIDE_VALUE_LENGTH ? `${value.slice(0, MAX_OVERRIDE_VALUE_LENGTH)}...` : value);
  if ('env' in override) {
    if (override.allowedValues.includes(value)) return { ok: true, value };
    const allowed = override.allowedValues.map((v) => JSON.stringify(v)).join(', ');
    return { ok: false, reason: 'not-allowed', message: `${shown()} is not one of the allowed values (${allowed})` };
  }
  if (value.length > MAX_OVERRIDE_VALUE_LENGTH || !OVERRIDE_QUANTITY.test(value)) {
    return { ok: false, reason: 'unparsable', message: `${shown()} is not a quantity (like "250m", "1", "512Mi")` };
  }
  const quantity = parseQuantity(value)!;
  const { max, min } = bounds(override);
  if (quantity <= 0n) return { ok: false, reason: 'out-of-bounds', message: `${shown()} must be above zero` };
  if (quantity > max) return { ok: false, reason: 'out-of-bounds', message: `${shown()} is above the maximum ${override.max}` };
  if (min !== undefined && quantity < min) return { ok: false, reason: 'out-of-bounds', message: `${shown()} is below the minimum ${override.min}` };
  return { ok: true, value };
}

/** One quantity of a container's `requests` or `limits` as configured (a string, or a number as JSON allows). */
export function configuredResource(container: Readonly<Record<string, unknown>>, kind: 'requests' | 'limits', name: string): string | number | undefined {
  const resources = container.resources;
  const map = isPlain(resources) ? resources[kind] : undefined;
  const value = isPlain(map) ? map[name] : undefined;
  return typeof value === 'string' || typeof value === 'number' ? value : undefined;
}

/** The configured value of the field `override` offers in `container`, as text: the default an override falls back to. */
export function configuredOverrideValue(container: Readonly<Record<string, unknown>>, override: ContainerOverride): string | undefined {
  if ('env' in override) {
    const entry = Array.isArray(container.env) ? container.env.find((item) => isPlain(item) && item.name === override.env) : undefined;
    return isPlain(entry) && typeof entry.value === 'string' ? entry.value : undefined;
  }
  const [kind, name] = override.resource.split('.') as ['requests' | 'limits', string];
  const value = configuredResource(container, kind, name);
  return value === undefined ? undefined : String(value);
}

/** What `overrideIssues` needs to know of the injection: its containers, as written. */
interface InjectionContainers {
  readonly containers?: unknown;
  readonly initContainers?: unknown;
}

type Plain = Record<string, unknown>;
const isPlain = (value: unknown): value is Plain => value !== null && typeof value === 'object' && !Array.isArray(value);

const COMMON_FIELDS = ['annotation', 'container', 'fromNamespace'];
const RESOURCE_FIELDS = new Set([...COMMON_FIELDS, 'resource', 'max', 'min']);
const ENV_FIELDS = new Set([...COMMON_FIELDS, 'env', 'allowedValues']);

/**
 * Every problem with an injection's `overrides`, as `[path, message]`. `annotationError` checks a key
 * (a qualified name, not one the injector itself writes); `seen` maps every annotation key already
 * offered by an earlier injection to where, so that one key sets one field.
 */
export function overrideIssues(
  overrides: unknown,
  injection: InjectionContainers,
  path: string,
  annotationError: (key: string) => string | undefined,
  seen: Map<string, string>,
): [string, string][] {
  const issues: [string, string][] = [];
  if (overrides === undefined) return issues;
  if (!Array.isArray(overrides)) return [[path, 'must be a list of overrides']];
  const containers = new Map<string, Plain>();
  for (const list of [injection.containers, injection.initContainers]) {
    if (Array.isArray(list)) for (const container of list) if (isPlain(container) && typeof container.name === 'string') containers.set(container.name, container);
  }
  const fields = new Map<string, string>();
  overrides.forEach((override: unknown, index: number) => {
    const at = `${path}[${index}]`;
    if (!isPlain(override)) {
      issues.push([at, 'must be an object with annotation, container and resource or env']);
      return;
    }
    const isResource = 'resource' in override;
    const isEnv = 'env' in override;
    if (isResource === isEnv) {
      issues.push([at, isResource ? 'sets both resource and env: an override sets one field' : 'must set resource (requests.cpu, ...) or env (a variable of the container)']);
      return;
    }
    const known = isResource ? RESOURCE_FIELDS : ENV_FIELDS;
    for (const key of Object.keys(override)) if (!known.has(key)) issues.push([`${at}.${key}`, `unknown field (known: ${[...known].join(', ')})`]);
    if (typeof override.annotation !== 'string') issues.push([`${at}.annotation`, 'must be an annotation key such as "envoy.example.com/cpu-request"']);
    else {
      const error = annotationError(override.annotation);
      const first = seen.get(override.annotation);
      if (error) issues.push([`${at}.annotation`, `"${override.annotation}" ${error}`]);
      else if (first !== undefined) issues.push([`${at}.annotation`, `"${override.annotation}" is already read by ${first}: one annotation sets one field`]);
      else seen.set(override.annotation, at);
    }
    if (override.fromNamespace !== undefined && typeof override.fromNamespace !== 'boolean') issues.push([`${at}.fromNamespace`, 'must be true or false']);
    const container = typeof override.container === 'string' ? containers.get(override.container) : undefined;
    if (typeof override.container !== 'string' || container === undefined) {
      const names = [...containers.keys()].map((name) => `"${name}"`).join(', ') || 'none';
      issues.push([`${at}.container`, `must name a container this injection adds (${names}), got ${JSON.stringify(override.container)}`]);
    }
    if (isResource) {
      resourceIssues(override, at, issues);
      // The configured value is the default; an offer without one would leave the field absent or set.
      const [kind, name] = String(override.resource).split('.') as ['requests' | 'limits', string];
      if (container !== undefined && RESOURCE_OVERRIDE_FIELDS.includes(override.resource as ResourceOverrideField) && configuredResource(container, kind, name) === undefined) {
        issues.push([`${at}.resource`, `container "${String(override.container)}" sets no resources.${String(override.resource)}: give it the default value there`]);
      }
    }
    else envIssues(override, container, at, issues);
    const field = isResource ? `resources.${String(override.resource)}` : `env.${String(override.env)}`;
    const key = `${String(override.container)} ${field}`;
    const earlier = fields.get(key);
    if (earlier !== undefined) issues.push([at, `${field} of container "${String(override.container)}" is already offered by ${earlier}`]);
    else fields.set(key, at);
  });
  // A request offered up to more than a limit nobody can raise would always be refused above it.
  overrides.forEach((override: unknown, index: number) => {
    if (!isPlain(override) || typeof override.resource !== 'string' || !override.resource.startsWith('requests.')) return;
    const name = override.resource.slice('requests.'.length);
    const container = containers.get(String(override.container));
    const limitText = container ? configuredResource(container, 'limits', name) : undefined;
    const limit = parseQuantity(limitText);
    const limitOffered = overrides.some((other) => isPlain(other) && other.container === override.container && other.resource === `limits.${name}`);
    const max = parseQuantity(override.max);
    if (limit !== undefined && max !== undefined && max > limit && !limitOffered) {
      issues.push([`${path}[${index}].max`, `${String(override.max)} is above the container's ${name} limit ${String(limitText)}, which no override raises: a request above it could never be used`]);
    }
  });
  return issues;
}

function resourceIssues(override: Plain, at: string, issues: [string, string][]): void {
  if (!RESOURCE_OVERRIDE_FIELDS.includes(override.resource as ResourceOverrideField)) {
    issues.push([`${at}.resource`, `${JSON.stringify(override.resource)} is not one of ${RESOURCE_OVERRIDE_FIELDS.join(', ')}`]);
  }
  const bound = (field: 'max' | 'min'): bigint | undefined => {
    const value = override[field];
    if (value === undefined) {
      if (field === 'max') issues.push([`${at}.max`, 'is required: the largest value an app team may set (a quantity such as "2" or "1Gi")']);
      return undefined;
    }
    const quantity = typeof value === 'string' && OVERRIDE_QUANTITY.test(value) ? parseQuantity(value) : undefined;
    if (quantity === undefined || quantity <= 0n) {
      issues.push([`${at}.${field}`, `${JSON.stringify(value)} is not a quantity above zero (like "250m", "1", "512Mi")`]);
      return undefined;
    }
    return quantity;
  };
  const max = bound('max');
  const min = bound('min');
  if (max !== undefined && min !== undefined && min > max) issues.push([`${at}.min`, `${String(override.min)} is above max ${String(override.max)}`]);
}

function envIssues(override: Plain, container: Plain | undefined, at: string, issues: [string, string][]): void {
  if (typeof override.env !== 'string') {
    issues.push([`${at}.env`, 'must name an environment variable of the container']);
  } else if (container !== undefined) {
    const variable = Array.isArray(container.env) ? container.env.find((entry) => isPlain(entry) && entry.name === override.env) : undefined;
    if (!isPlain(variable)) issues.push([`${at}.env`, `"${override.env}" is not in container "${String(container.name)}"'s env: list it there with its default value`]);
    else if (typeof variable.value !== 'string') issues.push([`${at}.env`, `"${override.env}" has no literal value in container "${String(container.name)}" (valueFrom cannot be overridden)`]);
  }
  const values = override.allowedValues;
  if (!Array.isArray(values) || values.length === 0 || !values.every((value) => typeof value === 'string')) {
    issues.push([`${at}.allowedValues`, 'must be a non-empty list of strings: the values an app team may choose']);
  } else {
    values.forEach((value: string, index: number) => {
      if (value.length === 0 || value.length > MAX_OVERRIDE_VALUE_LENGTH || value.trim() !== value) {
        issues.push([`${at}.allowedValues[${index}]`, `${JSON.stringify(value)} must be 1 to ${MAX_OVERRIDE_VALUE_LENGTH} characters without surrounding spaces`]);
      }
    });
  }
}

/** The annotation keys of a config's overrides that read namespaces (`fromNamespace: true`): what the webhook watches namespaces for. */
export function namespaceOverrideKeys(config: {
  readonly injections: readonly { readonly overrides?: readonly ContainerOverride[] }[];
  readonly revisions?: readonly { readonly injections: readonly { readonly overrides?: readonly ContainerOverride[] }[] }[];
}): Set<string> {
  const injections = [...config.injections, ...(config.revisions ?? []).flatMap((revision) => revision.injections)];
  return new Set(injections.flatMap((injection) => (injection.overrides ?? []).filter((override) => override.fromNamespace === true).map((override) => override.annotation)));
}
