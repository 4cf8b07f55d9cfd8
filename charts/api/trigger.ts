// When an injection applies, as a class with static factories (like cdk8s-plus's `Probe.fromHttpGet`):
// the kind is the factory chosen, the data its arguments. The construct asks it for the config's JSON.

import type { InjectionTrigger, LabelSelectorRequirement } from '../../webhook/config';
import { LabelSelectorOperator } from './choices';

/** One requirement of a label selector's `matchExpressions`. */
export interface LabelSelectorRequirementProps {
  /** The label key the requirement is about, a qualified name such as `app.kubernetes.io/name`. */
  readonly key: string;
  /** How the label's value relates to `values`. */
  readonly operator: LabelSelectorOperator;
  /** The values for `In` and `NotIn` (non-empty); none for `Exists` and `DoesNotExist`. @default none */
  readonly values?: string[];
}

/** Options of `Trigger.labelSelector`: at least one of the two. */
export interface LabelSelectorTriggerOptions {
  /** Labels the object must carry with exactly these values (ANDed with `matchExpressions`). @default none */
  readonly matchLabels?: { [key: string]: string };
  /** Requirements the object's labels must all meet (ANDed with `matchLabels`). @default none */
  readonly matchExpressions?: LabelSelectorRequirementProps[];
}

/** Options of `Trigger.annotation`. */
export interface AnnotationTriggerOptions {
  /**
   * A regular expression in RE2 syntax (that of Kubernetes CEL's `matches()`) the whole value must match,
   * as if written `^(?:pattern)$`; a pattern RE2 does not accept (backreferences, lookaround) fails synth.
   * @default any value
   */
  readonly valuePattern?: string;
}

/** The requirement as the config writes it, keys in Kubernetes' order. */
function requirementConfig(requirement: LabelSelectorRequirementProps | LabelSelectorRequirement): LabelSelectorRequirement {
  if (requirement === null || typeof requirement !== 'object') return requirement;
  const { key, operator, values, ...rest } = requirement as LabelSelectorRequirement;
  return { key, operator, ...(values === undefined ? {} : { values }), ...rest } as LabelSelectorRequirement;
}

/**
 * When an injection applies to an object of its target kinds. Whatever the trigger, an object annotated
 * `<prefix>/inject: "false"` gets no injection.
 */
export class Trigger {
  /** Every object of the target kinds that reaches the injector. */
  public static always(): Trigger {
    return new Trigger({ type: 'always' });
  }

  /** Objects whose labels match, with Kubernetes label selector semantics. */
  public static labelSelector(options: LabelSelectorTriggerOptions): Trigger {
    return new Trigger({
      type: 'labelSelector',
      ...(options?.matchLabels === undefined ? {} : { matchLabels: options.matchLabels }),
      ...(options?.matchExpressions === undefined
        ? {}
        : { matchExpressions: Array.isArray(options.matchExpressions) ? options.matchExpressions.map(requirementConfig) : options.matchExpressions }),
    } as InjectionTrigger);
  }

  /**
   * Objects carrying the annotation `key` (a qualified name such as `example.com/wait-for`); its value is
   * `{{annotation}}` in templates. On workloads the object's and the pod template's annotations count.
   */
  public static annotation(key: string, options: AnnotationTriggerOptions = {}): Trigger {
    return new Trigger({ type: 'annotation', key, ...(options?.valuePattern === undefined ? {} : { valuePattern: options.valuePattern }) });
  }

  /** Only objects whose `<prefix>/inject` annotation lists the injection's name. */
  public static requested(): Trigger {
    return new Trigger({ type: 'requested' });
  }

  private constructor(private readonly config: InjectionTrigger) {}

  /** The kind of trigger: `always`, `labelSelector`, `annotation` or `requested`. */
  public get kind(): string {
    return this.config.type;
  }

  /** @internal The trigger as the config's JSON. */
  public _toConfig(): InjectionTrigger {
    return this.config;
  }
}
