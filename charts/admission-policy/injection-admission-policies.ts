import { ApiObject, Lazy } from 'cdk8s';
import { Construct } from 'constructs';
import { ANNOTATIONS_SIZE_LIMIT, POLICY_CONFIG_ANNOTATION, POLICY_TAGS_ANNOTATION, type ResolvedInjection, type ResolvedInjectorConfig } from '../../webhook/config';
import {
  ADMISSION_POLICY_API_VERSIONS,
  AdmissionPolicyApiVersion,
  LabelSelector,
  MutatingAdmissionPolicyBindingSpec,
  MutatingAdmissionPolicySpec,
} from './admission-policy-types';
import { auditShapePolicies } from './audit-policy';
import { kindsReading, overrideWarningPolicies } from './override-warning-policy';
import { PolicyLimitation, policyLimitations, readinessConditionPolicySpec, shapePolicies } from './injection-policy';
import { TEMPLATE_SHAPES, type TemplateShape, shapesOf } from './template-shapes';

/** One binding of each policy, with revisions: who chooses the revision, and the binding's selectors. */
export interface PolicyBindingSelectors {
  /** The binding's name is `<policy>.<suffix>`: `workload`, `namespace` or `default`. */
  readonly suffix: string;
  /** The namespaces the binding applies in. */
  readonly namespaceSelector: LabelSelector;
  /** The objects the binding applies to. */
  readonly objectSelector: LabelSelector;
}

/** Props of InjectionAdmissionPolicies. */
export interface InjectionAdmissionPoliciesProps {
  /** `admissionregistration.k8s.io` version to emit. @default 'v1' */
  readonly apiVersion?: AdmissionPolicyApiVersion;
  /** Prefix of every policy and binding name: `<prefix>.<pods|workloads|cronjobs>`. */
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
  /**
   * With revisions: one binding per way a revision is chosen (`<policy>.<suffix>`, each with its own
   * selectors) instead of one binding with `namespaceSelector` and `objectSelector`; the readiness gate's
   * policy is then bound in every namespace but the excluded ones (`podStatusNamespaceSelector`).
   * @default one binding per policy
   */
  readonly bindings?: readonly PolicyBindingSelectors[];
  /** The readiness gate policy's namespaces, when `bindings` are given. @default `namespaceSelector` */
  readonly podStatusNamespaceSelector?: LabelSelector;
  /**
   * The config the policies carry for `status --from` (in their annotations): the whole config, its tags
   * apart (POLICY_TAGS_ANNOTATION), so that moving a tag changes one short line per policy.
   * @default `config`
   */
  readonly carriedConfig?: () => ResolvedInjectorConfig;
}

/** The policy and binding of one template shape. */
export interface ShapePolicyObjects {
  /** Where the pod template sits in the objects this policy matches. */
  readonly shape: TemplateShape;
  /** The MutatingAdmissionPolicy: its injections in the order they were added, in as few mutations as can share one. */
  readonly policy: ApiObject;
  /** The MutatingAdmissionPolicyBinding that puts it in force (the first of `bindings`). */
  readonly binding: ApiObject;
  /** Every binding of the policy: one, or with revisions one per way the revision is chosen. */
  readonly bindings: readonly ApiObject[];
}

/** The ValidatingAdmissionPolicy and bindings of one template shape's injections in audit mode. */
export interface AuditShapeObjects {
  /** Where the pod template sits in the objects this policy matches. */
  readonly shape: TemplateShape;
  /** The ValidatingAdmissionPolicy, named as the shape's MutatingAdmissionPolicy is: a validation per audit injection. */
  readonly policy: ApiObject;
  /** Its ValidatingAdmissionPolicyBindings (validationActions Warn and Audit), with the mutating bindings' selectors. */
  readonly bindings: readonly ApiObject[];
}

