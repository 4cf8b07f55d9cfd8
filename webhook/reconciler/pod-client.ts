// `rollout --in-place`'s view of the cluster (PodClient), over the reconciler's own client: the same
// upgrade code then runs from the CLI and from the reconciler.

import type { KubernetesObject } from '../engine/admission-review';
import { PatchConflict, type PodClient, type PodEndpoint, podConditionPatch, podEndpointsIn } from '../fleet/cluster';
import type { GuardedOperation } from '../fleet/in-place-plan';
import { type KubeApi, isConflict, listPages } from '../kube-client/kube-api';

export function kubePodClient(api: KubeApi): PodClient {
  const podPath = (namespace: string, name: string) => `/api/v1/namespaces/${namespace}/pods/${name}`;
  return {
    getPod: (namespace, name) => api.request('GET', podPath(namespace, name)) as Promise<KubernetesObject>,
    async patchPod(namespace, name, operations: readonly GuardedOperation[]) {
      try {
        return await api.request('PATCH', podPath(namespace, name), { body: operations, contentType: 'application/json-patch+json', query: { fieldManager: 'sidecar-injector-reconciler' } });
      } catch (error) {
        if (isConflict(error)) throw new PatchConflict(`patching pod ${namespace}/${name}: ${(error as Error).message}`);
        throw error;
      }
    },
    async setPodCondition(namespace, name, condition) {
      await api.request('PATCH', `${podPath(namespace, name)}/status`, { body: podConditionPatch(condition), contentType: 'application/strategic-merge-patch+json' });
    },
    async podEndpoints(namespace, podUid) {
      const found: PodEndpoint[] = [];
      await listPages(api, `/apis/discovery.k8s.io/v1/namespaces/${namespace}/endpointslices`, (slices) => {
        for (const { endpoint } of podEndpointsIn(slices, podUid)) found.push(endpoint);
      });
      return found;
    },
  };
}
