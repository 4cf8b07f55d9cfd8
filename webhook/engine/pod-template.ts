import type { TargetKind } from '../config';
import { hasOwnKey } from '../config/own-property';
import type { GroupVersionKind, KubernetesObject } from './admission-review';
import { Json, isJsonObject } from './json-object';

/** API group of each target kind: a CRD that happens to be called "Deployment" is not one. */
const GROUP_OF_KIND: Record<TargetKind, string> = {
  Pod: '',
  Deployment: 'apps',
  StatefulSet: 'apps',
  DaemonSet: 'apps',
  ReplicaSet: 'apps',
  Job: 'batch',
  CronJob: 'batch',
};

/** Where the pod template sits inside each kind, as JSON pointer tokens. */
const TEMPLATE_PATH: Record<TargetKind, readonly string[]> = {
  Pod: [],
  Deployment: ['spec', 'template'],
  StatefulSet: ['spec', 'template'],
  DaemonSet: ['spec', 'template'],
  ReplicaSet: ['spec', 'template'],
  Job: ['spec', 'template'],
  CronJob: ['spec', 'jobTemplate', 'spec', 'template'],
};

/** TEMPLATE_PATH as a JSON pointer per kind, made once. */
const TEMPLATE_POINTER = Object.fromEntries(
  Object.entries(TEMPLATE_PATH).map(([kind, tokens]) => [kind, tokens.map((token) => '/' + token).join('')]),
) as Record<TargetKind, string>;

/** The pod (or pod template) of an object, with the JSON pointers the patch uses to reach it. */
export interface PodTemplate {
  readonly kind: TargetKind;
  /** Pointer of the pod template ('' for a Pod). */
  readonly pointer: string;
  /** The template's metadata, undefined when the object has none yet. */
  readonly metadata: Json | undefined;
  readonly spec: Json & { containers: Json[] };
  /** The object's own metadata (for workloads, distinct from the template's). */
  readonly objectMetadata: Json | undefined;
}

export function targetKindOf(kind: GroupVersionKind): TargetKind | undefined {
  const candidate = kind.kind as TargetKind;
  return hasOwnKey(GROUP_OF_KIND, candidate) && GROUP_OF_KIND[candidate] === kind.group
    ? candidate
    : undefined;
}

function asObject(value: unknown): Json | undefined {
  return isJsonObject(value) ? value : undefined;
}

/** Finds the pod template of `object`, or explains why it has none. */
export function findPodTemplate(kind: TargetKind, object: KubernetesObject): PodTemplate | string {
  let template: Json | undefined = object;
  for (const token of TEMPLATE_PATH[kind]) {
    template = asObject(template?.[token]);
    if (!template) return `the ${kind} has no ${TEMPLATE_PATH[kind].join('.')}`;
  }
  const spec = asObject(template.spec);
  if (!spec || !Array.isArray(spec.containers)) return `the ${kind} has no pod spec with containers`;
  return {
    kind,
    pointer: TEMPLATE_POINTER[kind],
    metadata: asObject(template.metadata),
    spec: spec as Json & { containers: Json[] },
    objectMetadata: asObject(object.metadata),
  };
}
