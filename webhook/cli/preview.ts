// One pass over the input, shared by inject, explain and diff: for each object, what the apiserver
// would do (call the webhook or not), then what the webhook would answer, from the very engine the
// webhook runs, and the object with that answer's patch applied.

import { applyPatch, type Operation } from 'fast-json-patch';
import type { ResolvedInjectorConfig, TargetKind } from '../config';
import { type RevisionChooser, TARGET_KINDS, TARGET_KIND_RESOURCES, admissionRoute, chosenRevision, revisionConfig, revisionLabel } from '../config';
import type { AdmissionRequest, GroupVersionKind, KubernetesObject } from '../engine/admission-review';
import { evaluate, type MutationResult } from '../engine/mutate';
import { ownStringMap } from '../engine/pod-patch-builder';
import { targetKindOf } from '../engine/pod-template';
import { unservedRevisionAnswer } from '../engine/unserved-revision';
import { matchWebhookConfiguration, type WebhookMatch } from '../engine/webhook-match';
import { createRequestFor, decodeResponsePatch, groupVersionKindOf } from '../fleet/admission-request';
import type { InjectorSource } from './injector-source';
import type { InputDocument } from './manifest-input';
import { podRevision } from '../fleet/pod-revision';

/** The namespace an object without `metadata.namespace` lands in when nothing else is said (as kubectl). */
export const DEFAULT_OBJECT_NAMESPACE = 'default';


export interface PreviewOptions {
  /** Namespace of objects without `metadata.namespace`. @default 'default' */
  readonly namespace?: string;
  /** Labels of every object's namespace (besides `kubernetes.io/metadata.name`). @default {} */
  readonly namespaceLabels?: Readonly<Record<string, string>>;
  /** Annotations of every object's namespace, for overrides that read namespace defaults. @default {} */
  readonly namespaceAnnotations?: Readonly<Record<string, string>>;
  /** With revisions, the tag or revision to preview under, whatever the labels choose (`--revision`).
   * @default the one the webhook entries (or, without them, the labels) choose */
  readonly revision?: string;
}

/** What happens to one input object. */
export interface ObjectPreview {
  /** The document the object is in. */
  readonly input: InputDocument;
  /** The object: the document's, or one of the items of a `v1` `List` document. */
  readonly object: KubernetesObject;
  /** The object's index in the List's `items`; undefined when it is the whole document. */
  readonly item: number | undefined;
  readonly gvk: GroupVersionKind;
  readonly name: string | undefined;
  readonly namespace: string;
  /** The kind the injector treats it as; undefined for every other kind, which passes through. */
  readonly targetKind: TargetKind | undefined;
  /** The labels its namespace is taken to have, as the apiserver matches them. */
  readonly namespaceLabels: Readonly<Record<string, string>>;
  /** Each webhook's verdict; undefined when no webhook configuration was given (`--config`). */
  readonly webhooks: readonly WebhookMatch[] | undefined;
  /** Whether the apiserver sends the object to the webhook (assumed when the configuration is unknown). */
  readonly sentToWebhook: boolean;
  /** The AdmissionRequest the engine was given, when it was. */
  readonly request: AdmissionRequest | undefined;
  /** The engine's answer, decisions and patch, when it was asked. */
  readonly result: MutationResult | undefined;
  /** The JSONPatch the apiserver would apply ([] when nothing changes). */
  readonly patch: readonly Operation[];
  /** The object after the patch (the input object itself when the patch is empty). */
  readonly output: KubernetesObject;
  /** With revisions: the revision's config the engine was given (undefined: the config as loaded). */
  readonly applied?: ResolvedInjectorConfig;
  /** With revisions: which revision applies and what chose it, or why none does. */
  readonly revision?: string;
}

function metadataOf(object: KubernetesObject): Record<string, unknown> {
  const metadata = object.metadata;
  return metadata && typeof metadata === 'object' && !Array.isArray(metadata) ? (metadata as Record<string, unknown>) : {};
}

