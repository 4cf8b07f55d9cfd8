// The engine names a reason for every injection; this puts the particulars next to it: the trigger an
// injection wanted and what the object had instead, the annotation that opted out, the status that
// says it is already there. Read from the same object and config the engine was given.

import type { OverrideOutcome } from '../engine/container-overrides';
import { annotationKeys, type InjectionTrigger, type ResolvedInjection, type ResolvedInjectorConfig } from '../config';
import type { DecisionReason } from '../engine/mutate';
import { ownStringMap } from '../engine/pod-patch-builder';
import { findPodTemplate } from '../engine/pod-template';
import { selectorMismatch } from '../engine/webhook-match';
import type { ObjectPreview } from './preview';

export interface DecisionDetail {
  readonly injection: string;
  readonly reason: DecisionReason;
  /** The particulars, in words. */
  readonly detail: string;
  /** For an injection applied now that offers overrides: each offered field, its value and where it came from. */
  readonly overrides?: readonly OverrideOutcome[];
}

/** One offered field as explain prints it: `envoy resources.requests.cpu = 250m (pod annotation x; configured 100m)`. */
export function describeOverride(outcome: OverrideOutcome): string {
  const from = outcome.source === 'config' ? 'configured' : `${outcome.source} annotation ${outcome.annotation}; configured ${outcome.configured ?? '(unset)'}`;
  const ignored = outcome.ignored.map((entry) => `; ignored ${entry.from} value ${JSON.stringify(entry.value)}: ${entry.message}`).join('');
  return `${outcome.container} ${outcome.field} = ${outcome.value ?? '(unset)'} (${from}${ignored})`;
}

type StringMap = Record<string, string>;

/** The annotations and labels the engine reads: the pod's, or a workload's own overlaid with its template's. */
interface ObjectView {
  readonly kind: string;
  readonly annotations: StringMap;
  readonly labels: StringMap;
  /** Where `<prefix>/inject` was found: on the object itself or on its pod template. */
  readonly injectAnnotationOn: (key: string) => string;
}

function viewOf(preview: ObjectPreview, object = preview.object): ObjectView | undefined {
  if (!preview.targetKind) return undefined;
  const pod = findPodTemplate(preview.targetKind, object);
  if (typeof pod === 'string') return undefined;
  const podAnnotations = ownStringMap(pod.metadata?.annotations);
  const podLabels = ownStringMap(pod.metadata?.labels);
  if (preview.targetKind === 'Pod') {
    return { kind: 'Pod', annotations: podAnnotations, labels: podLabels, injectAnnotationOn: () => 'the Pod' };
  }
  const ownAnnotations = ownStringMap(pod.objectMetadata?.annotations);
  return {
    kind: preview.targetKind,
    annotations: { ...ownAnnotations, ...podAnnotations },
    labels: { ...ownStringMap(pod.objectMetadata?.labels), ...podLabels },
    injectAnnotationOn: (key) => (key in podAnnotations ? `the ${preview.targetKind}'s pod template` : `the ${preview.targetKind}`),
  };
}

function describeTrigger(trigger: InjectionTrigger, prefix: string, injection: string): string {
  switch (trigger.type) {
    case 'always':
      return 'always';
    case 'annotation':
      return `annotation ${trigger.key}${trigger.valuePattern !== undefined ? ` matching /^(?:${trigger.valuePattern})$/` : ''}`;
    case 'labelSelector': {
      const parts = [
        ...Object.entries(trigger.matchLabels ?? {}).map(([key, value]) => `${key}=${value}`),
        ...(trigger.matchExpressions ?? []).map((expression) =>
          expression.operator === 'Exists' || expression.operator === 'DoesNotExist'
            ? `${expression.operator === 'DoesNotExist' ? '!' : ''}${expression.key}`
            : `${expression.key} ${expression.operator === 'In' ? 'in' : 'notin'} (${(expression.values ?? []).join(', ')})`,
        ),
      ];
      return `labels ${parts.join(', ') || '(any)'}`;
    }
    case 'requested':
      return `${annotationKeys(prefix).inject} listing "${injection}"`;
  }
}

/** What the object has instead of what the trigger wanted. */
function triggerMiss(injection: ResolvedInjection, view: ObjectView, prefix: string): string {
  const trigger = injection.trigger;
  const wanted = `wants ${describeTrigger(trigger, prefix, injection.name)}`;
  switch (trigger.type) {
    case 'always':
      return wanted;
    case 'annotation': {
      const value = view.annotations[trigger.key];
      return value === undefined ? `${wanted}; the ${view.kind} has no such annotation` : `${wanted}; the ${view.kind} has ${trigger.key}: ${JSON.stringify(value)}`;
    }
    case 'labelSelector':
      // The selector's first unmet requirement says both what it wanted and what the object has.
      return selectorMismatch(trigger, view.labels, `the ${view.kind}`) ?? `${wanted}; the ${view.kind}'s labels match`;
    case 'requested': {
      const key = annotationKeys(prefix).inject;
      const value = view.annotations[key];
      return value === undefined ? `${wanted}; the ${view.kind} has no ${key} annotation` : `${wanted}; the ${view.kind} has ${key}: ${JSON.stringify(value)}`;
    }
  }
}

