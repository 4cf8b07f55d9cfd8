// The heart of the webhook: an AdmissionRequest and the config in, an AdmissionResponse out.
// No HTTP, no files, no clock: the same function runs in tests, benchmarks and the server.

import {
  PlaceholderRenderError,
  ResolvedInjection,
  ResolvedInjectorConfig,
  labelValueError,
  mapJsonStrings,
  initialReadinessCondition,
  renderPlaceholders,
  type PlaceholderValues,
} from '../config';
import type { AdmissionRequest, AdmissionResponse } from './admission-review';
import { matchesLabelSelector } from './label-selector';
import { ContainerPlacement, PatchOperation, PodPatchBuilder, RenderedInjection, ownStringMap } from './pod-patch-builder';
import { Json, isJsonObject } from './json-object';
import { PodTemplate, findPodTemplate, targetKindOf } from './pod-template';
import { QosClass, QosTally, hasPodLevelResources, qosClassOf, withLimitsAtRequests } from './qos';
import { type OverrideOutcome, applyOverrides, ignoredOverrideWarning, notOfferedWarning, staleTemplateOverrides } from './container-overrides';
import type { EvaluationContext, InjectionDecision, MutationResult, PodWarning, DecisionReason } from './decisions';
import { type PreparedInjection, RENDERED_FIELDS, preparedOf } from './prepared-config';
import { podOverrideWarnings } from './pod-override-preview';
import { PodBudget, podResourcesWarning } from './pod-resources';

export type { DecisionReason, EvaluationContext, InjectionDecision, MutationResult, PodWarning, PodWarningReason, UnservedRevisionChooser } from './decisions';

const NO_CONTEXT: EvaluationContext = Object.freeze({});
const NO_OVERRIDES: readonly OverrideOutcome[] = Object.freeze([]);

/** Returns the AdmissionResponse for `request` under `config`. */
export function mutate(request: AdmissionRequest, config: ResolvedInjectorConfig, context: EvaluationContext = NO_CONTEXT): AdmissionResponse {
  return evaluate(request, config, context).response;
}

