// `status`: the ConfigMaps, Secrets and PersistentVolumeClaims that injected volumes need in the pods'
// own namespaces. An injection's volume names its source by name only, so the source must exist in
// every namespace the injection reaches (not in the injector's): when it does not, the kubelet cannot
// mount it and the pod waits in ContainerCreating, with nothing but a FailedMount event to say why.
// Pure: the pods and the config in, what to look up and what is missing out (the cluster is read elsewhere).

import { type ResolvedInjectorConfig, annotationKeys } from '../config';
import type { KubernetesObject } from '../engine/admission-review';
import { parseStatus } from '../engine/mutate';
import { ownStringMap } from '../engine/pod-patch-builder';

export type VolumeSourceKind = 'ConfigMap' | 'Secret' | 'PersistentVolumeClaim';

/** A source one injected volume needs in one namespace, with the pods that carry it there. */
export interface VolumeSourceNeed {
  readonly namespace: string;
  readonly kind: VolumeSourceKind;
  readonly name: string;
  readonly injection: string;
  readonly volume: string;
  /** The pods that have the volume. */
  readonly pods: readonly string[];
  /** Of those, the ones still Pending (waiting on it, if it is missing). */
  readonly pending: readonly string[];
}

/** What a look-up found: the object exists, does not, or could not be read (the message says why). */
export type VolumeSourceLookup = { readonly found: true } | { readonly found: false } | { readonly error: string };

export interface VolumeSourceFinding extends VolumeSourceNeed {
  readonly state: 'missing' | 'unknown';
  /** Why it could not be checked (state `unknown`). */
  readonly error?: string;
}

function objectOf(value: unknown): Record<string, any> {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, any>) : {};
}

/** The named sources a volume needs that the kubelet must find (optional ones excluded). */
function sourcesOf(volume: Record<string, any>): { kind: VolumeSourceKind; name: string }[] {
  const found: { kind: VolumeSourceKind; name: string }[] = [];
  const configMap = (source: Record<string, any>) => {
    if (typeof source.name === 'string' && source.optional !== true) found.push({ kind: 'ConfigMap', name: source.name });
  };
  const secret = (source: Record<string, any>, key: 'secretName' | 'name') => {
    if (typeof source[key] === 'string' && source.optional !== true) found.push({ kind: 'Secret', name: source[key] });
  };
  if (volume.configMap) configMap(objectOf(volume.configMap));
  if (volume.secret) secret(objectOf(volume.secret), 'secretName');
  const claim = objectOf(volume.persistentVolumeClaim);
  if (typeof claim.claimName === 'string') found.push({ kind: 'PersistentVolumeClaim', name: claim.claimName });
  const projected = objectOf(volume.projected).sources;
  for (const source of Array.isArray(projected) ? projected : []) {
    if (objectOf(source).configMap) configMap(objectOf(source.configMap));
    if (objectOf(source).secret) secret(objectOf(source.secret), 'name');
  }
  return found;
}

/**
 * What the injected volumes of these pods need, per namespace: for each pod that carries an injection
 * (its status annotation), the pod's own volume of each name the injection adds, as the pod has it
 * (placeholders filled in, or the user's volume where it won the name).
 */
