// The one validator of InjectorConfig. The construct runs it at synth (so bad props fail `cdk8s synth`),
// the webhook runs it on every config it loads (so a hand-edited ConfigMap cannot break admission).

import {
  DEFAULT_ANNOTATION_PREFIX,
  Injection,
  InjectorConfig,
  NATIVE_SIDECAR_MODES,
  NATIVE_SIDECAR_POSITIONS,
  QOS_POLICIES,
  POD_RESOURCES_POLICIES,
  INJECTION_MODES,
  ResolvedInjection,
  ResolvedInjectorConfig,
  TARGET_KINDS,
  TargetKind,
  annotationKeys,
} from './injector-config';
import { overrideIssues } from './container-overrides';
import { revisionIssues } from './revisions';
import { parseQuantity, quantityError } from './kubernetes-quantity';
import { POD_SECURITY_LEVELS, PodSecurityLevel, injectedPodSecurityViolations } from './pod-security';
import {
  dns1123LabelError,
  dns1123SubdomainError,
  envVarNameError,
  qualifiedNameError,
} from './kubernetes-names';
import { PLACEHOLDERS, isPlaceholderName, placeholdersIn } from './placeholders';
import { type ConfigIssue, InjectorConfigError, IssueCollector, type Plain, describe, isPlainObject, notOneOf } from './config-issues';
import { isEmpty, validateStringMap, validateTrigger } from './validate-trigger';

export { type ConfigIssue, InjectorConfigError } from './config-issues';
export { compileValuePattern, labelSelectorRequirementIssues } from './validate-trigger';

const INJECTION_FIELDS = new Set([
  'name', 'trigger', 'targetKinds', 'containers', 'initContainers', 'volumes', 'volumeMounts', 'env',
  'imagePullSecrets', 'labels', 'annotations', 'merges', 'qos', 'podResources', 'nativeSidecars', 'nativeSidecarPosition', 'readinessGate', 'podSecurity',
  'overrides', 'mode',
]);
const CONFIG_FIELDS = new Set(['annotationPrefix', 'enabled', 'podSecurity', 'injections', 'revisions', 'tags', 'unservedRevision']);
const ADDING_FIELDS = [
  'containers', 'initContainers', 'volumes', 'volumeMounts', 'env', 'imagePullSecrets', 'labels', 'annotations', 'merges',
] as const;

/** Every problem with `input`, an InjectorConfig as JSON; [] when it is valid. */
export function injectorConfigIssues(input: unknown): ConfigIssue[] {
  const out = new IssueCollector();
  if (!isPlainObject(input)) {
    out.add('(config)', `must be an object, got ${describe(input)}`);
    return out.issues;
  }
  for (const key of Object.keys(input)) {
    if (!CONFIG_FIELDS.has(key)) out.add(key, `unknown field (known: ${[...CONFIG_FIELDS].join(', ')})`);
  }
  const prefix = input.annotationPrefix ?? DEFAULT_ANNOTATION_PREFIX;
  if (typeof prefix !== 'string') {
    out.add('annotationPrefix', `must be a string, got ${describe(prefix)}`);
  } else {
    const error = dns1123SubdomainError(prefix);
    if (error) out.add('annotationPrefix', `"${prefix}" ${error}`);
  }
  if (input.enabled !== undefined && typeof input.enabled !== 'boolean') {
    out.add('enabled', `must be true or false, got ${describe(input.enabled)}`);
  }
  const injectorLevel = validateEnum(input.podSecurity, 'podSecurity', POD_SECURITY_LEVELS, out);
  if (input.revisions !== undefined || input.tags !== undefined || input.unservedRevision !== undefined) {
    const settings = { annotationPrefix: input.annotationPrefix, enabled: input.enabled, podSecurity: input.podSecurity };
    const revisionInjections = (injections: unknown) =>
      injectorConfigIssues({ ...settings, injections }).filter((issue) => issue.path.startsWith('injections'));
    for (const issue of revisionIssues(input, revisionInjections)) out.add(issue.path, issue.message);
    if (input.revisions !== undefined && input.injections === undefined) return out.issues;
  }
  if (!Array.isArray(input.injections)) {
    out.add('injections', `must be a list of injections, got ${describe(input.injections)}`);
    return out.issues;
  }
  const reserved = typeof prefix === 'string' ? annotationKeys(prefix) : undefined;
  const injectionNames = new Map<string, number>();
  // Container names share one namespace across containers and initContainers of a pod.
  const containerOwners = new Map<string, string>();
  const volumeOwners = new Map<string, string>();
  /** Override annotation keys, to where they are first offered. */
  const overrideKeys = new Map<string, string>();
  const reservedKeys = new Set(reserved ? Object.values(reserved) : []);
  const overrideKeyError = (key: string) => {
    const error = qualifiedNameError(key);
    if (error) return `is not a valid annotation key: ${error}`;
    if (!key.includes('/')) return 'needs a prefix, such as "envoy.example.com/cpu-request": keys under it that no override offers are warned about';
    return reservedKeys.has(key) ? 'is an annotation the injector itself reads or writes' : undefined;
  };
  input.injections.forEach((injection: unknown, index: number) => {
    const path = `injections[${index}]`;
    if (!isPlainObject(injection)) {
      out.add(path, `must be an object, got ${describe(injection)}`);
      return;
    }
    validateInjection(injection, path, out, reserved, injectorLevel);
    for (const [issuePath, message] of overrideIssues(injection.overrides, injection, `${path}.overrides`, overrideKeyError, overrideKeys)) out.add(issuePath, message);
    const name = injection.name;
    if (typeof name === 'string') {
      const first = injectionNames.get(name);
      if (first !== undefined) out.add(`${path}.name`, `duplicate injection name "${name}" (also injections[${first}])`);
      else injectionNames.set(name, index);
    }
    for (const field of ['containers', 'initContainers'] as const) {
      forEachNamed(injection[field], (itemName, itemIndex) => {
        const itemPath = `${path}.${field}[${itemIndex}].name`;
        const owner = containerOwners.get(itemName);
        if (owner !== undefined) out.add(itemPath, `container name "${itemName}" is already injected by ${owner}`);
        else containerOwners.set(itemName, itemPath.replace(/\.name$/, ''));
      });
    }
    forEachNamed(injection.volumes, (itemName, itemIndex) => {
      const itemPath = `${path}.volumes[${itemIndex}]`;
      const owner = volumeOwners.get(itemName);
      if (owner !== undefined) out.add(`${itemPath}.name`, `volume name "${itemName}" is already injected by ${owner}`);
      else volumeOwners.set(itemName, itemPath);
    });
  });
  return out.issues;
}

