// The heart of the webhook: an AdmissionRequest and the config in, an AdmissionResponse out.
// No HTTP, no files, no clock: the same function runs in tests, benchmarks and the server.

import {
  PlaceholderRenderError,
  ResolvedInjection,
  ResolvedInjectorConfig,
  annotationKeys,
  containsPlaceholder,
  labelValueError,
  mapJsonStrings,
  renderPlaceholders,
  type PlaceholderValues,
} from '../config';
import type { AdmissionRequest, AdmissionResponse } from './admission-review';
import { matchesLabelSelector } from './label-selector';
import { PatchOperation, PodPatchBuilder, RenderedInjection } from './pod-patch-builder';
import { Json, findPodTemplate, targetKindOf } from './pod-template';

/** Why an injection did or did not change an object: logged at debug level and counted by label. */
export type DecisionReason =
  | 'disabled'
  | 'out-of-scope'
  | 'opted-out'
  | 'already-injected'
  | 'trigger-not-met'
  | 'render-failed'
  | 'no-change'
  | 'injected';

export interface InjectionDecision {
  readonly injection: string;
  readonly reason: DecisionReason;
}

export interface MutationResult {
  readonly response: AdmissionResponse;
  readonly decisions: readonly InjectionDecision[];
  readonly patch: readonly PatchOperation[];
}

/** Returns the AdmissionResponse for `request` under `config`. */
export function mutate(request: AdmissionRequest, config: ResolvedInjectorConfig): AdmissionResponse {
  return evaluate(request, config).response;
}

/** `mutate`, with the per-injection decisions and the patch as operations (for logs and metrics). */
export function evaluate(request: AdmissionRequest, config: ResolvedInjectorConfig): MutationResult {
  const decideAll = (reason: DecisionReason, warnings: string[] = []): MutationResult => ({
    response: allowed(request.uid, [], warnings),
    decisions: config.injections.map((injection) => ({ injection: injection.name, reason })),
    patch: [],
  });
  if (!config.enabled) return decideAll('disabled');

  const kind = targetKindOf(request.kind);
  const object = request.object;
  // Pods cannot change their containers after creation, so only workloads are injected on UPDATE.
  const operationInScope = request.operation === 'CREATE' || (request.operation === 'UPDATE' && kind !== 'Pod');
  if (!kind || !object || !operationInScope || !config.injections.some((i) => i.targetKinds.includes(kind))) {
    return decideAll('out-of-scope');
  }
  const pod = findPodTemplate(kind, object);
  if (typeof pod === 'string') return decideAll('out-of-scope', [`not injected: ${pod}`]);

  const keys = annotationKeys(config.annotationPrefix);
  const podAnnotations = stringMap(pod.metadata?.annotations);
  // A workload's own metadata and its pod template's both count; the template's wins on a clash.
  const annotations = kind === 'Pod' ? podAnnotations : { ...stringMap(pod.objectMetadata?.annotations), ...podAnnotations };
  const labels = kind === 'Pod' ? stringMap(pod.metadata?.labels) : { ...stringMap(pod.objectMetadata?.labels), ...stringMap(pod.metadata?.labels) };

  const warnings: string[] = [];
  const injectValue = annotations[keys.inject]?.trim();
  const optedOut = injectValue?.toLowerCase() === 'false';
  const requested = requestedNames(injectValue);
  if (!optedOut) {
    for (const name of requested) {
      if (!config.injections.some((injection) => injection.name === name)) {
        warnings.push(`${keys.inject} names "${name}", which is not a configured injection`);
      }
    }
  }
  const alreadyInjected = parseStatus(podAnnotations[keys.status]);
  const objectMetadata = pod.objectMetadata ?? {};
  const placeholderValues: PlaceholderValues = {
    name: (objectMetadata.name as string | undefined) || (objectMetadata.generateName as string | undefined),
    namespace: request.namespace || (objectMetadata.namespace as string | undefined),
  };

  const builder = new PodPatchBuilder(pod, warnings);
  const decisions: InjectionDecision[] = [];
  const injectedNow: string[] = [];
  for (const injection of config.injections) {
    const decide = (reason: DecisionReason) => decisions.push({ injection: injection.name, reason });
    if (!injection.targetKinds.includes(kind)) {
      decide('out-of-scope');
      continue;
    }
    if (optedOut) {
      decide('opted-out');
      continue;
    }
    if (alreadyInjected.has(injection.name)) {
      decide('already-injected');
      continue;
    }
    const trigger = triggerMet(injection, annotations, labels, requested);
    if (!trigger.met) {
      decide('trigger-not-met');
      continue;
    }
    let rendered: RenderedInjection;
    try {
      rendered = renderInjection(injection, { ...placeholderValues, annotation: trigger.annotationValue });
    } catch (error) {
      if (!(error instanceof PlaceholderRenderError)) throw error;
      warnings.push(`injection "${injection.name}" skipped: ${error.message}`);
      decide('render-failed');
      continue;
    }
    if (builder.apply(rendered)) {
      injectedNow.push(injection.name);
      decide('injected');
    } else {
      decide('no-change');
    }
  }
  if (injectedNow.length > 0) builder.setStatus(keys.status, formatStatus([...alreadyInjected, ...injectedNow]));
  return { response: allowed(request.uid, builder.operations, warnings), decisions, patch: builder.operations };
}