/** The policy and binding that give a pod the readiness gate's condition on its first status write. */
export interface PodStatusPolicyObjects {
  /** The MutatingAdmissionPolicy `<prefix>.pod-status`, matching UPDATE of pods/status. */
  readonly policy: ApiObject;
  /** The MutatingAdmissionPolicyBinding that puts it in force, with the injection policies' selectors. */
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
 * webhook would: one policy (and binding) per place the pod template sits (`pods`, `workloads`,
 * `cronjobs`), each applying its injections in the order they were added, in as few mutations as can
 * share one.
 * No webhook pod, certificate or network hop is involved.
 */
export class InjectionAdmissionPolicies extends Construct {
  /** The `admissionregistration.k8s.io` version emitted. */
  readonly apiVersion: AdmissionPolicyApiVersion;
  /** Prefix of every policy and binding name: `<prefix>.<pods|workloads|cronjobs>`. */
  readonly namePrefix: string;
  /** What the apiserver does when a policy's CEL fails at admission. */
  readonly failurePolicy: 'Ignore' | 'Fail';
  /** The policy and binding of each template shape used so far. */
  readonly objects: ShapePolicyObjects[] = [];
  /** The injections the policies apply, in order. */
  readonly injectionNames: string[] = [];
  /** The ValidatingAdmissionPolicy and bindings of each template shape with an injection in audit mode. */
  readonly auditObjects: AuditShapeObjects[] = [];
  /** The injections in audit mode (warned about, never applied), in order. */
  readonly auditNames: string[] = [];
  /**
   * The ValidatingAdmissionPolicy (`<prefix>.<shape>-overrides`) and bindings of each template shape
   * whose admission reads an override: a bad value gets the webhook's warning (validationActions Warn).
   */
  readonly overrideWarningObjects: AuditShapeObjects[] = [];
  /**
   * The policy (`<prefix>.pod-status`) and binding that set the readiness gate's condition True on a
   * pod's first status write; made when the first injection with `readinessGate` is added.
   */
  podStatus?: PodStatusPolicyObjects;

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
   * Adds one (validated, resolved) injection to the policies of the shapes it targets, making a
   * shape's policy and binding the first time. Throws AdmissionPolicyLimitationError, naming the
   * injection and why, when CEL cannot express it.
   */
  addInjection(injection: ResolvedInjection): void {
    const reasons = policyLimitations(injection);
    if (reasons.length > 0) throw new AdmissionPolicyLimitationError(reasons.map((reason) => ({ injection: injection.name, reason })));
    if (injection.mode === 'audit') {
      this.auditNames.push(injection.name);
      for (const shape of shapesOf(injection)) {
        if (!this.auditObjects.some((objects) => objects.shape === shape)) this.auditObjects.push(this.makeAuditShape(shape));
      }
      return;
    }
    this.injectionNames.push(injection.name);
    for (const shape of shapesOf(injection)) {
      if (!this.objects.some((objects) => objects.shape === shape)) this.objects.push(this.makeShape(shape));
    }
    if ((injection.overrides?.length ?? 0) > 0) {
      for (const shape of Object.keys(TEMPLATE_SHAPES) as TemplateShape[]) {
        if (kindsReading(injection, shape).length > 0 && !this.overrideWarningObjects.some((objects) => objects.shape === shape)) this.overrideWarningObjects.push(this.makeOverrideWarnings(shape));
      }
    }
    if (injection.readinessGate === true && !this.podStatus) this.podStatus = this.makePodStatus();
  }

  private makePodStatus(): PodStatusPolicyObjects {
    const name = `${this.namePrefix}.pod-status`;
    const apiVersion = `admissionregistration.k8s.io/${this.apiVersion}`;
    const labels = this.props.labels;
    const policy = new ApiObject(this, 'pod-status-policy', {
      apiVersion,
      kind: 'MutatingAdmissionPolicy',
      metadata: { name, labels },
      spec: Lazy.any({ produce: () => readinessConditionPolicySpec(this.props.config().annotationPrefix) }),
    });
    const bindingSpec: MutatingAdmissionPolicyBindingSpec = {
      policyName: name,
      matchResources: { namespaceSelector: this.props.podStatusNamespaceSelector ?? this.props.namespaceSelector ?? {}, objectSelector: this.props.objectSelector ?? {} },
    };
    const binding = new ApiObject(this, 'pod-status-binding', { apiVersion, kind: 'MutatingAdmissionPolicyBinding', metadata: { name, labels }, spec: bindingSpec });
    return { policy, binding };
  }

  private makeShape(shape: TemplateShape): ShapePolicyObjects {
    const name = `${this.namePrefix}.${shape}`;
    const apiVersion = `admissionregistration.k8s.io/${this.apiVersion}`;
    const labels = this.props.labels;
    // Read at synth: the policy covers every injection added by then.
    const spec = (): MutatingAdmissionPolicySpec => {
      const policy = shapePolicies(this.props.config(), this.injectionNames, { failurePolicy: this.failurePolicy, apiVersion: this.apiVersion }).find((candidate) => candidate.shape === shape);
      if (!policy) throw new Error(`no injection targets ${shape} any more`);
      return policy.spec;
    };
    const policy = new ApiObject(this, `${shape}-policy`, {
      apiVersion,
      kind: 'MutatingAdmissionPolicy',
      metadata: { name, labels, annotations: this.configAnnotations() },
      spec: Lazy.any({ produce: spec }),
    });
    const bindings = this.bindingsOf(`${shape}-binding`, name, (id, bindingName, matchResources) =>
      new ApiObject(this, id, {
        apiVersion,
        kind: 'MutatingAdmissionPolicyBinding',
        metadata: { name: bindingName, labels },
        spec: { policyName: name, matchResources } satisfies MutatingAdmissionPolicyBindingSpec,
      }),
    );
    return { shape, policy, binding: bindings[0], bindings };
  }