function triggerHit(injection: ResolvedInjection, view: ObjectView, prefix: string): string {
  const trigger = injection.trigger;
  switch (trigger.type) {
    case 'always':
      return 'trigger: always';
    case 'annotation':
      return `trigger: annotation ${trigger.key}: ${JSON.stringify(view.annotations[trigger.key] ?? '')}`;
    case 'labelSelector':
      return `trigger: ${describeTrigger(trigger, prefix, injection.name)}`;
    case 'requested': {
      const key = annotationKeys(prefix).inject;
      return `trigger: requested by ${key}: ${JSON.stringify(view.annotations[key] ?? '')}`;
    }
  }
}

/** What an injection adds, in a few words: `container envoy`, `init container wait-for-it`. */
export function describeAdditions(injection: ResolvedInjection): string {
  const names = (list: readonly { name: string }[] | undefined) => (list ?? []).map((item) => item.name).join(', ');
  const parts: string[] = [];
  const add = (label: string, list: readonly { name: string }[] | undefined) => {
    if (list && list.length > 0) parts.push(`${label}${list.length > 1 ? 's' : ''} ${names(list)}`);
  };
  add('container', injection.containers);
  add('init container', injection.initContainers);
  add('volume', injection.volumes);
  add('volume mount', injection.volumeMounts);
  add('env var', injection.env);
  add('image pull secret', injection.imagePullSecrets);
  if (injection.labels && Object.keys(injection.labels).length > 0) parts.push(`labels ${Object.keys(injection.labels).join(', ')}`);
  if (injection.annotations && Object.keys(injection.annotations).length > 0) parts.push(`annotations ${Object.keys(injection.annotations).join(', ')}`);
  for (const merge of injection.merges ?? []) parts.push(`${Object.keys(merge.fields).join(', ')} merged into ${merge.containerNames.join(', ')}`);
  return parts.join('; ');
}

/** Each injection's decision for `preview`, with its particulars; [] when the engine was not asked. */
export function decisionDetails(preview: ObjectPreview, loaded: ResolvedInjectorConfig): DecisionDetail[] {
  // With revisions, the revision the object was previewed under.
  const config = preview.applied ?? loaded;
  if (!preview.result) return [];
  const view = viewOf(preview);
  const after = viewOf(preview, preview.output);
  const prefix = config.annotationPrefix;
  const keys = annotationKeys(prefix);
  const warnings = preview.result.response.warnings ?? [];
  return preview.result.decisions.map(({ injection: name, reason }) => {
    const injection = config.injections.find((candidate) => candidate.name === name)!;
    const detail = (() => {
      switch (reason) {
        case 'disabled':
          return 'the injector config has "enabled": false';
        case 'out-of-scope':
          if (preview.targetKind && !injection.targetKinds.includes(preview.targetKind)) {
            return `targets ${injection.targetKinds.join(', ')}, not ${preview.targetKind}`;
          }
          return warnings.find((warning) => warning.startsWith('not injected:')) ?? `the webhook does not change this ${preview.gvk.kind} on CREATE`;
        case 'opted-out':
          return `${keys.inject}: "false" on ${view ? view.injectAnnotationOn(keys.inject) : 'the object'}`;
        case 'already-injected':
          return `listed in ${keys.status}: ${JSON.stringify(view?.annotations[keys.status] ?? '')}`;
        case 'trigger-not-met':
          return view ? triggerMiss(injection, after ?? view, prefix) : `wants ${describeTrigger(injection.trigger, prefix, name)}`;
        case 'render-failed':
          return warnings.find((warning) => warning.startsWith(`injection "${name}" skipped:`)) ?? 'a placeholder had no value';
        case 'no-change':
          return `${view ? triggerHit(injection, after ?? view, prefix) : 'trigger met'}, but everything it adds is already there`;
        case 'injected': {
          const additions = describeAdditions(injection);
          return `${view ? triggerHit(injection, after ?? view, prefix) : 'trigger met'}${additions ? `; adds ${additions}` : ''}`;
        }
        default:
          return reason;
      }
    })();
    const overrides = reason === 'injected' ? preview.result!.overrides.filter((outcome) => outcome.injection === name) : [];
    return { injection: name, reason, detail, ...(overrides.length > 0 ? { overrides } : {}) };
  });
}