function allowed(uid: string, operations: readonly PatchOperation[], warnings: string[]): AdmissionResponse {
  const response: AdmissionResponse = { uid, allowed: true };
  if (operations.length > 0) {
    response.patchType = 'JSONPatch';
    response.patch = Buffer.from(JSON.stringify(operations)).toString('base64');
  }
  if (warnings.length > 0) response.warnings = warnings;
  return response;
}

function stringMap(value: unknown): Record<string, string> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return {};
  return value as Record<string, string>;
}

function requestedNames(value: string | undefined): Set<string> {
  const names = new Set<string>();
  if (!value) return names;
  for (const part of value.split(',')) {
    const name = part.trim();
    // "true" asks for nothing in particular; "false" is the opt-out.
    if (name && name !== 'true' && name !== 'false') names.add(name);
  }
  return names;
}

/** The status annotation: the comma-separated names of the injections the pod carries. */
export function parseStatus(value: string | undefined): Set<string> {
  return requestedNames(value);
}

export function formatStatus(names: readonly string[]): string {
  return [...new Set(names)].join(',');
}

const patternCache = new WeakMap<ResolvedInjection, RegExp>();

function triggerMet(
  injection: ResolvedInjection,
  annotations: Record<string, string>,
  labels: Record<string, string>,
  requested: Set<string>,
): { met: boolean; annotationValue?: string } {
  const trigger = injection.trigger;
  switch (trigger.type) {
    case 'always':
      return { met: true };
    case 'requested':
      return { met: requested.has(injection.name) };
    case 'labelSelector':
      return { met: matchesLabelSelector(trigger, labels) };
    case 'annotation': {
      const value = annotations[trigger.key];
      if (typeof value !== 'string') return { met: false };
      if (trigger.valuePattern !== undefined) {
        let pattern = patternCache.get(injection);
        if (!pattern) patternCache.set(injection, (pattern = new RegExp(`^(?:${trigger.valuePattern})$`)));
        if (!pattern.test(value)) return { met: false };
      }
      return { met: true, annotationValue: value };
    }
  }
}

const RENDERED_FIELDS = [
  'containers', 'initContainers', 'volumes', 'volumeMounts', 'env', 'imagePullSecrets', 'labels', 'annotations', 'merges',
] as const;
const templatedCache = new WeakMap<ResolvedInjection, boolean>();

function renderInjection(injection: ResolvedInjection, values: PlaceholderValues): RenderedInjection {
  let templated = templatedCache.get(injection);
  if (templated === undefined) {
    templated = RENDERED_FIELDS.some((field) => containsPlaceholder(injection[field]));
    templatedCache.set(injection, templated);
  }
  if (!templated) return injection as unknown as RenderedInjection;
  const rendered: Record<string, unknown> = { name: injection.name };
  for (const field of RENDERED_FIELDS) {
    if (injection[field] !== undefined) rendered[field] = mapJsonStrings(injection[field], (text) => renderPlaceholders(text, values));
  }
  for (const [key, value] of Object.entries((rendered.labels ?? {}) as Json)) {
    const error = labelValueError(value as string);
    if (error) throw new PlaceholderRenderError(`label "${key}" would be "${value}", which ${error}`);
  }
  return rendered as unknown as RenderedInjection;
}
