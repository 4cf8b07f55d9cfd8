import { Lazy } from 'cdk8s';
import { k8s } from 'cdk8s-plus-27';
import { Construct } from 'constructs';
import { type ResolvedInjectorConfig, type RevisionChooser, TARGET_KINDS, TARGET_KIND_RESOURCES, TargetKind, admissionPath, readinessConditionMissingCel, targetKindRules } from '../webhook/config';
import { type RevisionRouting, type RoutedSelectors, type RoutingSelector, routingSelectors } from './revision-props';
import { LabelSelectorProps } from './sidecar-injector-props';
/** A requirement as the webhook entries write it. */
interface SelectorRequirement {
  readonly key: string;
  readonly operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist';
  readonly values?: string[];
}

/** Namespaces the webhook never sees, whatever the namespace selector says. */
export const ALWAYS_EXCLUDED_NAMESPACES = ['kube-system', 'kube-public', 'kube-node-lease'] as const;

/** What the MutatingWebhookConfiguration is made from. */
export interface WebhookConfigurationSettings {
  readonly name: string;
  readonly labels: Record<string, string>;
  readonly serviceName: string;
  readonly namespace: string;
  /** Base64 PEM; undefined when cert-manager's cainjector fills it in. */
  readonly caBundle: string | undefined;
  /** Annotations of the MutatingWebhookConfiguration (cert-manager's `inject-ca-from`). */
  readonly annotations?: Record<string, string>;
  /** Called at synth, after every `addInjection()`. */
  readonly targetKinds: () => Iterable<TargetKind>;
  readonly namespaceSelector: LabelSelectorProps | undefined;
  readonly objectSelector: LabelSelectorProps | undefined;
  readonly exclusionLabel: string;
  readonly timeoutSeconds: number;
  readonly failurePolicy: 'Ignore' | 'Fail';
  /** Called at synth: the annotation prefix when some injection adds the readiness gate, else undefined. */
  readonly readinessGatePrefix: () => string | undefined;
  /** Called at synth: how each `<prefix>/rev` value reaches its revision; undefined without revisions. */
  readonly revisions?: () => RevisionRouting | undefined;
  /** Called at synth: the config the webhook serves for a revision (undefined: the one without revisions). */
  readonly servedConfig?: (revision: string | undefined) => ResolvedInjectorConfig | undefined;
}

