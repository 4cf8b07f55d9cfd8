// A workload's pod template, admitted as the pods it will make: the warnings their admission would
// carry for a bad override value. An injection that targets `Pod` reads its overrides from each pod,
// so a value out of bounds in a Deployment's template is ignored pod by pod, and the warning goes to
// the ReplicaSet controller, which nobody reads. Said at the workload's admission instead, `kubectl
// apply` prints it to the person who typed the value. Pure, like the engine.

import type { ResolvedInjectorConfig, TargetKind } from '../config';
import type { AdmissionRequest } from './admission-review';
import type { EvaluationContext, MutationResult } from './decisions';
import type { PodTemplate } from './pod-template';
import { isJsonObject } from './json-object';
import { preparedOf } from './prepared-config';

const POD_KIND = Object.freeze({ group: '', version: 'v1', kind: 'Pod' });

/** The warnings that are about the values an app team wrote: not the namespace's unknown defaults, nor a template's first injection. */
const PREVIEWED_REASONS: ReadonlySet<string> = new Set(['unparsable', 'out-of-bounds', 'not-allowed', 'request-above-limit', 'not-offered']);

/**
 * The override warnings the pods of `template` would get from the injections in `previewed` (and a key
 * under an offered prefix that no override reads), by evaluating the template as a pod with `evaluate`.
 * The template as admitted, before any patch of this admission: an injection of the workload itself
 * that adds a label a pod's trigger reads is not seen here (the pods still warn).
 */
export function podOverrideWarnings(
  request: AdmissionRequest,
  kind: TargetKind,
  template: PodTemplate,
  config: ResolvedInjectorConfig,
  context: EvaluationContext,
  previewed: ReadonlySet<string>,
  evaluate: (request: AdmissionRequest, config: ResolvedInjectorConfig, context: EvaluationContext) => MutationResult,
): string[] {
  if (kind === 'Pod' || previewed.size === 0 || !carriesOverrideValues(template, config, context)) return [];
  const pod: AdmissionRequest = {
    uid: request.uid,
    kind: POD_KIND,
    operation: 'CREATE',
    namespace: request.namespace,
    object: { apiVersion: 'v1', kind: 'Pod', metadata: template.metadata ?? {}, spec: template.spec },
  };
  const messages: string[] = [];
  for (const warning of evaluate(pod, config, context).podWarnings) {
    const override = warning.override;
    if (override === undefined || !PREVIEWED_REASONS.has(override.reason)) continue;
    // '' is a key no override offers: the template carries it whichever injection applies.
    if (warning.injection !== '' && !previewed.has(warning.injection)) continue;
    messages.push(warning.message);
  }
  return messages;
}

/** Whether the template or its namespace holds a key under an offered prefix: most workloads hold none, and cost nothing here. */
function carriesOverrideValues(template: PodTemplate, config: ResolvedInjectorConfig, context: EvaluationContext): boolean {
  const prefixes = preparedOf(config).overridePrefixes;
  const underPrefix = (annotations: unknown) => {
    if (!isJsonObject(annotations)) return false;
    for (const key of Object.keys(annotations)) {
      const slash = key.indexOf('/');
      if (slash > 0 && prefixes.has(key.slice(0, slash + 1))) return true;
    }
    return false;
  };
  return underPrefix(template.metadata?.annotations) || underPrefix(context.namespaceAnnotations);
}
