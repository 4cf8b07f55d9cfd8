// Injections in audit mode, on the policy backend: what the webhook does for them (a warning naming
// what it would add, no change), as a ValidatingAdmissionPolicy per template shape bound with
// validationActions [Warn, Audit]. A mutating policy cannot answer "I would have added this", but a
// validating one runs after every mutation and can warn: each audit injection is one validation that
// fails exactly where its MutatingAdmissionPolicy would have applied it (the same CEL guard: kind,
// not already injected, trigger, placeholders; the same match conditions: a pod spec, not opted out),
// with the webhook's words (config/audit-message.ts). Its failurePolicy is Ignore: an audit never
// stands in a pod's way.

import { type ResolvedInjectorConfig, auditMessage } from '../../webhook/config';
import type { ValidatingAdmissionPolicySpec } from './admission-policy-types';
import { membersByShape } from './injection-policy';
import { type TemplateShape, policyResourceRules } from './template-shapes';

/** The audit policy of one template shape. */
export interface AuditShapePolicy {
  readonly shape: TemplateShape;
  /** Its injections, one validation each, in config order. */
  readonly injections: readonly string[];
  readonly spec: ValidatingAdmissionPolicySpec;
}

/** The audit policies of `injections` (names of injections of `config` in audit mode): one per shape they target. */
export function auditShapePolicies(config: ResolvedInjectorConfig, injections: readonly string[]): AuditShapePolicy[] {
  const chosen = config.injections.filter((injection) => injections.includes(injection.name));
  for (const injection of chosen) {
    if (injection.mode !== 'audit') throw new Error(`injection "${injection.name}" is not in audit mode`);
  }
  return membersByShape(config, chosen).map(({ shape, members, kinds, writers }) => ({
    shape,
    injections: members.map((injection) => injection.name),
    spec: {
      matchConstraints: { resourceRules: policyResourceRules(kinds), matchPolicy: 'Equivalent' },
      matchConditions: writers[0].sharedConditions(),
      validations: members.map((injection, index) => ({ expression: `!(${writers[index].guardExpression()})`, message: auditMessage(injection) })),
      failurePolicy: 'Ignore',
    },
  }));
}