/** The cluster-scoped MutatingWebhookConfiguration that sends matching objects to the webhook's Service. */
export function mutatingWebhookConfiguration(scope: Construct, settings: WebhookConfigurationSettings): k8s.KubeMutatingWebhookConfiguration {
  const serviceHost = `${settings.serviceName}.${settings.namespace}.svc`;
  const clientConfig = {
    service: { name: settings.serviceName, namespace: settings.namespace, path: admissionPath(''), port: 443 },
    caBundle: settings.caBundle,
  };
  const objectSelector = injectedObjectSelector(settings.objectSelector, settings.exclusionLabel);
  const excluded = excludedNamespaces(settings.namespace);
  /** A webhook entry calling `path` for `kinds`, with its own selectors. */
  const entry = (name: string, path: string, kinds: Iterable<TargetKind>, selectors: Pick<k8s.MutatingWebhook, 'namespaceSelector' | 'objectSelector'>): k8s.MutatingWebhook => ({
    name: `${name}.${serviceHost}`,
    clientConfig: { ...clientConfig, service: { ...clientConfig.service, path } },
    rules: targetKindRules(kinds),
    ...selectors,
    sideEffects: 'None',
    admissionReviewVersions: ['v1', 'v1beta1'],
    timeoutSeconds: settings.timeoutSeconds,
    failurePolicy: settings.failurePolicy,
    reinvocationPolicy: 'IfNeeded',
    matchPolicy: 'Equivalent',
  });
  /**
   * Beside an injecting entry, one for the workloads whose pods an injection offering overrides reaches
   * without targeting the workload itself: a bad value in the pod template is then warned about at the
   * workload's admission (the engine's preview), not only at its pods', which a controller creates and
   * nobody reads. Called only for a template carrying an offered prefix and written by a person (no
   * owner), and Ignore: it changes nothing, so it never stands in a workload's way.
   */
  const overrideCheck = (injecting: k8s.MutatingWebhook, revision: string | undefined): k8s.MutatingWebhook[] => {
    const config = settings.servedConfig?.(revision);
    const check = config ? podOverrideCheck(config, injecting.rules!.flatMap((rule) => rule.resources ?? [])) : undefined;
    if (!check) return [];
    return [{
      ...injecting,
      name: `${OVERRIDE_CHECK_PREFIX}${injecting.name}`,
      rules: targetKindRules(check.kinds),
      matchConditions: [{ name: 'pod-template-carries-an-override', expression: overrideAnnotationsCel(check.prefixes) }],
      failurePolicy: 'Ignore',
      reinvocationPolicy: 'Never',
    }];
  };
  /**
   * With revisions, entries that exclude each other, so the apiserver calls exactly one per object: a pod
   * template's label chooses first, then its namespace's, then (in the enabled namespaces) the default
   * tag. A label that names nothing served goes to an entry that warns (or refuses) rather than to none.
   */
  const revisionEntries = (routing: RevisionRouting): k8s.MutatingWebhook[] => {
    const selectors = routingSelectors(routing, namespaceSelector(settings.namespaceSelector, settings.namespace) as RoutingSelector, objectSelector as RoutingSelector, excluded);
    const entries: k8s.MutatingWebhook[] = [];
    const defaultRoute = selectors.default;
    const checks: k8s.MutatingWebhook[] = [];
    if (defaultRoute) {
      const revision = routing.revisions.find((candidate) => candidate.name === defaultRoute.revision)!;
      entries.push(entry('default.inject', admissionPath(`revision:${revision.name}`), revision.targetKinds, asSelectors(defaultRoute.selectors)));
      checks.push(...overrideCheck(entries[entries.length - 1], revision.name));
    }
    for (const revision of routing.revisions) {
      for (const routed of selectors.revisions.get(revision.name)!) {
        entries.push(entry(`${revision.name}.${routed.chooser}.inject`, admissionPath(`revision:${revision.name}`), revision.targetKinds, asSelectors(routed)));
        checks.push(...overrideCheck(entries[entries.length - 1], revision.name));
      }
    }
    for (const routed of selectors.unserved) entries.push(entry(`unserved-${routed.chooser}.inject`, admissionPath(`unserved:${routed.chooser as RevisionChooser}`), routing.targetKinds, asSelectors(routed)));
    return [...entries, ...checks];
  };
  // Only when some injection adds the readiness gate (known at synth, after every addInjection()).
  // With revisions, every namespace a revision can reach: the condition names only pods with the gate.
  const sidecarsReady = (prefix: string, revisions: boolean): k8s.MutatingWebhook => ({
    name: `sidecars-ready.${serviceHost}`,
    clientConfig,
    rules: [{ apiGroups: [''], apiVersions: ['v1'], resources: ['pods/status'], operations: ['UPDATE'], scope: 'Namespaced' }],
    namespaceSelector: revisions ? { matchExpressions: [excluded] } : namespaceSelector(settings.namespaceSelector, settings.namespace),
    objectSelector,
    matchConditions: [{ name: 'readiness-condition-missing', expression: readinessConditionMissingCel(prefix) }],
    sideEffects: 'None',
    admissionReviewVersions: ['v1', 'v1beta1'],
    timeoutSeconds: settings.timeoutSeconds,
    // Fail, whatever the pods' failurePolicy: without the condition the pod is never Ready, so a status
    // write the webhook did not see is refused and the kubelet writes it again, rather than let the pod
    // run unready until some later status change.
    failurePolicy: 'Fail',
    reinvocationPolicy: 'Never',
    matchPolicy: 'Equivalent',
  });
  return new k8s.KubeMutatingWebhookConfiguration(scope, 'MutatingWebhookConfiguration', {
    metadata: { name: settings.name, labels: settings.labels, annotations: settings.annotations && Object.keys(settings.annotations).length > 0 ? settings.annotations : undefined },
    webhooks: Lazy.any({
      produce: () => {
        const prefix = settings.readinessGatePrefix();
        const routing = settings.revisions?.();
        let injecting: k8s.MutatingWebhook[];
        if (routing) injecting = revisionEntries(routing);
        else {
          const only = entry('inject', admissionPath(''), settings.targetKinds(), { namespaceSelector: namespaceSelector(settings.namespaceSelector, settings.namespace), objectSelector });
          injecting = [only, ...overrideCheck(only, undefined)];
        }
        return prefix === undefined ? injecting : [...injecting, sidecarsReady(prefix, routing !== undefined)];
      },
    }),
  });
}

