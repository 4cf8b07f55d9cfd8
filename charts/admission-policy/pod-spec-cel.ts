// CEL for what an injection puts in the pod spec beside its containers: where its first-placed native
// sidecars go among the init containers, whether the pod gets them as native sidecars at all, and the
// readiness gate.

import { ResolvedInjection, ResolvedInjectorConfig, readinessConditionType } from '../../webhook/config';
import { celString, celStringList } from './cel-text';
import { concat, op } from './mutation-text';
import type { TemplateShape } from './template-shapes';

/**
 * CEL: where this injection's first-placed native sidecars go among the init containers: after
 * those that earlier injections (in config order, listed in the status annotation) placed first.
 */
export function firstIndexExpression(template: string, config: ResolvedInjectorConfig, injection: ResolvedInjection): string {
  const t = template;
  const own = config.injections.indexOf(injection);
  const earlier = config.injections
    .slice(0, own < 0 ? 0 : own)
    .filter((other) => (other.nativeSidecars ?? 'never') !== 'never' && other.nativeSidecarPosition === 'first' && (other.containers ?? []).length > 0)
    .map((other) => `(${celString(other.name)} in variables.statusNames ? ${celStringList((other.containers ?? []).map((c) => c.name))} : [])`);
  if (earlier.length === 0) return '0';
  return `has(${t}.spec.initContainers) ? size(${t}.spec.initContainers.filter(c, c.name in ${concat(earlier)})) : 0`;
}

/** CEL: whether the pod (template) has the readiness gate, and the add that gives it the gate. */
export function readinessGateAdd(template: string, pointer: string, prefix: string): { present: string; add: string } {
  const t = template;
  const type = celString(readinessConditionType(prefix));
  const gate = `{"conditionType": ${type}}`;
  const append = op(celString(`${pointer}/spec/readinessGates/-`), gate);
  const create = op(celString(`${pointer}/spec/readinessGates`), `[${gate}]`);
  return {
    present: `(has(${t}.spec.readinessGates) && ${t}.spec.readinessGates.exists(g, g.conditionType == ${type}))`,
    add: `has(${t}.spec.readinessGates) ? ${append} : ${create}`,
  };
}

/** CEL: this object's pod gets the injection's containers as native sidecars ('false' when never). */
export function nativeSidecarCondition(injection: ResolvedInjection, shape: TemplateShape): string {
  const mode = injection.nativeSidecars ?? 'never';
  if (mode === 'never' || (injection.containers ?? []).length === 0) return 'false';
  if (mode === 'always') return 'true';
  // 'jobs': the pod template of a Job or CronJob, or a Pod a batch Job owns.
  switch (shape) {
    case 'cronjobs':
      return 'true';
    case 'workloads':
      return 'request.kind.kind == "Job"';
    case 'pods':
      return 'has(object.metadata.ownerReferences) && object.metadata.ownerReferences.exists(o, o.kind == "Job" && o.apiVersion.startsWith("batch/"))';
  }
}
