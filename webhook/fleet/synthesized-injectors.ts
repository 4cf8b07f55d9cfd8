// The injector that synthesized objects make up, whether read from `dist/` (status --from, inject
// --from) or from the cluster (the reconciler): the webhook's ConfigMap and MutatingWebhookConfiguration,
// or the policy backend's policies and bindings, each turned into a config and the webhook configuration
// (or its equivalent) that decides which objects the injector sees. No YAML parser here: the objects
// come parsed.

import { CONFIG_FILE_NAME, InjectorConfigError, POLICY_CONFIG_ANNOTATION, POLICY_TAGS_ANNOTATION, ResolvedInjectorConfig, type RevisionChooser, admissionPath, loadInjectorConfig, revisionLabel } from '../config';
import type { KubernetesObject } from '../engine/admission-review';
import type { MutatingWebhook, MutatingWebhookConfiguration } from '../engine/webhook-match';
import { InputError, type InputLocation, describeLocation } from './input-location';

export interface InjectorSource {
  /** The config the webhook would load, validated by the same validator. */
  readonly config: ResolvedInjectorConfig;
  /** The webhook configuration (for policies, its equivalent: each bound policy's resources with its
   * binding's selectors); undefined with `--config`, when only the engine can be evaluated. */
  readonly webhookConfiguration?: MutatingWebhookConfiguration;
  /** What was read, for messages: `dist/sidecar-injector.k8s.yaml: ConfigMap sidecar-injector/...`. */
  readonly description: string;
}

/** One object as read: where from, and the object. */
export interface SourceDocument extends InputLocation {
  readonly object: KubernetesObject | null;
}

function describeObject(object: Record<string, any>): string {
  const namespace = object.metadata?.namespace;
  return `${object.kind} ${namespace ? `${namespace}/` : ''}${object.metadata?.name ?? '(no name)'}`;
}

function isConfigMapWithConfig(document: SourceDocument): boolean {
  const object = document.object as Record<string, any> | null;
  return object?.apiVersion === 'v1' && object.kind === 'ConfigMap' && typeof object.data?.[CONFIG_FILE_NAME] === 'string';
}

function isWebhookConfiguration(document: SourceDocument): boolean {
  const object = document.object as Record<string, any> | null;
  return object?.kind === 'MutatingWebhookConfiguration' && String(object.apiVersion).startsWith('admissionregistration.k8s.io/');
}

/** The namespaces of the Services a webhook configuration calls. */
function serviceNamespaces(configuration: Record<string, any>): Set<string> {
  const namespaces = new Set<string>();
  for (const webhook of configuration.webhooks ?? []) {
    const namespace = webhook?.clientConfig?.service?.namespace;
    if (typeof namespace === 'string') namespaces.add(namespace);
  }
  return namespaces;
}

export function parseConfig(text: string, subject: string): ResolvedInjectorConfig {
  try {
    return loadInjectorConfig(text);
  } catch (error) {
    if (error instanceof InjectorConfigError) throw new InputError([`${subject}: ${error.message}`]);
    throw error;
  }
}

/** The document's object, read as parsed YAML. */
function objectOf(document: SourceDocument): Record<string, any> {
  return document.object as Record<string, any>;
}

function isAdmissionRegistration(document: SourceDocument, kind: string): boolean {
  const object = document.object as Record<string, any> | null;
  return object?.kind === kind && String(object.apiVersion).startsWith('admissionregistration.k8s.io/');
}

/** One injector found in the synthesized output, before its config is parsed. */
interface SynthesizedInjector {
  readonly configText: string;
  readonly subject: string;
  readonly webhookConfiguration: MutatingWebhookConfiguration;
  readonly description: string;
}

/**
 * A bound policy as the webhook entry it amounts to: the policy's resources and the binding's selectors,
 * and, where given, the path the webhook entry of the same selectors would call.
 */
function boundPolicyWebhook(policy: Record<string, any>, binding: SourceDocument, path?: string): MutatingWebhook {
  const bound = objectOf(binding);
  const matchResources = bound.spec?.matchResources ?? {};
  return {
    name: `${bound.metadata?.name} (${policy.kind}Binding)`,
    rules: policy.spec?.matchConstraints?.resourceRules ?? [],
    matchPolicy: policy.spec?.matchConstraints?.matchPolicy,
    namespaceSelector: matchResources.namespaceSelector,
    objectSelector: matchResources.objectSelector,
    ...(path !== undefined ? { clientConfig: { service: { path } } } : {}),
  };
}