/** `mutate`, with the per-injection decisions and the patch as operations (for logs and metrics). */
export function evaluate(request: AdmissionRequest, config: ResolvedInjectorConfig, context: EvaluationContext = NO_CONTEXT): MutationResult {
  // A pod's status write: the readiness gate's condition, whatever else the config says (even
  // disabled: a pod with the gate is never Ready without its condition).
  if (request.subResource === 'status') return readinessConditionDefault(request, config);
  if (!config.enabled) return decidedAll(request, config, 'disabled');

  const kind = targetKindOf(request.kind);
  const object = request.object;
  // Pods cannot change their containers after creation, so only workloads are injected on UPDATE.
  const operationInScope = request.operation === 'CREATE' || (request.operation === 'UPDATE' && kind !== 'Pod');
  const prepared = preparedOf(config);
  if (!kind || !object || !operationInScope) return decidedAll(request, config, 'out-of-scope');
  if (!prepared.targetKinds.has(kind)) {
    // A workload no injection targets may still carry override values for the pods it makes.
    if (prepared.podOverridesPreviewed[kind].size === 0) return decidedAll(request, config, 'out-of-scope');
    const template = findPodTemplate(kind, object);
    const said = typeof template === 'string' ? [] : podOverrideWarnings(request, kind, template, config, context, prepared.podOverridesPreviewed[kind], evaluate);
    return decidedAll(request, config, 'out-of-scope', said);
  }
  const pod = findPodTemplate(kind, object);
  if (typeof pod === 'string') return decidedAll(request, config, 'out-of-scope', [`not injected: ${pod}`]);

  const keys = prepared.keys;
  const objectAnnotations = kind === 'Pod' ? undefined : ownStringMap(pod.objectMetadata?.annotations);
  const podAnnotations = ownStringMap(pod.metadata?.annotations);
  // A workload's own metadata and its pod template's both count; the template's wins on a clash.
  const annotations = objectAnnotations ? merged(objectAnnotations, podAnnotations) : podAnnotations;

  const warnings: string[] = [];
  const injectValue = annotations[keys.inject]?.trim();
  const optedOut = injectValue?.toLowerCase() === 'false';
  const requested = injectValue ? requestedNames(injectValue) : NO_NAMES;
  if (!optedOut && requested.size > 0) {
    const unknown = [...requested].filter((name) => !config.injections.some((injection) => injection.name === name));
    if (unknown.length > 0) {
      const shown = unknown.slice(0, 5).map((name) => `"${name.slice(0, 63)}"`).join(', ');
      const more = unknown.length > 5 ? ` and ${unknown.length - 5} more` : '';
      warnings.push(`${keys.inject} names ${shown}${more}, which ${unknown.length === 1 ? 'is not a configured injection' : 'are not configured injections'}`);
    }
  }
  const statusValue = podAnnotations[keys.status];
  const alreadyInjected: ReadonlySet<string> = statusValue ? parseStatus(statusValue) : NO_NAMES;
  // Made when a templated injection first needs them.
  let placeholderValues: PlaceholderValues | undefined;
  const placeholdersFor = (): PlaceholderValues => {
    if (placeholderValues) return placeholderValues;
    const objectMetadata = pod.objectMetadata ?? {};
    return (placeholderValues = {
      name: stringOrUndefined(objectMetadata.name) || stringOrUndefined(objectMetadata.generateName),
      namespace: request.namespace || stringOrUndefined(objectMetadata.namespace),
    });
  };

  const podWarnings: PodWarning[] = [];
  /** An override value not used: shown in the answer, and counted by the offered annotation (or a fixed word) and why. */
  const overrideWarning = (injection: string, message: string, annotation: string, reason: NonNullable<PodWarning['override']>['reason']) => {
    warnings.push(message);
    podWarnings.push({ injection, reason: 'override-ignored', message, shown: true, override: { annotation, reason } });
  };
  // Each injection's decision, by its place in the config.
  const decisions: InjectionDecision[] = new Array(prepared.injections.length);
  const pending: PreparedInjection[] = [];
  let injectedContainerNames: Set<string> | undefined;
  for (const entry of prepared.injections) {
    const injection = entry.injection;
    if (!entry.targetsKind[kind]) decisions[entry.index] = entry.decisions['out-of-scope'];
    else if (optedOut) decisions[entry.index] = entry.decisions['opted-out'];
    else if (alreadyInjected.has(injection.name)) {
      decisions[entry.index] = entry.decisions['already-injected'];
      // A workload's template injected before keeps the values of that moment: say so when they differ.
      if (entry.offersOverrides && kind !== 'Pod') {
        const containers = [...(Array.isArray(pod.spec.containers) ? pod.spec.containers : []), ...(Array.isArray(pod.spec.initContainers) ? pod.spec.initContainers : [])];
        for (const message of staleTemplateOverrides(injection, containers, annotations, context.namespaceAnnotations)) {
          overrideWarning(injection.name, message, '(template injected before)', 'template-injected-before');
        }
      }
      injectedContainerNames ??= new Set();
      for (const container of [...(injection.containers ?? []), ...(injection.initContainers ?? [])]) injectedContainerNames.add(container.name);
    } else pending.push(entry);
  }

  // podAnnotations is not read again here: the builder takes it over as its running copy.
  const builder = new PodPatchBuilder(pod, warnings, injectedContainerNames ?? NO_NAMES, podAnnotations);
  const injectedNow: string[] = [];
  /** `name=hash` of each of injectedNow, in the same order. */
  const hashEntries: string[] = [];
  const jobPod = isJobPod(pod);
  const podResources = pod.spec.resources;
  // The QoS class is tallied once over the pod's containers, then each injection's containers are
  // added to the tally; an injection that merges resources into existing containers re-tallies.
  // Pod-level resources decide alone, so no injection changes the class of such a pod.
  const podLevelResources = hasPodLevelResources(podResources);
  // What the pod sets at pod level, raised by each injection's containers under `add` (read once).
  const budget = podLevelResources ? PodBudget.of(podResources) : undefined;
  let qosClass: QosClass | undefined | null = null; // null: not computed yet
  let tally: QosTally | undefined;
  let overrideOutcomes: OverrideOutcome[] | undefined;
  let namespaceWarned = false;
  // Until nothing more fires: an injection may add the label or annotation another one triggers on,
  // and a second call must find nothing left to do.
  for (let progressed = pending.length > 0; progressed; ) {
    progressed = false;
    const currentAnnotations = objectAnnotations ? merged(objectAnnotations, builder.annotations) : builder.annotations;
    // Read only for a label selector: most configs have none.
    let currentLabels: Record<string, string> | undefined;
    const labelsNow = () => (currentLabels ??= kind === 'Pod' ? builder.labels : merged(ownStringMap(pod.objectMetadata?.labels), builder.labels));
    for (let index = 0; index < pending.length; index++) {
      const entry = pending[index];
      const injection = entry.injection;
      const trigger = triggerMet(entry, currentAnnotations, labelsNow, requested);
      if (trigger === false) continue;
      removeAt(pending, index);
      if (entry.audit) {
        // Changes nothing, so no other trigger can be met because of it: go on with the next one.
        decisions[entry.index] = entry.decisions.audit;
        warnings.push(entry.audit.message);
        podWarnings.push(entry.audit);
        index--;
        continue;
      }
      progressed = true;
      let rendered: RenderedInjection;
      // Whether the containers added are the config's own objects, the same on every request (not
      // rendered for this object, nor rewritten for a Guaranteed pod): their QoS figures are kept.
      let configOwn = !entry.templated;
      try {
        rendered = entry.templated
          ? renderInjection(injection, { ...placeholdersFor(), annotation: typeof trigger === 'string' ? trigger : undefined })
          : (injection as unknown as RenderedInjection);
      } catch (error) {
        if (!(error instanceof PlaceholderRenderError)) throw error;
        warnings.push(`injection "${injection.name}" skipped: ${error.message}`);
        decisions[entry.index] = entry.decisions['render-failed'];
        index--; // the next pending injection moved into this place
        continue;
      }
      if (entry.offersOverrides) {
        const applied = applyOverrides(injection, rendered, annotations, context.namespaceAnnotations);
        if (applied) {
          rendered = applied.rendered;
          if (applied.changed) configOwn = false;
          (overrideOutcomes ??= []).push(...applied.outcomes);
          if (context.namespaceUnknown !== undefined && !namespaceWarned && injection.overrides!.some((override) => override.fromNamespace === true)) {
            namespaceWarned = true;
            overrideWarning(injection.name, `namespace ${request.namespace ?? ''} defaults for overrides not applied: ${context.namespaceUnknown}`, '(namespace)', 'namespace-unknown');
          }
          for (const outcome of applied.outcomes) {
            for (const ignored of outcome.ignored) overrideWarning(injection.name, ignoredOverrideWarning(ignored, outcome, request.namespace), ignored.annotation, ignored.reason);
          }
        }
      }
      const changesContainers = entry.changesContainers;
      if (changesContainers && qosClass === null) {
        if (podLevelResources) qosClass = qosClassOf([], podResources);
        else qosClass = (tally = QosTally.over(builder.containersNow())).qosClass();
      }
      const podResourcesPolicy = injection.podResources ?? 'add';
      // Under `share` the pod's cpu and memory figures stay, and so does its class: limits are left alone.
      if (injection.qos === 'preserve-guaranteed' && qosClass === 'Guaranteed' && !(budget && podResourcesPolicy === 'share')) {
        rendered = { ...rendered, containers: rendered.containers?.map(withLimitsAtRequests), initContainers: rendered.initContainers?.map(withLimitsAtRequests) };
        configOwn = false;
      }
      const budgetSaid: string[] = [];
      if (budget && podResourcesPolicy === 'share' && changesContainers) {
        rendered = { ...rendered, containers: rendered.containers?.map((c) => budget.shared(c, budgetSaid)), initContainers: rendered.initContainers?.map((c) => budget.shared(c, budgetSaid)) };
        configOwn = false;
      }
      const placement = placementFor(injection, jobPod);
      const addedBefore = builder.added.length;
      if (builder.apply(rendered, placement)) {
        injectedNow.push(injection.name);
        hashEntries.push(entry.hashEntry);
        decisions[entry.index] = entry.decisions.injected;
        if (budget && builder.added.length > addedBefore) {
          budgetSaid.push(...budget.add(builder.added.slice(addedBefore), podResourcesPolicy));
          if (budgetSaid.length > 0) {
            const message = podResourcesWarning(injection, budgetSaid);
            warnings.push(message);
            podWarnings.push({ injection: injection.name, reason: 'pod-resources', message, shown: true });
          }
        }
        if (changesContainers) {
          let after: QosClass | undefined;
          if (podLevelResources) after = budget ? qosClassOf([], budget.qosResources()) : (qosClass ?? undefined);
          else if (entry.mergesResources) after = (tally = QosTally.over(builder.containersNow())).qosClass();
          else {
            for (let i = addedBefore; i < builder.added.length; i++) tally!.add(builder.added[i], configOwn);
            after = tally!.qosClass();
          }
          if (qosClass && after && after !== qosClass) {
            const warning = qosWarningOf(injection, qosClass, after);
            if (warning.shown) warnings.push(warning.message);
            podWarnings.push(warning);
          }
          qosClass = after;
        }
        if (jobPod && builder.regularContainersAdded.length > 0) {
          const names = builder.regularContainersAdded.map((name) => `"${name}"`).join(', ');
          const message = `injection "${injection.name}" adds container ${names} to a Job's pod as a regular container: the Job will not complete while it runs; set nativeSidecars: "jobs" on the injection`;
          warnings.push(message);
          podWarnings.push({ injection: injection.name, reason: 'job-never-completes', message, shown: true });
        }
      } else {
        decisions[entry.index] = entry.decisions['no-change'];
      }
      break; // re-read labels and annotations before the next trigger
    }
  }
  for (const entry of pending) decisions[entry.index] = entry.decisions['trigger-not-met'];
  if (overrideOutcomes !== undefined) {
    // A key under an override's prefix that no override offers: a typo, or a field not offered.
    for (const key of Object.keys(annotations)) {
      const slash = key.indexOf('/');
      if (slash <= 0 || !prepared.overridePrefixes.has(key.slice(0, slash + 1)) || prepared.knownKeys.has(key)) continue;
      const offered = [...prepared.offeredKeys].filter((offeredKey) => offeredKey.startsWith(key.slice(0, slash + 1)));
      overrideWarning('', notOfferedWarning(key, offered), '(not offered)', 'not-offered');
    }
  }
  if (prepared.anyReadinessGate && injectedNow.length > 0 && prepared.injections.some((entry) => entry.injection.readinessGate === true && decisions[entry.index].reason === 'injected')) {
    builder.addReadinessGate(prepared.readinessGate);
  }
  if (budget) for (const [key, value] of budget.changes()) builder.setPodResource(key, value);
  builder.finish();
  if (injectedNow.length > 0) {
    builder.setStatus(keys.status, formatStatus([...alreadyInjected, ...injectedNow]));
    // Beside the names, each injection's hash as configured now: appended, never parsed, so an
    // earlier value (from a reinvocation, or from whoever wrote the pod) costs only its copy.
    builder.setStatus(keys.hashes, appendHashes(builder.annotations[keys.hashes], hashEntries));
    // The revision that injected something now. A pod made from a template another revision injected
    // inherits that one's annotation: the revision of its own injection replaces it, and `status`
    // measures every injection it carries against the revision it should run.
    if (config.revision !== undefined && builder.annotations[keys.revision] !== config.revision) builder.setStatus(keys.revision, config.revision);
  }
  if (prepared.podOverridesPreviewed[kind].size > 0) {
    for (const message of podOverrideWarnings(request, kind, pod, config, context, prepared.podOverridesPreviewed[kind], evaluate)) {
      if (!warnings.includes(message)) warnings.push(message);
    }
  }
  const operations = builder.operations;
  const patch = operations.length > 0 ? prepared.encoder.encode(operations) : undefined;
  return { response: allowed(request.uid, patch, warnings), decisions, patch: operations, podWarnings, overrides: overrideOutcomes ?? NO_OVERRIDES };
}