function forEachNamed(list: unknown, visit: (name: string, index: number) => void): void {
  if (!Array.isArray(list)) return;
  list.forEach((item, index) => {
    if (isPlainObject(item) && typeof item.name === 'string') visit(item.name, index);
  });
}

function validateInjection(
  injection: Plain,
  path: string,
  out: IssueCollector,
  reserved: { inject: string; status: string; hashes: string } | undefined,
  injectorLevel: PodSecurityLevel | undefined,
): void {
  for (const key of Object.keys(injection)) {
    if (!INJECTION_FIELDS.has(key)) out.add(`${path}.${key}`, `unknown field (known: ${[...INJECTION_FIELDS].join(', ')})`);
  }
  if (typeof injection.name !== 'string') {
    out.add(`${path}.name`, `must be a string, got ${describe(injection.name)}`);
  } else {
    const error = dns1123LabelError(injection.name);
    if (error) out.add(`${path}.name`, `"${injection.name}" ${error}`);
  }
  const triggerType = validateTrigger(injection.trigger, `${path}.trigger`, out);

  if (injection.targetKinds !== undefined) {
    if (!Array.isArray(injection.targetKinds) || injection.targetKinds.length === 0) {
      out.add(`${path}.targetKinds`, `must be a non-empty list of ${TARGET_KINDS.join(', ')}`);
    } else {
      const seen = new Set<unknown>();
      injection.targetKinds.forEach((kind: unknown, index: number) => {
        if (!TARGET_KINDS.includes(kind as TargetKind)) {
          out.add(`${path}.targetKinds[${index}]`, notOneOf(kind, TARGET_KINDS));
        } else if (seen.has(kind)) {
          out.add(`${path}.targetKinds[${index}]`, `"${kind}" is listed twice`);
        }
        seen.add(kind);
      });
    }
  }

  validateContainers(injection.containers, `${path}.containers`, out, false);
  validateContainers(injection.initContainers, `${path}.initContainers`, out, true);
  validateNamedList(injection.volumes, `${path}.volumes`, out, 'volume', (volume, itemPath) => {
    if (Object.keys(volume).length < 2) out.add(itemPath, 'a volume needs a source (configMap, secret, emptyDir, ...)');
  });
  validateNamedList(injection.volumeMounts, `${path}.volumeMounts`, out, 'volume mount', (mount, itemPath) => {
    if (typeof mount.mountPath !== 'string' || !mount.mountPath.startsWith('/')) {
      out.add(`${itemPath}.mountPath`, `must be an absolute path, got ${describe(mount.mountPath)}`);
    }
  }, { unique: 'mountPath', nameRule: 'label' });
  validateNamedList(injection.env, `${path}.env`, out, 'environment variable', undefined, { nameRule: 'env' });
  validateNamedList(injection.imagePullSecrets, `${path}.imagePullSecrets`, out, 'image pull secret', undefined, {
    nameRule: 'subdomain',
  });
  validateStringMap(injection.labels, `${path}.labels`, out, true, reserved);
  validateStringMap(injection.annotations, `${path}.annotations`, out, false, reserved);
  validateMerges(injection.merges, `${path}.merges`, out);

  if (ADDING_FIELDS.every((field) => isEmpty(injection[field]))) {
    out.add(path, `adds nothing: set at least one of ${ADDING_FIELDS.join(', ')}`);
  }
  validatePlaceholders(injection, path, out, triggerType);
  validatePodShape(injection, path, out, injectorLevel);
}