/** A routing's selectors as the webhook entry's fields (the same JSON, in cdk8s's types). */
function asSelectors(routed: RoutedSelectors): Pick<k8s.MutatingWebhook, 'namespaceSelector' | 'objectSelector'> {
  return { namespaceSelector: routed.namespaceSelector as k8s.LabelSelector, objectSelector: routed.objectSelector as k8s.LabelSelector };
}


/** The namespaces the webhook sees: `selector` (default `injection: enabled`) minus the excluded ones. */
export function namespaceSelector(selector: LabelSelectorProps | undefined, ownNamespace: string): k8s.LabelSelector {
  const base = selector ?? { matchLabels: { injection: 'enabled' } };
  return { matchLabels: base.matchLabels, matchExpressions: [...(base.matchExpressions ?? []), excludedNamespaces(ownNamespace)] };
}

/** The requirement that keeps kube-system, kube-public, kube-node-lease and the injector's own namespace out. */
export function excludedNamespaces(ownNamespace: string): { key: string; operator: 'NotIn'; values: string[] } {
  return { key: 'kubernetes.io/metadata.name', operator: 'NotIn', values: [...ALWAYS_EXCLUDED_NAMESPACES, ownNamespace] };
}

/** The objects the injector sees: `selector` (default all), never one carrying the exclusion label (its own pods). */
export function injectedObjectSelector(selector: LabelSelectorProps | undefined, exclusionLabel: string): { matchLabels?: Record<string, string>; matchExpressions: SelectorRequirement[] } {
  return { matchLabels: selector?.matchLabels, matchExpressions: [...(selector?.matchExpressions ?? []), { key: exclusionLabel, operator: 'DoesNotExist' }] };
}

/** The name prefix of an entry that only warns of override values (it injects nothing, so its failures leave no pod without sidecars). */
export const OVERRIDE_CHECK_PREFIX = 'overrides.';

/** The workload kinds whose pod template another entry's injections reach through their pods. */
const WORKLOAD_KINDS = TARGET_KINDS.filter((kind) => kind !== 'Pod');

/**
 * The workload kinds (and the annotation prefixes) for which `config`'s injections that target pods and
 * offer overrides should hear of a bad value at the workload's admission: those the injecting entry
 * (`entryResources`, its rules' resources) does not already send to the webhook. Undefined when none.
 */
export function podOverrideCheck(config: ResolvedInjectorConfig, entryResources: readonly string[]): { kinds: TargetKind[]; prefixes: string[] } | undefined {
  const offering = config.injections.filter((injection) => injection.mode !== 'audit' && (injection.overrides?.length ?? 0) > 0 && injection.targetKinds.includes('Pod'));
  const kinds = WORKLOAD_KINDS.filter((kind) => !entryResources.includes(TARGET_KIND_RESOURCES[kind].resource) && offering.some((injection) => !injection.targetKinds.includes(kind)));
  if (kinds.length === 0) return undefined;
  const prefixes = [...new Set(offering.flatMap((injection) => injection.overrides!.map((override) => override.annotation.slice(0, override.annotation.indexOf('/') + 1))))].sort();
  return { kinds, prefixes };
}

/**
 * CEL: the admitted workload has no owner (a person wrote it, not a controller: a Deployment's
 * ReplicaSets and a CronJob's Jobs carry the same template) and its pod template has an annotation
 * under one of `prefixes`.
 */
export function overrideAnnotationsCel(prefixes: readonly string[]): string {
  const anyKey = (annotations: string) => `${annotations}.exists(k, ${prefixes.map((prefix) => `k.startsWith(${JSON.stringify(prefix)})`).join(' || ')})`;
  const template = (path: string[]) => {
    const steps = ['object', ...path, 'metadata', 'annotations'];
    const has = steps.slice(1).map((_, i) => `has(${steps.slice(0, i + 2).join('.')})`);
    return `(${[...has, anyKey(steps.join('.'))].join(' && ')})`;
  };
  const cronJob = template(['spec', 'jobTemplate', 'spec', 'template']);
  const workload = template(['spec', 'template']);
  return `!(has(object.metadata.ownerReferences) && size(object.metadata.ownerReferences) > 0) && (request.kind.kind == "CronJob" ? ${cronJob} : ${workload})`;
}
