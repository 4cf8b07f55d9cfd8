import { ApiObject, Lazy } from 'cdk8s';
import { Construct } from 'constructs';
import type { ResolvedInjection, ResolvedInjectorConfig } from '../../webhook/config';
import {
  ADMISSION_POLICY_API_VERSIONS,
  AdmissionPolicyApiVersion,
  LabelSelector,
  MutatingAdmissionPolicyBindingSpec,
  MutatingAdmissionPolicySpec,
} from './admission-policy-types';
import { PolicyLimitation, TEMPLATE_SHAPES, TemplateShape, injectionPolicies, policyLimitations } from './injection-policy';

/** Props of InjectionAdmissionPolicies. */
export interface InjectionAdmissionPoliciesProps {
  /** `admissionregistration.k8s.io` version to emit. @default 'v1' */
  readonly apiVersion?: AdmissionPolicyApiVersion;
  /** Prefix of every policy and binding name: `<prefix>.<NN>-<injection>.<pods|workloads|cronjobs>`. */
  readonly namePrefix: string;
  /** The whole config, read at synth (a policy skips containers that other injections added). */
  readonly config: () => ResolvedInjectorConfig;
  /** What the apiserver does when a policy's CEL fails at admission. @default 'Ignore' */
  readonly failurePolicy?: 'Ignore' | 'Fail';
  /** Namespaces the bindings apply to (the final selector, exclusions included). @default all */
  readonly namespaceSelector?: LabelSelector;
  /** Objects the bindings apply to. @default all */
  readonly objectSelector?: LabelSelector;
  /** Labels on every policy and binding. @default none */
  readonly labels?: Record<string, string>;
}

/** The objects made for one injection and template shape. */
export interface InjectionPolicyObjects {
  /** The injection's name. */
  readonly injection: string;
  /** Where the pod template sits in the objects this policy matches. */
  readonly shape: TemplateShape;
  /** The MutatingAdmissionPolicy. */
  readonly policy: ApiObject;
  /** The MutatingAdmissionPolicyBinding that puts it in force. */
  readonly binding: ApiObject;
}

/** An injection that cannot be a MutatingAdmissionPolicy, with every reason. */
export class AdmissionPolicyLimitationError extends Error {
  /** @param limitations every injection that cannot be a policy, with each reason */
  constructor(readonly limitations: readonly PolicyLimitation[]) {
    super(`cannot render as MutatingAdmissionPolicy:\n${limitations.map((l) => `  injection "${l.injection}": ${l.reason}`).join('\n')}`);
    this.name = 'AdmissionPolicyLimitationError';
  }
}

/**
 * MutatingAdmissionPolicies and their bindings that inject, inside the kube-apiserver, what the
 * webhook would: one policy and one binding per injection and per place the pod template sits.
 * No webhook pod, certificate or network hop is involved.
 */
export class InjectionAdmissionPolicies extends Construct {
  /** The `admissionregistration.k8s.io` version emitted. */
  readonly apiVersion: AdmissionPolicyApiVersion;
  /** Prefix of every policy and binding name. */
  readonly namePrefix: string;
  /** What the apiserver does when a policy's CEL fails at admission. */
  readonly failurePolicy: 'Ignore' | 'Fail';
  /** Every policy and binding made so far, in the order of the injections. */
  readonly objects: InjectionPolicyObjects[] = [];

  private readonly props: InjectionAdmissionPoliciesProps;

  constructor(scope: Construct, id: string, props: InjectionAdmissionPoliciesProps) {
    super(scope, id);
    this.apiVersion = props.apiVersion ?? 'v1';
    if (!ADMISSION_POLICY_API_VERSIONS.includes(this.apiVersion)) {
      throw new Error(`admissionPolicyApiVersion: must be one of ${ADMISSION_POLICY_API_VERSIONS.join(', ')}, got ${JSON.stringify(this.apiVersion)}`);
    }
    this.namePrefix = props.namePrefix;
    this.failurePolicy = props.failurePolicy ?? 'Ignore';
    this.props = props;
  }

  /**
   * Makes the policies of one (validated, resolved) injection. Throws AdmissionPolicyLimitationError,
   * naming the injection and why, when CEL cannot express it.
   */
  addInjection(injection: ResolvedInjection): InjectionPolicyObjects[] {
    const reasons = policyLimitations(injection);
    if (reasons.length > 0) throw new AdmissionPolicyLimitationError(reasons.map((reason) => ({ injection: injection.name, reason })));
    const made: InjectionPolicyObjects[] = [];
    // The apiserver runs policies in the order of their names; the webhook applies injections in the
    // order they were added. The position in the name keeps the two orders the same.
    const position = String(new Set(this.objects.map((objects) => objects.injection)).size).padStart(2, '0');
    for (const shape of Object.keys(TEMPLATE_SHAPES) as TemplateShape[]) {
      if (!TEMPLATE_SHAPES[shape].kinds.some((kind) => injection.targetKinds.includes(kind))) continue;
      const name = `${this.namePrefix}.${position}-${injection.name}.${shape}`;
      const apiVersion = `admissionregistration.k8s.io/${this.apiVersion}`;
      const labels = this.props.labels;
      const policySpec = (): MutatingAdmissionPolicySpec => {
        // Read at synth: the injected-container list covers injections added after this one.
        const config = this.props.config();
        const resolved = config.injections.find((candidate) => candidate.name === injection.name) ?? injection;
        const policy = injectionPolicies(resolved, config, { failurePolicy: this.failurePolicy }).find((candidate) => candidate.shape === shape);
        if (!policy) throw new Error(`injection "${injection.name}" no longer targets ${shape}`);
        return policy.spec;
      };
      const policy = new ApiObject(this, `${injection.name}-${shape}-policy`, {
        apiVersion,
        kind: 'MutatingAdmissionPolicy',
        metadata: { name, labels },
        spec: Lazy.any({ produce: policySpec }),
      });
      const bindingSpec: MutatingAdmissionPolicyBindingSpec = {
        policyName: name,
        matchResources: { namespaceSelector: this.props.namespaceSelector ?? {}, objectSelector: this.props.objectSelector ?? {} },
      };
      const binding = new ApiObject(this, `${injection.name}-${shape}-binding`, {
        apiVersion,
        kind: 'MutatingAdmissionPolicyBinding',
        metadata: { name, labels },
        spec: bindingSpec,
      });
      made.push({ injection: injection.name, shape, policy, binding });
    }
    this.objects.push(...made);
    return made;
  }
}
