// With revisions and the policy backend: what the webhook's entries for unserved labels do, as a
// ValidatingAdmissionPolicy (GA since Kubernetes 1.30): an object whose `<prefix>/rev` label, or its
// namespace's, names no revision or tag served gets a warning naming the label (validationActions Warn),
// or is refused (Deny) when the injector's failurePolicy is Fail. Never an uninjected pod nobody hears about.

import { ApiObject } from 'cdk8s';
import { Construct } from 'constructs';
import { type TargetKind, annotationKeys, revisionLabel } from '../../webhook/config';
import type { RoutedSelectors } from '../revision-props';
import type { LabelSelector } from './admission-policy-types';
import { policyResourceRules } from './template-shapes';

/** Props of UnservedRevisionPolicy. */
export interface UnservedRevisionPolicyProps {
  /** Name of the policy; its bindings are `<name>.workload` and `<name>.namespace`. */
  readonly name: string;
  /** The injector's annotation prefix: the label is `<prefix>/rev`, the opt-out `<prefix>/inject: "false"`. */
  readonly annotationPrefix: string;
  /** Every label value served (revision and tag names), for the message. */
  readonly served: readonly string[];
  /** The kinds some revision injects. */
  readonly targetKinds: readonly TargetKind[];
  /** The selectors of the webhook's unserved entries (routingSelectors). */
  readonly selectors: readonly RoutedSelectors[];
  /** `warn` admits with a warning, `refuse` denies. */
  readonly action: 'warn' | 'refuse';
  /** Labels on the policy and its bindings. @default none */
  readonly labels?: Record<string, string>;
}

/** CEL: the annotations map at `path` (a chain of fields under `object`) holds `key` = "false" (any case, trimmed). */
function optedOutAt(path: readonly string[], key: string): string {
  const chain = path.map((_, index) => `has(object.${path.slice(0, index + 1).join('.')})`).join(' && ');
  const map = `object.${path.join('.')}`;
  return `(${chain} && ${JSON.stringify(key)} in ${map} && ${map}[${JSON.stringify(key)}].trim().lowerAscii() == "false")`;
}

/** The ValidatingAdmissionPolicy and its two bindings (the pod template's label, the namespace's). */
export class UnservedRevisionPolicy extends Construct {
  /** The ValidatingAdmissionPolicy. */
  readonly policy: ApiObject;
  /** Its bindings: `workload` (the object's label names nothing served) and `namespace` (its namespace's does). */
  readonly bindings: readonly ApiObject[];

  constructor(scope: Construct, id: string, props: UnservedRevisionPolicyProps) {
    super(scope, id);
    const label = revisionLabel(props.annotationPrefix);
    const inject = annotationKeys(props.annotationPrefix).inject;
    const outcome = props.action === 'refuse' ? 'refused' : 'admitted without sidecars';
    const served = props.served.join(', ');
    // The same words as the webhook's answer (engine/unserved-revision.ts), from what CEL sees.
    const message =
      `has(object.metadata.labels) && ${JSON.stringify(label)} in object.metadata.labels ? ` +
      `${JSON.stringify(`label ${label}="`)} + object.metadata.labels[${JSON.stringify(label)}] + ${JSON.stringify(`" names no revision or tag this injector serves (served: ${served}): ${outcome}`)} : ` +
      `"namespace \\"" + namespaceObject.metadata.name + ${JSON.stringify(`" is labelled ${label} with no revision or tag this injector serves (served: ${served}): ${outcome}`)}`;
    const optedOut = [
      optedOutAt(['metadata', 'annotations'], inject),
      optedOutAt(['spec', 'template', 'metadata', 'annotations'], inject),
      optedOutAt(['spec', 'jobTemplate', 'spec', 'template', 'metadata', 'annotations'], inject),
    ].join(' || ');
    this.policy = new ApiObject(this, 'policy', {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicy',
      metadata: { name: props.name, labels: props.labels },
      spec: {
        failurePolicy: props.action === 'refuse' ? 'Fail' : 'Ignore',
        matchConstraints: { resourceRules: policyResourceRules(props.targetKinds), matchPolicy: 'Equivalent' },
        matchConditions: [{ name: 'not-opted-out', expression: `!(${optedOut})` }],
        validations: [{ expression: 'false', messageExpression: message, reason: 'Forbidden' }],
      },
    });
    const action = props.action === 'refuse' ? 'Deny' : 'Warn';
    this.bindings = props.selectors.map(
      (routed) =>
        new ApiObject(this, `binding-${routed.chooser}`, {
          apiVersion: 'admissionregistration.k8s.io/v1',
          kind: 'ValidatingAdmissionPolicyBinding',
          metadata: { name: `${props.name}.${routed.chooser}`, labels: props.labels },
          spec: {
            policyName: props.name,
            validationActions: [action],
            matchResources: { namespaceSelector: routed.namespaceSelector as LabelSelector, objectSelector: routed.objectSelector as LabelSelector },
          },
        }),
    );
  }
}
