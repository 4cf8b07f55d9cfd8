// The answer for an object whose `<prefix>/rev` label, its own or its namespace's, names no revision or
// tag the config serves: the apiserver sends such objects here (their own webhook entry), so a typo or a
// removed revision is never a pod admitted bare that nobody hears about.

import { type ResolvedInjectorConfig, type RevisionChooser, annotationKeys, revisionLabel, servedChoosers } from '../config';
import type { AdmissionRequest, AdmissionResponse } from './admission-review';
import { isJsonObject } from './json-object';
import type { MutationResult } from './decisions';
import { ownStringMap } from './pod-patch-builder';
import { findPodTemplate, targetKindOf } from './pod-template';

/** A webhook entry's revision that the loaded config does not have (an entry older or newer than the config). */
export interface MissingRevision {
  readonly revision: string;
}

const NOTHING: MutationResult['overrides'] = Object.freeze([]);

/**
 * Admits `request` unchanged with a warning naming the label (`unservedRevision: warn`, the default), or
 * denies it with that message (`refuse`). An object opted out (`<prefix>/inject: "false"`), or not one
 * whose pods an injection could change, is admitted silently: it would get nothing anyway.
 */
export function unservedRevisionAnswer(request: AdmissionRequest, config: ResolvedInjectorConfig, chooser: RevisionChooser | MissingRevision): MutationResult {
  const unserved = typeof chooser === 'object' ? 'missing-revision' : chooser;
  const answer = (response: AdmissionResponse, counted = false): MutationResult => ({ response, decisions: [], patch: [], podWarnings: [], overrides: NOTHING, ...(counted ? { unserved } : {}) });
  const kind = targetKindOf(request.kind);
  const object = request.object;
  if (request.subResource !== undefined || !kind || !isJsonObject(object) || request.operation === 'DELETE') return answer({ uid: request.uid, allowed: true });
  const pod = findPodTemplate(kind, object);
  if (typeof pod === 'string') return answer({ uid: request.uid, allowed: true });
  const keys = annotationKeys(config.annotationPrefix);
  const annotations = { ...ownStringMap(pod.objectMetadata?.annotations), ...ownStringMap(pod.metadata?.annotations) };
  if (annotations[keys.inject]?.trim().toLowerCase() === 'false') return answer({ uid: request.uid, allowed: true });
  const message = unservedRevisionMessage(request, config, chooser);
  if (config.unservedRevision === 'refuse') {
    return answer({ uid: request.uid, allowed: false, status: { code: 403, message } }, true);
  }
  return answer({ uid: request.uid, allowed: true, warnings: [message] }, true);
}

/** What the warning (or refusal) says: which label, its value when the object carries it, and what is served. */
export function unservedRevisionMessage(request: AdmissionRequest, config: ResolvedInjectorConfig, chooser: RevisionChooser | MissingRevision): string {
  const label = revisionLabel(config.annotationPrefix);
  const served = servedChoosers(config).join(', ') || 'none: the loaded config has no revisions';
  const outcome = config.unservedRevision === 'refuse' ? 'refused' : 'admitted without sidecars';
  if (typeof chooser === 'object') {
    return `the webhook entry for revision ${JSON.stringify(chooser.revision)} reached a replica whose loaded config does not have it (served: ${served}); the MutatingWebhookConfiguration and the ConfigMap are from different syntheses: ${outcome}`;
  }
  if (chooser === 'namespace') {
    return `namespace ${JSON.stringify(request.namespace ?? '')} is labelled ${label} with no revision or tag this injector serves (served: ${served}): ${outcome}`;
  }
  const kind = targetKindOf(request.kind);
  const pod = kind && isJsonObject(request.object) ? findPodTemplate(kind, request.object) : undefined;
  const labels = pod && typeof pod !== 'string' ? { ...ownStringMap(pod.objectMetadata?.labels), ...ownStringMap(pod.metadata?.labels) } : {};
  const value = labels[label];
  const shown = value === undefined ? '' : `=${JSON.stringify(value.slice(0, 63))}`;
  return `label ${label}${shown} names no revision or tag this injector serves (served: ${served}): ${outcome}`;
}
