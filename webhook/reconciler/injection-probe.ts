// The last guard before a restart: would the pods the restart makes get their injections now? Asked
// of the apiserver itself: a server-side dry-run create of a pod from the workload's template, which
// runs every admission step (the webhook, or the policies) and stores nothing. Only an answer that
// carries each injection the pods lack, at its configured hash, lets the restart go on; anything else
// (no answer, an answer without them, a refusal) is a reason to wait, said in an Event.

import { annotationKeys, parseInjectionHashes } from '../config';
import type { KubernetesObject } from '../engine/admission-review';
import { parseStatus } from '../engine/mutate';
import { ownStringMap } from '../engine/pod-patch-builder';
import type { KubeApi } from '../kube-client/kube-api';

/** The pod a restart of the workload would create: its template as a Pod, given a generated name. */
export function podFromTemplate(namespace: string, workloadName: string, template: Record<string, any>): KubernetesObject {
  const metadata = template?.metadata ?? {};
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      generateName: `${workloadName.slice(0, 40)}-injection-probe-`,
      namespace,
      ...(metadata.labels ? { labels: metadata.labels } : {}),
      ...(metadata.annotations ? { annotations: metadata.annotations } : {}),
    },
    spec: template?.spec ?? {},
  };
}

/**
 * Why a pod created from `template` now would not carry `expected` (injection name to configured hash),
 * or undefined when it would. `fieldManager` names the reconciler in the apiserver's audit log.
 */
export async function probeInjection(
  api: KubeApi,
  prefix: string,
  namespace: string,
  workloadName: string,
  template: Record<string, any>,
  expected: ReadonlyMap<string, string>,
): Promise<string | undefined> {
  let created: KubernetesObject;
  try {
    created = await api.request('POST', `/api/v1/namespaces/${namespace}/pods`, {
      body: podFromTemplate(namespace, workloadName, template),
      query: { dryRun: 'All', fieldManager: 'sidecar-injector-reconciler' },
    });
  } catch (error) {
    return `a dry-run create of its pod was refused: ${(error as Error).message}`;
  }
  const annotations = ownStringMap((created.metadata as Record<string, unknown> | undefined)?.annotations);
  const keys = annotationKeys(prefix);
  const has = parseStatus(annotations[keys.status]);
  const hashes = parseInjectionHashes(annotations[keys.hashes]);
  const lacking = [...expected].filter(([name, hash]) => !has.has(name) || (hashes !== undefined && hashes.get(name) !== hash)).map(([name]) => name);
  if (lacking.length === 0) return undefined;
  // A template injection (targetKinds naming the workload's kind) marks the template itself: every pod
  // made from it is "injected already", and a restart makes the same pods again.
  const templateHas = parseStatus(ownStringMap(template?.metadata?.annotations)[keys.status]);
  const inTemplate = lacking.filter((name) => templateHas.has(name));
  if (inTemplate.length === lacking.length) {
    return `its pod template carries ${inTemplate.join(', ')} as injected before (a template injection): a restart makes the same pods; change the workload to inject it again`;
  }
  return `a dry-run create of its pod came back without ${lacking.join(', ')} as configured now: the injector is not injecting it`;
}
