// Revisions of the injections, served side by side, and tags that point at them. A namespace or a
// pod template chooses one by the label `<prefix>/rev` (a tag or a revision's name); the apiserver
// does the choosing (one webhook entry, or policy binding, per revision and chooser), so the webhook
// never reads a namespace for it. Moving a tag changes those selectors and nothing a pod already runs.

import { type ResolvedInjectorConfig, UNSERVED_REVISION_ACTIONS, type UnservedRevisionAction } from './injector-config';
import { dns1123LabelError } from './kubernetes-names';

/** Longest revision or tag name: it goes into webhook entry and policy names beside other parts. */
export const MAX_REVISION_NAME_LENGTH = 40;

/** The label that chooses a revision: on a namespace, or on a pod template (which wins). */
export function revisionLabel(prefix: string): string {
  return `${prefix}/rev`;
}

type Plain = Record<string, unknown>;
/** A problem at a path, as the config validator reports it (its ConfigIssue). */
type Issue = { readonly path: string; readonly message: string };
const isPlain = (value: unknown): value is Plain => value !== null && typeof value === 'object' && !Array.isArray(value);

/**
 * Every problem with the `revisions`, `tags` and `unservedRevision` fields of a config. Each revision's
 * injections are checked by `injectionIssues` (the config validator) and reported under
 * `revisions[N].`. Not called when the config has none of the three fields.
 */
export function revisionIssues(input: Plain, injectionIssues: (injections: unknown) => Issue[]): Issue[] {
  const issues: Issue[] = [];
  const add = (path: string, message: string) => issues.push({ path, message });
  const { revisions, tags, unservedRevision } = input;
  if (unservedRevision !== undefined && !UNSERVED_REVISION_ACTIONS.includes(unservedRevision as UnservedRevisionAction)) {
    add('unservedRevision', `${JSON.stringify(unservedRevision)} is not one of ${UNSERVED_REVISION_ACTIONS.join(', ')}`);
  }
  if (revisions === undefined) {
    if (tags !== undefined) add('tags', 'tags point at revisions: give revisions too');
    if (unservedRevision !== undefined) add('unservedRevision', 'applies only with revisions');
    return issues;
  }
  if (!Array.isArray(revisions) || revisions.length === 0) {
    add('revisions', 'must be a non-empty list of revisions ({ name, injections })');
    return issues;
  }
  if (Array.isArray(input.injections) && input.injections.length > 0) {
    add('injections', 'give the injections inside revisions, not beside them: with revisions, every pod gets exactly one revision');
  }
  const names = new Map<string, number>();
  const nameError = (name: unknown): string | undefined => {
    if (typeof name !== 'string') return `must be a string, got ${name === undefined ? 'nothing (the field is missing)' : JSON.stringify(name)}`;
    if (name.length > MAX_REVISION_NAME_LENGTH) return `"${name}" must be no more than ${MAX_REVISION_NAME_LENGTH} characters (got ${name.length})`;
    const error = dns1123LabelError(name);
    return error ? `"${name}" ${error}` : undefined;
  };
  revisions.forEach((revision: unknown, index: number) => {
    const path = `revisions[${index}]`;
    if (!isPlain(revision)) {
      add(path, 'must be an object ({ name, injections })');
      return;
    }
    for (const key of Object.keys(revision)) if (key !== 'name' && key !== 'injections') add(`${path}.${key}`, 'unknown field (known: name, injections)');
    const error = nameError(revision.name);
    if (error) add(`${path}.name`, error);
    else {
      const first = names.get(revision.name as string);
      if (first !== undefined) add(`${path}.name`, `duplicate revision name "${revision.name}" (also revisions[${first}])`);
      else names.set(revision.name as string, index);
    }
    for (const issue of injectionIssues(revision.injections)) add(`${path}.${issue.path}`, issue.message);
  });
  if (tags === undefined) {
    add('tags', `no tag: give one tag with default: true, so the namespaces the injector is enabled in get a revision (revisions: ${[...names.keys()].join(', ')})`);
    return issues;
  }
  if (!Array.isArray(tags)) {
    add('tags', 'must be a list of tags ({ name, revision, default? })');
    return issues;
  }
  const tagNames = new Map<string, number>();
  const defaults: string[] = [];
  tags.forEach((tag: unknown, index: number) => {
    const path = `tags[${index}]`;
    if (!isPlain(tag)) {
      add(path, 'must be an object ({ name, revision, default? })');
      return;
    }
    for (const key of Object.keys(tag)) if (key !== 'name' && key !== 'revision' && key !== 'default') add(`${path}.${key}`, 'unknown field (known: name, revision, default)');
    const error = nameError(tag.name);
    if (error) add(`${path}.name`, error);
    else if (names.has(tag.name as string)) {
      add(`${path}.name`, `tag "${tag.name}" has the name of a revision: the label ${JSON.stringify(tag.name)} could not tell which is meant, and revision "${tag.name}" could not be chosen by name`);
    } else {
      const first = tagNames.get(tag.name as string);
      if (first !== undefined) add(`${path}.name`, `duplicate tag name "${tag.name}" (also tags[${first}])`);
      else tagNames.set(tag.name as string, index);
    }
    if (typeof tag.revision !== 'string' || !names.has(tag.revision)) {
      add(`${path}.revision`, `tag ${JSON.stringify(tag.name)} names no revision: ${JSON.stringify(tag.revision)} is not one of ${[...names.keys()].join(', ')}`);
    }
    if (tag.default !== undefined && typeof tag.default !== 'boolean') add(`${path}.default`, `must be true or false, got ${JSON.stringify(tag.default)}`);
    if (tag.default === true) defaults.push(String(tag.name));
  });
  if (defaults.length === 0) add('tags', `no tag is the default: mark one default: true, so the namespaces the injector is enabled in get a revision`);
  if (defaults.length > 1) add('tags', `${defaults.map((name) => `"${name}"`).join(' and ')} are all marked default: exactly one tag is the default`);
  return issues;
}

