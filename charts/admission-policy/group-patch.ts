// A run of injections sharing one mutation (mutation-groups.ts) as CEL: each one's adds, then, once for
// all of them, the lists they append to, the metadata maps, the status, hashes and revision annotations.

import { ResolvedInjection } from '../../webhook/config';
import type { Variable } from './admission-policy-types';
import { celString, jsonPointerToken } from './cel-text';
import { SHARED_SCOPE, bindInOrder, op, when } from './mutation-text';
import type { PolicyWriter } from './policy-writer';

/**
 * One mutation for injections that can share it (mutation-groups.ts): each one's adds, computed from
 * the object as admitted, then once for all of them the lists they append to, the metadata maps and
 * the status annotation, which lists those that changed something, in order.
 */
export function groupPatchData(writers: readonly PolicyWriter[]): string {
  writers.forEach((writer, index) => {
    writer.grouped = true;
    writer.earlier = writers.slice(0, index).map((earlier, member) => ({ variable: `m${member}`, injection: earlier.injectionOf }));
  });
  const { template: t, pointer, statusKey } = writers[0].place;
  const vars: Variable[] = [...writers[0].sharedVariables(), ...writers.map((writer, index) => ({ name: `m${index}`, expression: writer.sectionsExpression() }))];
  const add = (name: string, expression: string) => vars.push({ name, expression });
  // Only the parts that can hold adds of a kind are read: labels and annotations of the injections that set some.
  const holds = (writer: PolicyWriter, index: number) =>
    index === 0 || Object.keys(writer.injectionOf[index === 1 ? 'labels' : 'annotations'] ?? {}).length > 0;
  const section = (index: number) => {
    const parts = writers.flatMap((writer, member) => (holds(writer, index) ? [`variables.m${member}[${index}]`] : []));
    return parts.length === 0 ? '[]' : parts.join(' + ');
  };
  add('contentPatch', section(0));
  add('labelPatch', section(1));
  add('annotationPatch', section(2));
  // The injections that added anything, in order, each as [name, name=hash], for the status and the hashes.
  add('applied', writers.map((_, member) => `variables.m${member}[3]`).join(' + '));
  // A list the pod lacks is made before the first item is appended, when an injection that appends to it did.
  const appendsTo: Record<string, (injection: ResolvedInjection) => boolean> = {
    containers: (injection) => (injection.containers ?? []).length > 0 && (injection.nativeSidecars ?? 'never') !== 'always',
    initContainers: (injection) => (injection.initContainers ?? []).length > 0 || ((injection.nativeSidecars ?? 'never') !== 'never' && (injection.containers ?? []).length > 0),
    volumes: (injection) => (injection.volumes ?? []).length > 0,
    imagePullSecrets: (injection) => (injection.imagePullSecrets ?? []).length > 0,
  };
  const lists = Object.entries(appendsTo).flatMap(([field, appends]) => {
    const parts = writers.flatMap((writer, member) => (appends(writer.injectionOf) ? [`variables.m${member}[0]`] : []));
    if (parts.length === 0) return [];
    const adds = parts.length === 1 ? parts[0] : `(${parts.join(' + ')})`;
    return [when(`!has(${t}.spec.${field}) && ${adds}.exists(p, string(p.path).startsWith(${celString(`${pointer}/spec/${field}/`)}))`, op(celString(`${pointer}/spec/${field}`), '[]'))];
  });
  const metadata = `${pointer}/metadata`;
  const ensureMetadata = [
    when(`!has(${t}.metadata)`, op(celString(metadata), '{}')),
    when(`size(variables.labelPatch) > 0 && !(has(${t}.metadata) && has(${t}.metadata.labels))`, op(celString(`${metadata}/labels`), '{}')),
    when(`!(has(${t}.metadata) && has(${t}.metadata.annotations))`, op(celString(`${metadata}/annotations`), '{}')),
  ];
  const status = op(celString(`${metadata}/annotations/${jsonPointerToken(statusKey)}`), `(variables.statusNames + variables.applied.map(a, a[0])).join(",")`);
  // Each injection's hash as configured, computed at synth, for those that changed something, in order.
  const hashes = writers[0].hashesPlace;
  const hashesOp = op(celString(`${metadata}/annotations/${jsonPointerToken(hashes.key)}`), `(${hashes.existing} + variables.applied.map(a, a[1])).join(",")`);
  add(
    'patch',
    `size(variables.applied) == 0 ? [] : ` +
      `${[...lists, 'variables.contentPatch', ...ensureMetadata].join(' + ')} + variables.labelPatch + variables.annotationPatch + [${status}, ${hashesOp}]${writers[0].revisionAdd}`,
  );
  return `(// injections ${JSON.stringify(writers.map((writer) => writer.name))}\n${bindInOrder(vars, 'patch', SHARED_SCOPE)})`;
}
