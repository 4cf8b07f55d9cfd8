// The policy backend with revisions: each revision's policies (`<namePrefix>.<revision>.<shape>`), bound
// once per way the revision is chosen with the webhook entries' selectors; the default tag's bindings,
// named for the role (`<namePrefix>.default.<shape>`), so moving the tag changes their policyName and
// nothing else; and the ValidatingAdmissionPolicy that warns about (or refuses) labels naming nothing served.

import { ApiObject } from 'cdk8s';
import type { Construct } from 'constructs';
import { type ResolvedInjectorConfig, revisionConfig, revisionLabel } from '../../webhook/config';
import { type RoutingSelector, revisionRouting, routingSelectors } from '../revision-props';
import type { AdmissionPolicyApiVersion, LabelSelector } from './admission-policy-types';
import { InjectionAdmissionPolicies } from './injection-admission-policies';
import { UnservedRevisionPolicy } from './unserved-revision-policy';

/** With revisions and a policy backend: each revision's policies, and the policy for labels naming nothing served. */
export interface RevisionPolicies {
  /** Each revision's MutatingAdmissionPolicies and bindings (a pod template's label, a namespace's), by revision name. */
  readonly revisions: Readonly<Record<string, InjectionAdmissionPolicies>>;
  /** The bindings of the default tag's revision in the enabled namespaces, one per template shape (`<name>.default.<shape>`), of its
   * MutatingAdmissionPolicies and of its audit ValidatingAdmissionPolicies. */
  readonly defaultBindings: readonly ApiObject[];
  /** The ValidatingAdmissionPolicy (and bindings) that warns about, or refuses, a `<prefix>/rev` label naming nothing served. */
  readonly unserved: UnservedRevisionPolicy;
}

/** What the revision policies are made from: the injector's settings as the SidecarInjector resolved them. */
export interface RevisionPoliciesSettings {
  /** The whole config (with its revisions), read again at synth. */
  readonly config: () => ResolvedInjectorConfig;
  /** The webhook configuration's name, which every policy name starts with. */
  readonly namePrefix: string;
  readonly apiVersion: AdmissionPolicyApiVersion;
  readonly failurePolicy: 'Ignore' | 'Fail';
  readonly annotationPrefix: string;
  /** The enabled namespaces (exclusions included). */
  readonly namespaceSelector: RoutingSelector;
  /** The objects injected (the opt-out label excluded). */
  readonly objectSelector: RoutingSelector;
  /** The namespaces never served (the injector's own, kube-system, ...). */
  readonly excluded: { readonly key: string; readonly operator: 'NotIn'; readonly values: string[] };
  readonly labels: Record<string, string>;
}

/** Makes the revision policies in `scope` (the SidecarInjector: the construct ids are its children's). */
export function revisionAdmissionPolicies(scope: Construct, settings: RevisionPoliciesSettings): RevisionPolicies {
  const config = settings.config();
  const routing = revisionRouting(config)!;
  const { labels, namePrefix } = settings;
  const selectors = routingSelectors(routing, settings.namespaceSelector, settings.objectSelector, settings.excluded);
  const revisions: Record<string, InjectionAdmissionPolicies> = {};
  for (const revision of routing.revisions) {
    const policies = new InjectionAdmissionPolicies(scope, `AdmissionPolicies-${revision.name}`, {
      apiVersion: settings.apiVersion,
      namePrefix: `${namePrefix}.${revision.name}`,
      config: () => revisionConfig(settings.config(), revision.name)!,
      carriedConfig: settings.config,
      failurePolicy: settings.failurePolicy,
      bindings: selectors.revisions.get(revision.name)!.map((routed) => ({ suffix: routed.chooser, namespaceSelector: routed.namespaceSelector as LabelSelector, objectSelector: routed.objectSelector as LabelSelector })),
      podStatusNamespaceSelector: { matchExpressions: [settings.excluded] },
      objectSelector: settings.objectSelector as LabelSelector,
      labels: { ...labels, [revisionLabel(settings.annotationPrefix)]: revision.name },
    });
    for (const injection of revisionConfig(config, revision.name)!.injections) policies.addInjection(injection);
    revisions[revision.name] = policies;
  }
  const defaultRoute = selectors.default;
  const defaultMatch = defaultRoute && { namespaceSelector: defaultRoute.selectors.namespaceSelector as LabelSelector, objectSelector: defaultRoute.selectors.objectSelector as LabelSelector };
  const defaultBindings = defaultRoute
    ? [
        ...revisions[defaultRoute.revision].objects.map(
          ({ shape, policy }) =>
            new ApiObject(scope, `DefaultRevisionBinding-${shape}`, {
              apiVersion: `admissionregistration.k8s.io/${settings.apiVersion}`,
              kind: 'MutatingAdmissionPolicyBinding',
              metadata: { name: `${namePrefix}.default.${shape}`, labels },
              spec: { policyName: policy.metadata.name!, matchResources: defaultMatch },
            }),
        ),
        // Its injections in audit mode warn where the default tag applies too.
        ...revisions[defaultRoute.revision].auditObjects.map(
          ({ shape, policy }) =>
            new ApiObject(scope, `DefaultRevisionAuditBinding-${shape}`, {
              apiVersion: 'admissionregistration.k8s.io/v1',
              kind: 'ValidatingAdmissionPolicyBinding',
              metadata: { name: `${namePrefix}.default.${shape}`, labels },
              spec: { policyName: policy.metadata.name!, validationActions: ['Warn', 'Audit'], matchResources: defaultMatch },
            }),
        ),
      ]
    : [];
  const unserved = new UnservedRevisionPolicy(scope, 'UnservedRevisionPolicy', {
    name: `${namePrefix}.unserved-revision`,
    annotationPrefix: settings.annotationPrefix,
    served: routing.served,
    targetKinds: routing.targetKinds,
    selectors: selectors.unserved,
    action: settings.failurePolicy === 'Fail' ? 'refuse' : 'warn',
    labels,
  });
  return { revisions, defaultBindings, unserved };
}
