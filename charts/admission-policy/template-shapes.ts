// Where the pod template sits in the objects a policy matches (a Pod, `spec.template`, a CronJob's
// `spec.jobTemplate.spec.template`), and the resource rules of each: one policy per shape.

import { ResolvedInjection, TargetKind, targetKindRules } from '../../webhook/config';
import type { NamedRuleWithOperations } from './admission-policy-types';


/** Where the pod template sits in the admitted object. */
export type TemplateShape = 'pods' | 'workloads' | 'cronjobs';

export interface ShapeDefinition {
  readonly kinds: readonly TargetKind[];
  /** CEL expression of the pod (template). */
  readonly template: string;
  /** JSON pointer of the pod (template). */
  readonly pointer: string;
  /** CEL condition: the object has a pod (template) spec with containers. */
  readonly present: string;
}

export const TEMPLATE_SHAPES: Readonly<Record<TemplateShape, ShapeDefinition>> = {
  pods: {
    kinds: ['Pod'],
    template: 'object',
    pointer: '',
    present: 'has(object.spec) && has(object.spec.containers)',
  },
  workloads: {
    kinds: ['Deployment', 'StatefulSet', 'DaemonSet', 'ReplicaSet', 'Job'],
    template: 'object.spec.template',
    pointer: '/spec/template',
    present: 'has(object.spec) && has(object.spec.template) && has(object.spec.template.spec) && has(object.spec.template.spec.containers)',
  },
  cronjobs: {
    kinds: ['CronJob'],
    template: 'object.spec.jobTemplate.spec.template',
    pointer: '/spec/jobTemplate/spec/template',
    present:
      'has(object.spec) && has(object.spec.jobTemplate) && has(object.spec.jobTemplate.spec) && has(object.spec.jobTemplate.spec.template) && ' +
      'has(object.spec.jobTemplate.spec.template.spec) && has(object.spec.jobTemplate.spec.template.spec.containers)',
  },
};


/** The template shapes an injection's target kinds use. */
export function shapesOf(injection: ResolvedInjection): TemplateShape[] {
  return (Object.keys(TEMPLATE_SHAPES) as TemplateShape[]).filter((shape) => TEMPLATE_SHAPES[shape].kinds.some((kind) => injection.targetKinds.includes(kind)));
}

/** The resource rules of a policy matching `kinds`: the webhook's rules (targetKindRules). */
export function policyResourceRules(kinds: readonly TargetKind[]): NamedRuleWithOperations[] {
  return targetKindRules(kinds);
}