function validateEnum<T extends string>(value: unknown, path: string, allowed: readonly T[], out: IssueCollector): T | undefined {
  if (value === undefined) return undefined;
  if (!allowed.includes(value as T)) {
    out.add(path, notOneOf(value, allowed));
    return undefined;
  }
  return value as T;
}

/** The options that keep injected pods valid: QoS, native sidecars, and the Pod Security level. */
function validatePodShape(injection: Plain, path: string, out: IssueCollector, injectorLevel: PodSecurityLevel | undefined): void {
  const qos = validateEnum(injection.qos, `${path}.qos`, QOS_POLICIES, out);
  validateEnum(injection.podResources, `${path}.podResources`, POD_RESOURCES_POLICIES, out);
  validateEnum(injection.mode, `${path}.mode`, INJECTION_MODES, out);
  const native = validateEnum(injection.nativeSidecars, `${path}.nativeSidecars`, NATIVE_SIDECAR_MODES, out);
  validateEnum(injection.nativeSidecarPosition, `${path}.nativeSidecarPosition`, NATIVE_SIDECAR_POSITIONS, out);
  const ownLevel = validateEnum(injection.podSecurity, `${path}.podSecurity`, POD_SECURITY_LEVELS, out);
  if (native !== undefined && native !== 'never' && isEmpty(injection.containers)) {
    out.add(`${path}.nativeSidecars`, 'the injection has no containers to place as native sidecars');
  }
  if (injection.nativeSidecarPosition !== undefined && (native === undefined || native === 'never')) {
    out.add(`${path}.nativeSidecarPosition`, 'only applies with nativeSidecars "jobs" or "always"');
  }
  if (injection.readinessGate !== undefined && typeof injection.readinessGate !== 'boolean') {
    out.add(`${path}.readinessGate`, `must be true or false, got ${describe(injection.readinessGate)}`);
  } else if (injection.readinessGate === true && isEmpty(injection.containers) && isEmpty(injection.initContainers)) {
    out.add(`${path}.readinessGate`, 'the injection adds no container whose image rollout --in-place could replace');
  }
  for (const list of ['containers', 'initContainers'] as const) {
    if (!Array.isArray(injection[list])) continue;
    (injection[list] as unknown[]).forEach((container, index) => {
      if (isPlainObject(container)) validateResources(container.resources, `${path}.${list}[${index}].resources`, out, qos === 'preserve-guaranteed');
    });
  }
  const level = ownLevel ?? injectorLevel;
  if (level !== undefined) {
    for (const violation of injectedPodSecurityViolations(injection, level, path)) {
      out.add(violation.path, `Pod Security "${level}" (${violation.check}): ${violation.message}`);
    }
  }
}

const QOS_RESOURCES = ['cpu', 'memory'] as const;