/** Where a label value (a tag or a revision's name) leads: the revision's name, or undefined when it names neither. */
export function chosenRevision(config: ResolvedInjectorConfig, value: string | undefined): string | undefined {
  if (value === undefined || !config.revisions) return undefined;
  const tag = config.tags?.find((candidate) => candidate.name === value);
  if (tag) return tag.revision;
  return config.revisions.some((revision) => revision.name === value) ? value : undefined;
}

/** The revision the default tag points at; undefined without revisions. */
export function defaultRevision(config: ResolvedInjectorConfig): string | undefined {
  return config.tags?.find((tag) => tag.default === true)?.revision;
}

/** The label values that choose `revision`: its own name, then its tags' names. */
export function revisionChoosers(config: ResolvedInjectorConfig, revision: string): string[] {
  return [revision, ...(config.tags ?? []).filter((tag) => tag.revision === revision).map((tag) => tag.name)];
}

/** Every label value the config serves: revision names and tag names. */
export function servedChoosers(config: ResolvedInjectorConfig): string[] {
  return [...(config.revisions ?? []).map((revision) => revision.name), ...(config.tags ?? []).map((tag) => tag.name)];
}

const views = new WeakMap<ResolvedInjectorConfig, Map<string, ResolvedInjectorConfig>>();

/**
 * One revision of `config` as a config of its own: the same prefix, switch and Pod Security level, the
 * revision's injections, and `revision` set (so the engine records it on the pods it injects). The same
 * object on every call for the same config, so whatever the engine prepares for a config is made once.
 * Undefined when `config` has no such revision.
 */
export function revisionConfig(config: ResolvedInjectorConfig, name: string): ResolvedInjectorConfig | undefined {
  let byName = views.get(config);
  if (!byName) {
    byName = new Map();
    for (const revision of config.revisions ?? []) {
      byName.set(revision.name, {
        annotationPrefix: config.annotationPrefix,
        enabled: config.enabled,
        ...(config.podSecurity !== undefined ? { podSecurity: config.podSecurity } : {}),
        injections: revision.injections,
        revision: revision.name,
      });
    }
    views.set(config, byName);
  }
  return byName.get(name);
}

/** Each revision of `config` as a config of its own (revisionConfig); `[config]` when it has no revisions. */
export function revisionConfigs(config: ResolvedInjectorConfig): ResolvedInjectorConfig[] {
  if (!config.revisions) return [config];
  return config.revisions.map((revision) => revisionConfig(config, revision.name)!);
}

/** Who carries the `<prefix>/rev` label that chose: the namespace, or the object (its pod template). */
export type RevisionChooser = 'namespace' | 'workload';

/**
 * What a webhook entry asks for, by the path it calls: `''` the config as loaded (`/mutate`),
 * `revision:<name>` one revision of it (`/mutate/revisions/<name>`), `unserved:<chooser>` the answer for a
 * `<prefix>/rev` label that names nothing served (`/mutate/unserved/<chooser>`). The construct writes
 * these paths, the server and the CLI read them back, all through this pair of functions.
 */
export type AdmissionRoute = '' | `revision:${string}` | `unserved:${RevisionChooser}`;

/** The path a webhook entry calls for `route`. */
export function admissionPath(route: AdmissionRoute): string {
  if (route === '') return '/mutate';
  if (route.startsWith('revision:')) return `/mutate/revisions/${route.slice('revision:'.length)}`;
  return `/mutate/unserved/${route.slice('unserved:'.length)}`;
}

const REVISION_PATH = new RegExp(`^/mutate/revisions/([a-z0-9](?:[-a-z0-9]{0,${MAX_REVISION_NAME_LENGTH - 2}}[a-z0-9])?)$`);

/** The route of a path or URL (its query ignored), or undefined when no webhook entry calls it. */
export function admissionRoute(url: string): AdmissionRoute | undefined {
  const query = url.indexOf('?');
  const path = query === -1 ? url : url.slice(0, query);
  if (path === '/mutate') return '';
  if (path === '/mutate/unserved/namespace') return 'unserved:namespace';
  if (path === '/mutate/unserved/workload') return 'unserved:workload';
  const revision = REVISION_PATH.exec(path);
  return revision ? `revision:${revision[1]}` : undefined;
}