/**
 * The policy backend's injectors: its policies are named `<prefix>.<pods|workloads|cronjobs>` and each
 * carries the whole config. The apiserver applies a policy where a binding's matchResources select the
 * object, so each bound policy becomes a webhook with the policy's resources and the binding's
 * selectors: "missing" is then computed with the scope the policies apply in, as for the webhook.
 */
function policyInjectors(from: string, documents: readonly SourceDocument[]): SynthesizedInjector[] {
  const policies = documents.filter((document) => isAdmissionRegistration(document, 'MutatingAdmissionPolicy'));
  const bindings = documents.filter((document) => isAdmissionRegistration(document, 'MutatingAdmissionPolicyBinding'));
  const validating = documents.filter((document) => isAdmissionRegistration(document, 'ValidatingAdmissionPolicy'));
  const validatingBindings = documents.filter((document) => isAdmissionRegistration(document, 'ValidatingAdmissionPolicyBinding'));
  const carries = (document: SourceDocument) => typeof objectOf(document).metadata?.annotations?.[POLICY_CONFIG_ANNOTATION] === 'string';
  // The ValidatingAdmissionPolicies of injections in audit mode carry the config too (named as the
  // shape's MutatingAdmissionPolicy): where they bind, the injector sees the object, as the webhook would.
  const carrying = [...policies.filter(carries), ...validating.filter(carries)];
  if (policies.length > 0 && carrying.length === 0) {
    throw new InputError([
      `${from}: holds MutatingAdmissionPolicies (${policies.map((document) => describeObject(document.object!)).join(', ')}) without the ` +
        `${POLICY_CONFIG_ANNOTATION} annotation (synthesized by an older version); synth again, or give --config with the whole config: JSON.stringify(injector.config)`,
    ]);
  }
  // One injector's policies carry the same config (each revision's too): grouped by it.
  const groups = new Map<string, SourceDocument[]>();
  for (const document of carrying) {
    const annotations = objectOf(document).metadata.annotations;
    const key = `${annotations[POLICY_CONFIG_ANNOTATION]}\u0000${annotations[POLICY_TAGS_ANNOTATION] ?? ''}`;
    groups.set(key, [...(groups.get(key) ?? []), document]);
  }
  const injectors = [...groups].map(([key, members]) => {
    const first = members[0].object as Record<string, any>;
    const [configOnly, tagsText] = key.split('\u0000');
    // The tags ride apart (POLICY_TAGS_ANNOTATION): put back, the config is the one the construct holds.
    const configText = tagsText === '' ? configOnly : JSON.stringify({ ...JSON.parse(configOnly), tags: JSON.parse(tagsText) });
    let prefix = '';
    let revisionLabelKey: string | undefined;
    try {
      const parsed = JSON.parse(configOnly);
      prefix = typeof parsed.annotationPrefix === 'string' ? parsed.annotationPrefix : '';
      if (Array.isArray(parsed.revisions)) revisionLabelKey = revisionLabel(prefix);
    } catch {
      // parseConfig names the problem.
    }
    const webhooks: MutatingWebhook[] = [];
    const used: SourceDocument[] = [];
    for (const member of members) {
      const policy = member.object as Record<string, any>;
      const revision = revisionLabelKey === undefined ? undefined : policy.metadata.labels?.[revisionLabelKey];
      const policyBindings = policy.kind === 'ValidatingAdmissionPolicy' ? validatingBindings : bindings;
      for (const binding of policyBindings.filter((candidate) => objectOf(candidate).spec?.policyName === policy.metadata.name)) {
        // Where the webhook entry of the same selectors would send it: the revision the policy applies.
        webhooks.push(boundPolicyWebhook(policy, binding, typeof revision === 'string' ? admissionPath(`revision:${revision}`) : undefined));
        used.push(binding);
      }
    }
    // With revisions, the policy for labels naming nothing served, named after the same prefix.
    const namePrefix = String(first.metadata.name).split('.').slice(0, revisionLabelKey === undefined ? -1 : -2).join('.');
    for (const policy of revisionLabelKey === undefined ? [] : validating.filter((document) => objectOf(document).metadata?.name === `${namePrefix}.unserved-revision`)) {
      for (const binding of validatingBindings.filter((candidate) => objectOf(candidate).spec?.policyName === objectOf(policy).metadata.name)) {
        const chooser = String(objectOf(binding).metadata?.name).split('.').pop();
        webhooks.push(boundPolicyWebhook(objectOf(policy), binding, admissionPath(`unserved:${chooser as RevisionChooser}`)));
        used.push(policy, binding);
      }
    }
    return {
      configText,
      subject: `${describeLocation(members[0])}: ${describeObject(first)} annotation ${POLICY_CONFIG_ANNOTATION}`,
      webhookConfiguration: { apiVersion: 'admissionregistration.k8s.io/v1', kind: 'MutatingWebhookConfiguration', metadata: { name: namePrefix }, webhooks },
      description: `${[...members, ...used].map((document) => `${describeObject(document.object!)} (${document.source})`).join(', ')}`,
      first: members[0],
    };
  });
  // Policies of one name prefix whose configs differ: synthesized at different times, not two injectors.
  for (const injector of injectors) {
    const other = injectors.find((candidate) => candidate !== injector && candidate.webhookConfiguration.metadata?.name === injector.webhookConfiguration.metadata?.name);
    if (other) throw new InputError([`${from}: ${describeObject(injector.first.object!)} and ${describeObject(other.first.object!)} carry different ${POLICY_CONFIG_ANNOTATION}; synth again`]);
  }
  return injectors.map(({ first: _first, ...injector }) => injector);
}

