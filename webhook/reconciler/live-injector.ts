// The injector as the cluster has it now, read the way `status --from dist/` reads the output: the
// webhook's ConfigMap and MutatingWebhookConfiguration, or the policies and their bindings, turned
// into the same InjectorSource by the same code (fleet/synthesized-injectors.ts). So the reconciler, the
// CLI and the webhook judge pods with one engine and one config. And whether it can inject at all:
// the webhook's Service has a ready endpoint; the policies are all loaded.

import type { ReconcilerInjector } from '../config';
import type { KubernetesObject } from '../engine/admission-review';
import type { InjectorSource } from '../fleet/synthesized-injectors';
import { injectorFromDocuments } from '../fleet/synthesized-injectors';
import { type KubeApi, isNotFound } from '../kube-client/kube-api';

/** The injector, or why the reconciler cannot use it now (said in Events and logs, and it waits). */
export type LiveInjector = { readonly source: InjectorSource } | { readonly waiting: string };

const ADMISSION = '/apis/admissionregistration.k8s.io';

/** Each object by path, or the first that is not there, named. */
async function readAll(api: KubeApi, objects: readonly { path: string; describe: string }[]): Promise<KubernetesObject[] | string> {
  const found: KubernetesObject[] = [];
  for (const { path, describe } of objects) {
    try {
      found.push(await api.request('GET', path));
    } catch (error) {
      if (isNotFound(error)) return `${describe} is not in the cluster`;
      throw error;
    }
  }
  return found;
}

/** The path a policy-backend object is read at: the newest version the cluster serves of its kind. */
async function admissionVersion(api: KubeApi): Promise<string> {
  for (const version of ['v1', 'v1beta1', 'v1alpha1']) {
    try {
      const resources = await api.request('GET', `${ADMISSION}/${version}`);
      if (Array.isArray(resources?.resources) && resources.resources.some((resource: any) => resource?.name === 'mutatingadmissionpolicies')) return version;
    } catch (error) {
      if (!isNotFound(error)) throw error;
    }
  }
  return '';
}

/** Reads the injector from the cluster. `namespace` is the reconciler's (and the webhook's). */
export async function readLiveInjector(api: KubeApi, namespace: string, injector: ReconcilerInjector): Promise<LiveInjector> {
  let objects: KubernetesObject[] | string;
  if (injector.backend === 'webhook') {
    objects = await readAll(api, [
      { path: `/api/v1/namespaces/${namespace}/configmaps/${injector.configMapName}`, describe: `ConfigMap ${namespace}/${injector.configMapName} (the injector's config)` },
      { path: `${ADMISSION}/v1/mutatingwebhookconfigurations/${injector.webhookConfigurationName}`, describe: `MutatingWebhookConfiguration ${injector.webhookConfigurationName}` },
    ]);
  } else {
    // An injector whose injections are all in audit mode has ValidatingAdmissionPolicies only (v1, GA since 1.30).
    const version = injector.policyNames.length === 0 ? 'v1' : await admissionVersion(api);
    if (version === '') return { waiting: 'the apiserver serves no MutatingAdmissionPolicy API: the policies cannot be loaded' };
    const read = (plural: string, kind: string, group: string) => (name: string) => ({ path: `${ADMISSION}/${group}/${plural}/${name}`, describe: `${kind} ${name}` });
    objects = await readAll(api, [
      ...injector.policyNames.map(read('mutatingadmissionpolicies', 'MutatingAdmissionPolicy', version)),
      ...injector.bindingNames.map(read('mutatingadmissionpolicybindings', 'MutatingAdmissionPolicyBinding', version)),
      ...injector.validatingPolicyNames.map(read('validatingadmissionpolicies', 'ValidatingAdmissionPolicy', 'v1')),
      ...injector.validatingBindingNames.map(read('validatingadmissionpolicybindings', 'ValidatingAdmissionPolicyBinding', 'v1')),
    ]);
  }
  if (typeof objects === 'string') return { waiting: objects };
  try {
    return { source: injectorFromDocuments('in the cluster', objects.map((object, index) => ({ object, source: 'cluster', index: index + 1, line: 1 }))) };
  } catch (error) {
    return { waiting: `the injector in the cluster cannot be read: ${(error as Error).message}` };
  }
}

/** Why the webhook cannot answer now (no ready endpoint behind its Service), or undefined when it can. */
export async function webhookUnready(api: KubeApi, namespace: string, serviceName: string): Promise<string | undefined> {
  const slices = await api.request('GET', `/apis/discovery.k8s.io/v1/namespaces/${namespace}/endpointslices`, { query: { labelSelector: `kubernetes.io/service-name=${serviceName}` } });
  const endpoints = (Array.isArray(slices?.items) ? slices.items : []).flatMap((slice: any) => (Array.isArray(slice?.endpoints) ? slice.endpoints : []));
  // A missing `ready` is ready, as the EndpointSlice API says.
  if (endpoints.some((endpoint: any) => endpoint?.conditions?.ready !== false)) return undefined;
  return `the webhook's Service ${namespace}/${serviceName} has no ready endpoint (${endpoints.length} not ready)`;
}