/** The labels or annotations that `Namespace` objects among the input give their namespaces. */
function namespaceMetadataInInput(documents: readonly InputDocument[], field: 'labels' | 'annotations'): Map<string, Record<string, string>> {
  const maps = new Map<string, Record<string, string>>();
  const objects = documents.flatMap(({ object }) => (object ? (listItems(object)?.map((item) => item.object) ?? [object]) : []));
  for (const object of objects) {
    if (object.apiVersion !== 'v1' || object.kind !== 'Namespace') continue;
    const metadata = metadataOf(object);
    if (typeof metadata.name === 'string') maps.set(metadata.name, ownStringMap(metadata[field]));
  }
  return maps;
}

/** The objects in a `v1` `List` (what `kubectl get -o yaml` prints for many), with their indexes. */
export function listItems(object: KubernetesObject): { object: KubernetesObject; item: number }[] | undefined {
  if (object.apiVersion !== 'v1' || object.kind !== 'List' || !Array.isArray(object.items)) return undefined;
  const items = (object.items as unknown[]).flatMap((item, index) =>
    item !== null && typeof item === 'object' && !Array.isArray(item) && typeof (item as KubernetesObject).apiVersion === 'string' && typeof (item as KubernetesObject).kind === 'string'
      ? [{ object: item as KubernetesObject, item: index }]
      : [],
  );
  return items.length > 0 ? items : undefined;
}

/** Previews every object of the input (each item of a List on its own), in order. */
export function previewAll(documents: readonly InputDocument[], source: InjectorSource, options: PreviewOptions = {}): ObjectPreview[] {
  const inputNamespaces = { labels: namespaceMetadataInInput(documents, 'labels'), annotations: namespaceMetadataInInput(documents, 'annotations') };
  const previews: ObjectPreview[] = [];
  for (const document of documents) {
    if (!document.object) continue;
    const objects = listItems(document.object) ?? [{ object: document.object, item: undefined }];
    for (const { object, item } of objects) {
      previews.push(previewObject(document, object, item, source.config, source.webhookConfiguration, options, inputNamespaces, previews.length + 1));
    }
  }
  return previews;
}

function previewObject(
  input: InputDocument,
  object: KubernetesObject,
  item: number | undefined,
  config: ResolvedInjectorConfig,
  webhookConfiguration: InjectorSource['webhookConfiguration'],
  options: PreviewOptions,
  inputNamespaces: { labels: Map<string, Record<string, string>>; annotations: Map<string, Record<string, string>> },
  sequence: number,
): ObjectPreview {
  const gvk = groupVersionKindOf(object);
  const targetKind = targetKindOf(gvk);
  const metadata = metadataOf(object);
  const name = typeof metadata.name === 'string' ? metadata.name : typeof metadata.generateName === 'string' ? metadata.generateName : undefined;
  const namespace = typeof metadata.namespace === 'string' && metadata.namespace !== '' ? metadata.namespace : (options.namespace ?? DEFAULT_OBJECT_NAMESPACE);
  const namespaceLabels = { ...inputNamespaces.labels.get(namespace), ...options.namespaceLabels, 'kubernetes.io/metadata.name': namespace };
  const unchanged = { input, object, item, gvk, name, namespace, targetKind, namespaceLabels, patch: [], output: object };
  // Every other kind passes through: the engine changes nothing but pods and pod templates.
  if (!targetKind) return { ...unchanged, webhooks: undefined, sentToWebhook: false, request: undefined, result: undefined };

  const webhooks = webhookConfiguration
    ? matchWebhookConfiguration(webhookConfiguration, {
        group: gvk.group,
        version: gvk.version,
        resource: TARGET_KIND_RESOURCES[targetKind].resource,
        operation: 'CREATE',
        namespace,
        namespaceLabels,
        objectLabels: ownStringMap(metadata.labels),
      })
    : undefined;
  const sentToWebhook = webhooks ? webhooks.some((webhook) => webhook.called) : true;
  if (!sentToWebhook) return { ...unchanged, webhooks, sentToWebhook, request: undefined, result: undefined };

  const request = createRequestFor(object, namespace, `preview-${sequence}`);
  // The namespace as the input's Namespace object and --namespace-annotations describe it (the webhook reads it from the cluster).
  const namespaceAnnotations = { ...inputNamespaces.annotations.get(namespace), ...options.namespaceAnnotations };
  const route = config.revisions ? previewRevision(config, webhookConfiguration, webhooks, ownStringMap(metadata.labels), namespaceLabels, options.revision) : undefined;
  const applied = route && 'config' in route ? route.config : undefined;
  const result =
    route && 'unserved' in route ? unservedRevisionAnswer(request, config, route.unserved)
    : evaluate(request, applied ?? config, { namespaceAnnotations });
  const patch = decodeResponsePatch(result);
  // Validated like the apiserver applies it: an operation that does not fit the object is an error.
  // Applied to copies: fast-json-patch puts an added value itself into the document, so a later
  // operation into a map an earlier one created would otherwise change the patch diff prints.
  const output = patch.length > 0 ? (applyPatch(structuredClone(object), structuredClone(patch), true, true).newDocument as KubernetesObject) : object;
  return { ...unchanged, webhooks, sentToWebhook, request, result, patch, output, ...(applied ? { applied } : {}), ...(route ? { revision: route.description } : {}) };
}