/**
 * The answer to a pod's status write (`pods/status`): a pod with the injector's readiness gate and no
 * condition for it yet gets the condition True, so it is Ready as soon as its containers are. The
 * webhook cannot set it when the pod is created (the apiserver resets a new pod's status), and no
 * controller runs: the kubelet's first status write is where it goes. Once there, only `rollout
 * --in-place` changes it. No injection decides anything here: the decisions are empty.
 */
function readinessConditionDefault(request: AdmissionRequest, config: ResolvedInjectorConfig): MutationResult {
  const object = request.object;
  const conditionType = preparedOf(config).readinessGate.conditionType;
  let patch: string | undefined;
  let operations: PatchOperation[] = [];
  if (request.operation === 'UPDATE' && targetKindOf(request.kind) === 'Pod' && isJsonObject(object) && isJsonObject(object.spec)) {
    const gates = object.spec.readinessGates;
    const gated = Array.isArray(gates) && gates.some((gate) => isJsonObject(gate) && gate.conditionType === conditionType);
    const status = object.status;
    const conditions = isJsonObject(status) ? status.conditions : undefined;
    const present = Array.isArray(conditions) && conditions.some((condition) => isJsonObject(condition) && condition.type === conditionType);
    if (gated && !present) {
      const condition = initialReadinessCondition(config.annotationPrefix);
      operations = [
        Array.isArray(conditions) ? { op: 'add', path: '/status/conditions/-', value: condition }
        : isJsonObject(status) ? { op: 'add', path: '/status/conditions', value: [condition] }
        : { op: 'add', path: '/status', value: { conditions: [condition] } },
      ];
      patch = Buffer.from(JSON.stringify(operations)).toString('base64');
    }
  }
  return { response: allowed(request.uid, patch, []), decisions: [], patch: operations, podWarnings: [], overrides: NO_OVERRIDES };
}