/** The webhook backend's injectors: each ConfigMap with a config.json and the configuration calling its namespace. */
function webhookInjectors(from: string, documents: readonly SourceDocument[]): SynthesizedInjector[] {
  const configMaps = documents.filter(isConfigMapWithConfig);
  if (configMaps.length === 0) return [];
  const webhookConfigurations = documents.filter(isWebhookConfiguration);
  // Each injector's webhook configuration calls the Service in the namespace of its ConfigMap.
  const pairs = configMaps.flatMap((configMap) => {
    const namespace = (configMap.object as Record<string, any>).metadata?.namespace;
    return webhookConfigurations
      .filter((candidate) => serviceNamespaces(candidate.object as Record<string, any>).has(namespace))
      .map((webhookConfiguration) => ({ configMap, webhookConfiguration }));
  });
  const found = (list: SourceDocument[]) => list.map((document) => `${describeObject(document.object!)} (${describeLocation(document)})`).join('; ');
  if (pairs.length === 0) {
    if (webhookConfigurations.length === 0) throw new InputError([`${from}: no MutatingWebhookConfiguration; is this the output of cdk8s synth for a SidecarInjector?`]);
    throw new InputError([`${from}: no MutatingWebhookConfiguration calls a Service in the namespace of ${found(configMaps)}`]);
  }
  return pairs.map(({ configMap, webhookConfiguration }) => {
    const configMapObject = configMap.object as Record<string, any>;
    return {
      configText: configMapObject.data[CONFIG_FILE_NAME],
      subject: `${describeLocation(configMap)}: ${describeObject(configMapObject)} ${CONFIG_FILE_NAME}`,
      webhookConfiguration: webhookConfiguration.object as MutatingWebhookConfiguration,
      description: `${describeObject(configMapObject)} (${configMap.source}) and ${describeObject(webhookConfiguration.object!)} (${webhookConfiguration.source})`,
    };
  });
}

/**
 * The injector that synthesized objects make up: an injector ConfigMap and the webhook configuration
 * calling its namespace, or MutatingAdmissionPolicies (whose annotation holds the same config) and their
 * bindings. `from` begins every message: `--from dist/`, or `in the cluster`.
 */
export function injectorFromDocuments(from: string, documents: readonly SourceDocument[]): InjectorSource {
  const injectors = [...webhookInjectors(from, documents), ...policyInjectors(from, documents)];
  if (injectors.length === 0) {
    throw new InputError([
      `${from}: no ConfigMap with a ${CONFIG_FILE_NAME} key and no MutatingAdmissionPolicy with a ${POLICY_CONFIG_ANNOTATION} annotation; ` +
        'is this the output of cdk8s synth for a SidecarInjector?',
    ]);
  }
  if (injectors.length > 1) {
    throw new InputError([`${from}: holds ${injectors.length} injectors (${injectors.map((injector) => injector.description).join('; ')}); point --from at one synthesized file`]);
  }
  const [injector] = injectors;
  return { config: parseConfig(injector.configText, injector.subject), webhookConfiguration: injector.webhookConfiguration, description: injector.description };
}