export function injectedVolumeSources(pods: readonly KubernetesObject[], config: ResolvedInjectorConfig): VolumeSourceNeed[] {
  const statusKey = annotationKeys(config.annotationPrefix).status;
  const volumesOf = new Map(config.injections.map((injection) => [injection.name, (injection.volumes ?? []).map((volume) => volume.name)]));
  const needs = new Map<string, { need: Omit<VolumeSourceNeed, 'pods' | 'pending'>; pods: string[]; pending: string[] }>();
  for (const pod of pods) {
    const metadata = objectOf(pod.metadata);
    const namespace = typeof metadata.namespace === 'string' ? metadata.namespace : 'default';
    const podName = String(metadata.name ?? metadata.generateName ?? '(no name)');
    const podVolumes = objectOf(pod.spec).volumes;
    const byName = new Map<string, Record<string, any>>();
    for (const volume of Array.isArray(podVolumes) ? podVolumes : []) if (typeof objectOf(volume).name === 'string') byName.set(volume.name, volume);
    const pending = objectOf(pod.status).phase === 'Pending';
    for (const injection of parseStatus(ownStringMap(metadata.annotations)[statusKey])) {
      for (const volumeName of volumesOf.get(injection) ?? []) {
        const volume = byName.get(volumeName);
        if (!volume) continue;
        for (const source of sourcesOf(volume)) {
          const key = needKey({ namespace, ...source, injection, volume: volumeName });
          let entry = needs.get(key);
          if (!entry) {
            entry = { need: { namespace, ...source, injection, volume: volumeName }, pods: [], pending: [] };
            needs.set(key, entry);
          }
          entry.pods.push(podName);
          if (pending) entry.pending.push(podName);
        }
      }
    }
  }
  return [...needs.values()].map(({ need, pods: carrying, pending }) => ({ ...need, pods: carrying, pending })).sort(byNeed);
}

const needKey = (need: Omit<VolumeSourceNeed, 'pods' | 'pending'>) => [need.namespace, need.kind, need.name, need.injection, need.volume].join('\u0000');
const byNeed = (a: VolumeSourceNeed, b: VolumeSourceNeed) => a.namespace.localeCompare(b.namespace) || a.injection.localeCompare(b.injection) || a.volume.localeCompare(b.volume) || a.name.localeCompare(b.name);

/** The needs of pods read a page at a time (injectedVolumeSources of each page, in order), as injectedVolumeSources finds them in all the pods at once. */
export function mergeVolumeNeeds(pages: readonly (readonly VolumeSourceNeed[])[]): VolumeSourceNeed[] {
  const merged = new Map<string, { need: VolumeSourceNeed; pods: string[]; pending: string[] }>();
  for (const page of pages) {
    for (const need of page) {
      const key = needKey(need);
      let entry = merged.get(key);
      if (!entry) merged.set(key, (entry = { need, pods: [], pending: [] }));
      entry.pods.push(...need.pods);
      entry.pending.push(...need.pending);
    }
  }
  return [...merged.values()].map(({ need, pods, pending }) => ({ ...need, pods, pending })).sort(byNeed);
}

export const lookupKey = (namespace: string, kind: VolumeSourceKind, name: string) => `${namespace}/${kind}/${name}`;

/** The needs whose source is missing (or could not be read), given what the look-ups found, by lookupKey. */
export function missingVolumeSources(needs: readonly VolumeSourceNeed[], lookups: ReadonlyMap<string, VolumeSourceLookup>): VolumeSourceFinding[] {
  const findings: VolumeSourceFinding[] = [];
  for (const need of needs) {
    const lookup = lookups.get(lookupKey(need.namespace, need.kind, need.name));
    if (lookup === undefined || ('found' in lookup && lookup.found)) continue;
    findings.push('error' in lookup ? { ...need, state: 'unknown', error: lookup.error } : { ...need, state: 'missing' });
  }
  return findings;
}

/** One line for a person: `nginx-sidecar: volume nginx-conf needs ConfigMap nginx-configmap, missing in namespace shop (2 pods, 2 waiting in Pending)`. */
export function describeVolumeSourceFinding(finding: VolumeSourceFinding): string {
  const pods = `${finding.pods.length} pod${finding.pods.length === 1 ? '' : 's'}`;
  const what = `${finding.injection}: volume ${finding.volume} needs ${finding.kind} ${finding.name}`;
  if (finding.state === 'unknown') return `${what} in namespace ${finding.namespace}, which could not be checked (${finding.error}; ${pods})`;
  return `${what}, missing in namespace ${finding.namespace} (${pods}, ${finding.pending.length} Pending: the kubelet cannot mount it)`;
}