/** The hashes annotation with the `name=hash` entries of the injections applied now appended, as the policies append them. */
function appendHashes(existing: string | undefined, entries: readonly string[]): string {
  let text = existing ?? '';
  for (const entry of entries) text += (text === '' ? '' : ',') + entry;
  return text;
}

/** `list.splice(index, 1)` without the array of removed items splice makes. */
function removeAt<T>(list: T[], index: number): void {
  for (let i = index + 1; i < list.length; i++) list[i - 1] = list[i];
  list.length--;
}

/** QoS warnings by injection and classes, made once each (a config's injections change the same
 * classes of pod the same way, request after request). */
const qosWarningCache = new WeakMap<ResolvedInjection, Partial<Record<QosClass, Partial<Record<QosClass, PodWarning>>>>>();

/** Higher is kept longer under node pressure: a change to a lower rank is what a user acts on. */
const QOS_RANK: Readonly<Record<QosClass, number>> = { BestEffort: 0, Burstable: 1, Guaranteed: 2 };

function qosWarningOf(injection: ResolvedInjection, before: QosClass, after: QosClass): PodWarning {
  let byClasses = qosWarningCache.get(injection);
  if (byClasses === undefined) qosWarningCache.set(injection, (byClasses = {}));
  const byAfter = (byClasses[before] ??= {});
  let warning = byAfter[after];
  if (warning === undefined) {
    const advice = before === 'Guaranteed' && injection.qos !== 'preserve-guaranteed' ? '; set qos: "preserve-guaranteed" on the injection to keep it' : '';
    const message = `injection "${injection.name}" changes the pod's QoS class from ${before} to ${after}${advice}`;
    const shown = QOS_RANK[after] < QOS_RANK[before];
    warning = Object.freeze({ injection: injection.name, reason: 'qos-class-changed', message, shown, qosClass: Object.freeze({ before, after }) });
    byAfter[after] = warning;
  }
  return warning;
}