/** Resource quantities must parse; `preserve-guaranteed` needs cpu and memory requests to copy into limits. */
function validateResources(resources: unknown, path: string, out: IssueCollector, guaranteed: boolean): void {
  if (resources !== undefined && !isPlainObject(resources)) {
    out.add(path, `must be an object with requests and limits, got ${describe(resources)}`);
    return;
  }
  const parsed: Record<'requests' | 'limits', Record<string, bigint>> = { requests: {}, limits: {} };
  for (const kind of ['requests', 'limits'] as const) {
    const map = resources?.[kind];
    if (map === undefined) continue;
    if (!isPlainObject(map)) {
      out.add(`${path}.${kind}`, `must be a map of resource quantities, got ${describe(map)}`);
      continue;
    }
    for (const [name, value] of Object.entries(map)) {
      const error = quantityError(value);
      if (error) out.add(`${path}.${kind}.${name}`, error);
      else parsed[kind][name] = parseQuantity(value)!;
    }
  }
  for (const name of QOS_RESOURCES) {
    const request = parsed.requests[name];
    const limit = parsed.limits[name];
    if (request !== undefined && limit !== undefined && request > limit) {
      out.add(`${path}.requests.${name}`, `must be less than or equal to the ${name} limit`);
    }
    if (guaranteed && !((request ?? limit ?? 0n) > 0n)) {
      out.add(
        `${path}.requests.${name}`,
        `qos "preserve-guaranteed" needs a ${name} request above zero: in a Guaranteed pod, the limit is set to it`,
      );
    }
  }
}


function validateNamedList(
  list: unknown,
  path: string,
  out: IssueCollector,
  what: string,
  extra?: (item: Plain, itemPath: string) => void,
  options: { unique?: string; nameRule?: 'label' | 'env' | 'subdomain' } = {},
): void {
  if (list === undefined) return;
  if (!Array.isArray(list)) {
    out.add(path, `must be a list, got ${describe(list)}`);
    return;
  }
  const uniqueKey = options.unique ?? 'name';
  const seen = new Map<unknown, number>();
  list.forEach((item: unknown, index: number) => {
    const itemPath = `${path}[${index}]`;
    if (!isPlainObject(item)) {
      out.add(itemPath, `must be an object, got ${describe(item)}`);
      return;
    }
    if (typeof item.name !== 'string') {
      out.add(`${itemPath}.name`, `a ${what} needs a name, got ${describe(item.name)}`);
    } else {
      const rule = options.nameRule ?? 'label';
      const error =
        rule === 'env' ? envVarNameError(item.name) : rule === 'subdomain' ? dns1123SubdomainError(item.name) : dns1123LabelError(item.name);
      if (error) out.add(`${itemPath}.name`, `"${item.name}" ${error}`);
    }
    const key = item[uniqueKey];
    if (typeof key === 'string') {
      const first = seen.get(key);
      if (first !== undefined) out.add(`${itemPath}.${uniqueKey}`, `duplicate ${what} ${uniqueKey} "${key}" (also ${path}[${first}])`);
      else seen.set(key, index);
    }
    extra?.(item, itemPath);
  });
}

function validateContainers(list: unknown, path: string, out: IssueCollector, init: boolean): void {
  validateNamedList(list, path, out, init ? 'init container' : 'container', (container, itemPath) => {
    if (typeof container.image !== 'string' || container.image.trim() === '') {
      out.add(`${itemPath}.image`, `must be a non-empty image reference, got ${describe(container.image)}`);
    }
    if (container.restartPolicy !== undefined) {
      if (!init) out.add(`${itemPath}.restartPolicy`, 'only init containers take a restartPolicy (Always makes a native sidecar)');
      else if (container.restartPolicy !== 'Always') {
        out.add(`${itemPath}.restartPolicy`, `must be "Always" (a native sidecar) or left out, got ${describe(container.restartPolicy)}`);
      }
    }
  });
}


function validateMerges(list: unknown, path: string, out: IssueCollector): void {
  if (list === undefined) return;
  if (!Array.isArray(list)) {
    out.add(path, `must be a list, got ${describe(list)}`);
    return;
  }
  list.forEach((merge: unknown, index: number) => {
    const itemPath = `${path}[${index}]`;
    if (!isPlainObject(merge)) {
      out.add(itemPath, `must be an object, got ${describe(merge)}`);
      return;
    }
    for (const key of Object.keys(merge)) {
      if (!['containerNames', 'fields', 'whenMissing'].includes(key)) out.add(`${itemPath}.${key}`, 'unknown field (known: containerNames, fields, whenMissing)');
    }
    const names = merge.containerNames;
    if (!Array.isArray(names) || names.length === 0) {
      out.add(`${itemPath}.containerNames`, 'must name at least one container to merge into');
    } else {
      names.forEach((name: unknown, nameIndex: number) => {
        const error = typeof name === 'string' ? dns1123LabelError(name) : `must be a string, got ${describe(name)}`;
        if (error) out.add(`${itemPath}.containerNames[${nameIndex}]`, error);
      });
    }
    if (!isPlainObject(merge.fields) || Object.keys(merge.fields).length === 0) {
      out.add(`${itemPath}.fields`, 'has nothing to merge: give at least one field, e.g. { readinessProbe: { initialDelaySeconds: 10 } }');
    } else if ('name' in merge.fields) {
      out.add(`${itemPath}.fields.name`, 'a merge cannot rename a container');
    }
    if (merge.whenMissing !== undefined && merge.whenMissing !== 'skip' && merge.whenMissing !== 'create') {
      out.add(`${itemPath}.whenMissing`, `must be "skip" or "create", got ${describe(merge.whenMissing)}`);
    }
  });
}