  /**
   * A shape's audit policy: named as its MutatingAdmissionPolicy (another kind), bound with the same
   * selectors, carrying the config too (an injector whose injections are all in audit mode has no
   * MutatingAdmissionPolicy to carry it).
   */
  private makeAuditShape(shape: TemplateShape): AuditShapeObjects {
    const name = `${this.namePrefix}.${shape}`;
    const labels = this.props.labels;
    const spec = () => {
      const policy = auditShapePolicies(this.props.config(), this.auditNames).find((candidate) => candidate.shape === shape);
      if (!policy) throw new Error(`no injection in audit mode targets ${shape} any more`);
      return policy.spec;
    };
    const policy = new ApiObject(this, `${shape}-audit-policy`, {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicy',
      metadata: { name, labels, annotations: this.configAnnotations() },
      spec: Lazy.any({ produce: spec }),
    });
    const bindings = this.bindingsOf(`${shape}-audit-binding`, name, (id, bindingName, matchResources) =>
      new ApiObject(this, id, {
        apiVersion: 'admissionregistration.k8s.io/v1',
        kind: 'ValidatingAdmissionPolicyBinding',
        metadata: { name: bindingName, labels },
        spec: { policyName: name, validationActions: ['Warn', 'Audit'], matchResources },
      }),
    );
    return { shape, policy, bindings };
  }

  /** A shape's override-warning policy, bound with the mutating bindings' selectors, to warn only. */
  private makeOverrideWarnings(shape: TemplateShape): AuditShapeObjects {
    const name = `${this.namePrefix}.${shape}-overrides`;
    const labels = this.props.labels;
    const spec = () => {
      const policy = overrideWarningPolicies(this.props.config(), this.injectionNames).find((candidate) => candidate.shape === shape);
      if (!policy) throw new Error(`no injection with overrides reaches ${shape} any more`);
      return policy.spec;
    };
    const policy = new ApiObject(this, `${shape}-override-warning-policy`, {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicy',
      metadata: { name, labels },
      spec: Lazy.any({ produce: spec }),
    });
    const bindings = this.bindingsOf(`${shape}-override-warning-binding`, name, (id, bindingName, matchResources) =>
      new ApiObject(this, id, {
        apiVersion: 'admissionregistration.k8s.io/v1',
        kind: 'ValidatingAdmissionPolicyBinding',
        metadata: { name: bindingName, labels },
        spec: { policyName: name, validationActions: ['Warn'], matchResources },
      }),
    );
    return { shape, policy, bindings };
  }

  /** One binding, or with revisions one per way the revision is chosen (`<name>.<suffix>`). */
  private bindingsOf(id: string, name: string, make: (id: string, name: string, matchResources: { namespaceSelector: LabelSelector; objectSelector: LabelSelector }) => ApiObject): ApiObject[] {
    if (this.props.bindings) return this.props.bindings.map((entry) => make(`${id}-${entry.suffix}`, `${name}.${entry.suffix}`, { namespaceSelector: entry.namespaceSelector, objectSelector: entry.objectSelector }));
    return [make(id, name, { namespaceSelector: this.props.namespaceSelector ?? {}, objectSelector: this.props.objectSelector ?? {} })];
  }

  /**
   * The whole config rides along for `status --from`, as the webhook's ConfigMap carries it; cdk8s
   * resolves a Lazy annotation value at synth, after every addInjection().
   */
  private configAnnotations(): Record<string, string> {
    const configAnnotation = Lazy.any({ produce: () => this.synthesizeConfigAnnotation() }) as unknown as string;
    const tags = this.props.carriedConfig?.().tags;
    return { [POLICY_CONFIG_ANNOTATION]: configAnnotation, ...(tags ? { [POLICY_TAGS_ANNOTATION]: JSON.stringify(tags) } : {}) };
  }

  /** The config as compact JSON, or an error naming `injections` when the apiserver would refuse its size. */
  private synthesizeConfigAnnotation(): string {
    const carried = this.props.carriedConfig?.() ?? this.props.config();
    const { tags: _tags, ...withoutTags } = carried;
    const json = JSON.stringify(carried.tags === undefined ? carried : withoutTags);
    const bytes = Buffer.byteLength(POLICY_CONFIG_ANNOTATION) + Buffer.byteLength(json);
    if (bytes > ANNOTATIONS_SIZE_LIMIT) {
      throw new Error(
        `[${this.node.path}] injections: the config is ${bytes} bytes as the annotation ${POLICY_CONFIG_ANNOTATION} of each MutatingAdmissionPolicy ` +
          `(written for \`status --from\`), over the ${ANNOTATIONS_SIZE_LIMIT} bytes Kubernetes allows in an object's annotations; ` +
          "make the injections smaller, split them over two SidecarInjectors, or use backend 'webhook', whose ConfigMap holds up to 1 MiB",
      );
    }
    return json;
  }
}