/** The same decision for every injection, and nothing to change. */
function decidedAll(request: AdmissionRequest, config: ResolvedInjectorConfig, reason: DecisionReason, warnings: string[] = []): MutationResult {
  return {
    response: allowed(request.uid, undefined, warnings),
    decisions: preparedOf(config).injections.map((entry) => entry.decisions[reason]),
    patch: [],
    podWarnings: [],
    overrides: NO_OVERRIDES,
  };
}

/** A Job's pod: the pod template of a Job or CronJob, or a Pod whose owner is a Job. */
function isJobPod(pod: PodTemplate): boolean {
  if (pod.kind === 'Job' || pod.kind === 'CronJob') return true;
  if (pod.kind !== 'Pod') return false;
  const owners = pod.objectMetadata?.ownerReferences;
  return Array.isArray(owners) && owners.some((owner) => isJsonObject(owner) && owner.kind === 'Job' && typeof owner.apiVersion === 'string' && owner.apiVersion.startsWith('batch/'));
}

const PLACEMENTS = {
  regular: { native: false, position: 'last' },
  nativeFirst: { native: true, position: 'first' },
  nativeLast: { native: true, position: 'last' },
} as const satisfies Record<string, ContainerPlacement>;

function placementFor(injection: ResolvedInjection, jobPod: boolean): ContainerPlacement {
  const mode = injection.nativeSidecars ?? 'never';
  if (!(mode === 'always' || (mode === 'jobs' && jobPod))) return PLACEMENTS.regular;
  return injection.nativeSidecarPosition === 'first' ? PLACEMENTS.nativeFirst : PLACEMENTS.nativeLast;
}