function validatePlaceholders(injection: Plain, path: string, out: IssueCollector, triggerType: string | undefined): void {
  const visit = (value: unknown, valuePath: string): void => {
    if (typeof value === 'string') {
      for (const name of placeholdersIn(value)) {
        if (!isPlaceholderName(name)) {
          out.add(valuePath, `placeholder {{${name}}} refers to nothing (known: ${Object.keys(PLACEHOLDERS).join(', ')})`);
        } else if (name === 'annotation' && triggerType !== 'annotation') {
          out.add(valuePath, 'placeholder {{annotation}} refers to nothing: only an annotation trigger has an annotation value');
        }
      }
    } else if (Array.isArray(value)) {
      value.forEach((item, index) => visit(item, `${valuePath}[${index}]`));
    } else if (isPlainObject(value)) {
      for (const [key, item] of Object.entries(value)) visit(item, `${valuePath}.${key}`);
    }
  };
  for (const field of ADDING_FIELDS) visit(injection[field], `${path}.${field}`);
}

/**
 * What synth warns about but does not fail on: for every injection with no Pod Security level of its
 * own or from the injector, each "restricted" check what it adds would fail. [] for a config that is
 * not valid (its issues come first).
 */
export function injectorConfigWarnings(input: unknown): ConfigIssue[] {
  if (!isPlainObject(input) || input.podSecurity !== undefined) return [];
  const lists: [string, unknown][] = [['injections', input.injections]];
  if (Array.isArray(input.revisions)) input.revisions.forEach((revision, index) => lists.push([`revisions[${index}].injections`, isPlainObject(revision) ? revision.injections : undefined]));
  const warnings: ConfigIssue[] = [];
  for (const [base, injections] of lists) {
    if (!Array.isArray(injections)) continue;
    injections.forEach((injection: unknown, index: number) => {
      if (!isPlainObject(injection) || injection.podSecurity !== undefined) return;
      for (const violation of injectedPodSecurityViolations(injection, 'restricted', `${base}[${index}]`)) {
        warnings.push({
          path: violation.path,
          message: `would fail Pod Security "restricted" (${violation.check}): ${violation.message}; the apiserver rejects such pods in namespaces that enforce it`,
        });
      }
    });
  }
  return warnings;
}

/**
 * Validates `input` and returns it with every default filled in. Throws InjectorConfigError listing
 * every problem. `resolve(resolve(x))` equals `resolve(x)`: what the construct writes, the webhook
 * loads unchanged.
 */
export function resolveInjectorConfig(input: unknown, subject?: string): ResolvedInjectorConfig {
  const issues = injectorConfigIssues(input);
  if (issues.length > 0) throw new InjectorConfigError(issues, subject);
  const config = input as InjectorConfig;
  return {
    annotationPrefix: config.annotationPrefix ?? DEFAULT_ANNOTATION_PREFIX,
    enabled: config.enabled ?? true,
    ...(config.podSecurity !== undefined ? { podSecurity: config.podSecurity } : {}),
    injections: (config.injections ?? []).map(resolveInjection),
    ...(config.revisions !== undefined
      ? {
          revisions: config.revisions.map((revision) => ({ name: revision.name, injections: revision.injections.map(resolveInjection) })),
          tags: (config.tags ?? []).map((tag) => ({ name: tag.name, revision: tag.revision, ...(tag.default === true ? { default: true } : {}) })),
          unservedRevision: config.unservedRevision ?? 'warn',
        }
      : {}),
  };
}

function resolveInjection(injection: Injection): ResolvedInjection {
  // Spread keeps the user's raw JSON as written; only the defaulted fields are added.
  return { ...injection, targetKinds: injection.targetKinds ?? ['Pod'] };
}

/** Parses and validates the config file's text, as the webhook does on every (re)load. */
export function loadInjectorConfig(text: string): ResolvedInjectorConfig {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new InjectorConfigError([{ path: '(file)', message: `is not JSON: ${(error as Error).message}` }]);
  }
  return resolveInjectorConfig(json);
}
