// The guarded requests of `rollout --in-place`: one JSON Patch per pod whose `test` operations hold it to
// the pod as read, the images replaced (or put back by `--undo`), and the record `--undo` reads back.

import { annotationKeys, dns1123LabelError } from '../config';
import type { KubernetesObject } from '../engine/admission-review';
import { pointer } from '../engine/json-pointer';
import { ownStringMap } from '../engine/pod-patch-builder';

function metadataOf(object: KubernetesObject | undefined): Record<string, any> {
  const metadata = object?.metadata;
  return metadata && typeof metadata === 'object' && !Array.isArray(metadata) ? (metadata as Record<string, any>) : {};
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** Which list of the pod spec a container is in. */
export type ContainerList = 'containers' | 'initContainers';

/** One image to replace in a running pod. */
export interface ImageChange {
  /** The injection that added the container. */
  readonly injection: string;
  readonly container: string;
  readonly list: ContainerList;
  /** Its index in the list when planned (the patch tests that the name is still there). */
  readonly index: number;
  readonly from: string;
  readonly to: string;
  /** A restartable init container (`restartPolicy: Always`): whether the kubelet restarts it on an image change is `--native-sidecars`. */
  readonly nativeSidecar: boolean;
}

/** What `--undo` puts back, as recorded in the pod's previous-images annotation by the upgrade. */
export interface PreviousImages {
  /** The hashes annotation before the upgrade. */
  readonly hashes: string;
  /** Container name to the image it ran before. */
  readonly images: Readonly<Record<string, string>>;
  /** The revision annotation before, when the upgrade changed it (a move to a tag's new revision). */
  readonly revision?: string;
}

/** The longest previous-images annotation read back (it comes with the pod, from whoever wrote it). */
export const MAX_PREVIOUS_IMAGES_LENGTH = 8192;

/** The previous-images annotation read back, or why it cannot be. */
export function parsePreviousImages(value: string | undefined): PreviousImages | string {
  if (value === undefined) return 'no previous-images annotation';
  if (value.length > MAX_PREVIOUS_IMAGES_LENGTH) return `the previous-images annotation is over ${MAX_PREVIOUS_IMAGES_LENGTH} characters`;
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    return 'the previous-images annotation is not JSON';
  }
  if (!isObject(parsed) || typeof parsed.hashes !== 'string' || !isObject(parsed.images)) return 'the previous-images annotation is not {"hashes": "...", "images": {...}}';
  const images: Record<string, string> = {};
  for (const [name, image] of Object.entries(parsed.images)) {
    if (typeof image !== 'string' || image === '' || /\s/.test(image)) return `the previous-images annotation's image for ${name} is not an image reference`;
    images[name] = image;
  }
  if (parsed.revision !== undefined && (typeof parsed.revision !== 'string' || dns1123LabelError(parsed.revision) !== undefined)) return 'the previous-images annotation\'s revision is not a revision name';
  return { hashes: parsed.hashes, images, ...(typeof parsed.revision === 'string' ? { revision: parsed.revision } : {}) };
}

/** The annotation's text: JSON with the hashes first, then the images in container order, then the revision when it changed. */
export function formatPreviousImages(previous: PreviousImages): string {
  return JSON.stringify({ hashes: previous.hashes, images: previous.images, ...(previous.revision !== undefined ? { revision: previous.revision } : {}) });
}

/** One RFC 6902 operation of the in-place patch. */
export type GuardedOperation =
  | { readonly op: 'test'; readonly path: string; readonly value: unknown }
  | { readonly op: 'replace' | 'add'; readonly path: string; readonly value: unknown }
  | { readonly op: 'remove'; readonly path: string };

function annotationPointer(key: string): string {
  return pointer('/metadata/annotations', key);
}

/**
 * The one request that upgrades a pod: a JSON Patch whose `test` operations hold it to the pod as read
 * (its resourceVersion, and each container's name and image at its index), then the new images, the
 * hashes annotation with the upgraded entries, and the previous images recorded for `--undo`. The
 * apiserver applies all of it or none: a pod changed since it was read (a status write by the kubelet
 * changes its resourceVersion too) fails the test and is read again.
 */
export function inPlacePatch(pod: KubernetesObject, plan: { readonly changes: readonly ImageChange[]; readonly hashesAfter?: string; readonly revisionAfter?: string }, prefix: string): GuardedOperation[] {
  const keys = annotationKeys(prefix);
  const metadata = metadataOf(pod);
  const annotations = ownStringMap(metadata.annotations);
  const operations: GuardedOperation[] = [{ op: 'test', path: '/metadata/resourceVersion', value: metadata.resourceVersion }];
  const images: Record<string, string> = {};
  for (const change of plan.changes) {
    const at = pointer('/spec', change.list, change.index);
    operations.push({ op: 'test', path: `${at}/name`, value: change.container }, { op: 'test', path: `${at}/image`, value: change.from });
    images[change.container] = change.from;
  }
  for (const change of plan.changes) operations.push({ op: 'replace', path: `${pointer('/spec', change.list, change.index)}/image`, value: change.to });
  const hashesKey = annotationPointer(keys.hashes);
  operations.push({ op: 'test', path: hashesKey, value: annotations[keys.hashes] }, { op: 'replace', path: hashesKey, value: plan.hashesAfter });
  const revisionBefore = annotations[keys.revision];
  if (plan.revisionAfter !== undefined) operations.push({ op: 'add', path: annotationPointer(keys.revision), value: plan.revisionAfter });
  const previous = { hashes: annotations[keys.hashes], images, ...(plan.revisionAfter !== undefined && revisionBefore !== undefined ? { revision: revisionBefore } : {}) };
  operations.push({ op: 'add', path: annotationPointer(keys.previousImages), value: formatPreviousImages(previous) });
  return operations;
}

/** The one guarded request that puts a pod's previous images and hashes back and drops the record. */
export function undoPatch(pod: KubernetesObject, plan: { readonly changes: readonly ImageChange[]; readonly previous: PreviousImages }, prefix: string): GuardedOperation[] {
  const keys = annotationKeys(prefix);
  const metadata = metadataOf(pod);
  const annotations = ownStringMap(metadata.annotations);
  const operations: GuardedOperation[] = [{ op: 'test', path: '/metadata/resourceVersion', value: metadata.resourceVersion }];
  for (const change of plan.changes) {
    const at = pointer('/spec', change.list, change.index);
    operations.push({ op: 'test', path: `${at}/name`, value: change.container }, { op: 'test', path: `${at}/image`, value: change.from });
  }
  for (const change of plan.changes) operations.push({ op: 'replace', path: `${pointer('/spec', change.list, change.index)}/image`, value: change.to });
  const previousKey = annotationPointer(keys.previousImages);
  operations.push({ op: 'test', path: previousKey, value: annotations[keys.previousImages] });
  operations.push({ op: 'add', path: annotationPointer(keys.hashes), value: plan.previous.hashes });
  if (plan.previous.revision !== undefined) operations.push({ op: 'add', path: annotationPointer(keys.revision), value: plan.previous.revision });
  operations.push({ op: 'remove', path: previousKey });
  return operations;
}