/** `a` overlaid with `b`, without a prototype (a label called "constructor" is just a label). */
function merged(a: Record<string, string>, b: Record<string, string>): Record<string, string> {
  return Object.assign(Object.create(null), a, b);
}

function stringOrUndefined(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

/** The apiserver keeps only a few KiB of warnings: a bounded number, each of bounded length. */
const MAX_WARNINGS = 20;
const MAX_WARNING_LENGTH = 256;

function boundedWarnings(warnings: string[]): string[] {
  // The common case, a warning or two of ordinary length, is kept as it is (the array is this request's own).
  if (warnings.length <= MAX_WARNINGS && warnings.every((warning) => warning.length <= MAX_WARNING_LENGTH)) return warnings;
  const out = warnings.slice(0, MAX_WARNINGS).map((warning) => (warning.length > MAX_WARNING_LENGTH ? warning.slice(0, MAX_WARNING_LENGTH - 3) + '...' : warning));
  if (warnings.length > MAX_WARNINGS) out.push(`and ${warnings.length - MAX_WARNINGS} more warnings`);
  return out;
}

/** The response allowing the object, with its base64 patch when there is one. */
function allowed(uid: string, patch: string | undefined, warnings: string[]): AdmissionResponse {
  const response: AdmissionResponse = { uid, allowed: true };
  if (patch !== undefined) {
    response.patchType = 'JSONPatch';
    response.patch = patch;
  }
  if (warnings.length > 0) response.warnings = boundedWarnings(warnings);
  return response;
}

/** No names: shared, never added to. */
const NO_NAMES: ReadonlySet<string> = new Set<string>();

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
  // One admission's few names are checked against the earlier ones, without a Set, an array and join;
  // a long list (a status annotation someone wrote by hand) goes through a Set, in linear time.
  if (names.length > 8) return [...new Set(names)].join(',');
  let text = '';
  for (let i = 0; i < names.length; i++) if (names.indexOf(names[i]) === i) text += (i === 0 ? '' : ',') + names[i];
  return text;
}

/** Whether the injection's trigger is met: false, true, or for an annotation trigger the annotation's value. */
function triggerMet(
  entry: PreparedInjection,
  annotations: Record<string, string>,
  labels: () => Record<string, string>,
  requested: ReadonlySet<string>,
): boolean | string {
  const trigger = entry.injection.trigger;
  switch (trigger.type) {
    case 'always':
      return true;
    case 'requested':
      return requested.has(entry.injection.name);
    case 'labelSelector':
      return matchesLabelSelector(trigger, labels());
    case 'annotation': {
      const value = annotations[trigger.key];
      if (typeof value !== 'string') return false;
      // RE2: linear in the value's length, whatever the pattern; matches() is a whole-value match.
      if (entry.valuePattern !== undefined && !entry.valuePattern.matches(value)) return false;
      return value;
    }
  }
}

/** An injection with placeholders, rendered for one object. */
function renderInjection(injection: ResolvedInjection, values: PlaceholderValues): RenderedInjection {
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