type PreviewRoute = { config: ResolvedInjectorConfig; description: string } | { unserved: RevisionChooser; description: string };

/**
 * The revision an object is previewed under: `--revision` when given; else the one whose webhook entry the
 * apiserver calls (with `--from`); else the one the labels choose, as the entries would.
 */
function previewRevision(
  config: ResolvedInjectorConfig,
  webhookConfiguration: InjectorSource['webhookConfiguration'],
  webhooks: readonly WebhookMatch[] | undefined,
  objectLabels: Record<string, string>,
  namespaceLabels: Record<string, string>,
  forced: string | undefined,
): PreviewRoute {
  if (forced !== undefined) {
    const name = chosenRevision(config, forced)!;
    return { config: revisionConfig(config, name)!, description: `${name} (--revision ${forced})` };
  }
  if (webhooks && webhookConfiguration) {
    const called = webhooks.find((match) => match.called);
    const entry = (webhookConfiguration.webhooks ?? []).find((webhook) => webhook.name === called?.webhook);
    const clientConfig = entry?.clientConfig as { service?: { path?: unknown } } | undefined;
    const route = typeof clientConfig?.service?.path === 'string' ? admissionRoute(clientConfig.service.path) : undefined;
    const revision = route?.startsWith('revision:') ? route.slice('revision:'.length) : undefined;
    const view = revision === undefined ? undefined : revisionConfig(config, revision);
    if (view) return { config: view, description: `${revision} (webhook ${called!.webhook})` };
    const unserved = route?.startsWith('unserved:') ? (route.slice('unserved:'.length) as RevisionChooser) : undefined;
    if (unserved) return { unserved, description: `none: ${unserved === 'workload' ? 'its' : 'its namespace\'s'} ${revisionLabel(config.annotationPrefix)} label names nothing served` };
  }
  const chosen = podRevision(config, objectLabels, {}, namespaceLabels);
  if (chosen?.chosen !== undefined) {
    const how = chosen.by === 'default' ? 'the default tag' : `${chosen.by === 'workload' ? 'its' : "its namespace's"} label ${chosen.value}`;
    return { config: revisionConfig(config, chosen.chosen)!, description: `${chosen.chosen} (${how})` };
  }
  return { unserved: chosen?.by === 'namespace' ? 'namespace' : 'workload', description: `none: ${chosen?.unserved ?? 'no default tag'}` };
}

/** The kinds the injector changes, for messages. */
export const TARGET_KIND_LIST = TARGET_KINDS.join(', ');
