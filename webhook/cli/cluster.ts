// The live cluster, read (and for `rollout`, patched) through the user's kubeconfig with
// @kubernetes/client-node. Loaded only when a command talks to a cluster: the construct library and
// the other commands never load it (it is large, and ESM, loaded through require(esm)). It is an
// optional peer dependency: a project that only synthesizes never installs it, and `status` and
// `rollout` say in one line what to install when it is absent.

import * as http from 'node:http';
import * as https from 'node:https';
import type { IncomingMessage } from 'node:http';
import type { KubernetesObject } from '../engine/admission-review';
import { ownStringMap } from '../engine/pod-patch-builder';
import type { GuardedOperation } from '../fleet/in-place-plan';
import { PatchConflict, type PodClient, podConditionPatch, podEndpointsIn } from '../fleet/cluster';
import { type ClusterObjects, ownerKey } from '../fleet/injection-status';
import { lookupKey, type VolumeSourceLookup, type VolumeSourceNeed } from './volume-sources';

/** The cluster could not be read or changed: exit code 6. */
export class ClusterError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ClusterError';
  }
}

/** The cluster client is not installed: exit code 2, with the one line that says what to install. */
export class MissingClusterClientError extends Error {
  constructor() {
    super(`status and rollout read the cluster through ${CLUSTER_CLIENT_PACKAGE}, an optional dependency that is not installed: npm install ${CLUSTER_CLIENT_PACKAGE}@${CLUSTER_CLIENT_RANGE}`);
    this.name = 'MissingClusterClientError';
  }
}

/** The cluster client's package and the range of it this package supports. Not in package.json's peerDependencies:
 * jsii takes every peer for a jsii library. devDependencies pins the lowest version of the range (a test keeps them equal). */
export const CLUSTER_CLIENT_PACKAGE = '@kubernetes/client-node';
export const CLUSTER_CLIENT_RANGE = '^1.4.0';

type ClientNode = typeof import('@kubernetes/client-node');

/** Loads the cluster client, or says what to install. */
export async function loadClusterClient(): Promise<ClientNode> {
  try {
    return await import('@kubernetes/client-node');
  } catch (error) {
    const e = error as { code?: string; message?: string };
    const notFound = e.code === 'MODULE_NOT_FOUND' || e.code === 'ERR_MODULE_NOT_FOUND';
    // Only the package itself missing: a missing file inside an installed copy is a broken install, said as it is.
    if (notFound && String(e.message).includes(`'${CLUSTER_CLIENT_PACKAGE}'`)) throw new MissingClusterClientError();
    throw error;
  }
}

export interface ClusterConnection {
  readonly k8s: ClientNode;
  /** The kubeconfig loaded: its server, TLS material and credentials, for the requests made without an API class. */
  readonly kubeConfig: import('@kubernetes/client-node').KubeConfig;
  readonly core: import('@kubernetes/client-node').CoreV1Api;
  readonly apps: import('@kubernetes/client-node').AppsV1Api;
  readonly batch: import('@kubernetes/client-node').BatchV1Api;
  readonly discovery: import('@kubernetes/client-node').DiscoveryV1Api;
  /** The namespace of the kubeconfig's current context ('default' when it names none), as kubectl uses it. */
  readonly contextNamespace: string;
  /** `context <name> (server <url>)`, for messages. */
  readonly description: string;
}

/** Connects as kubectl does: `--kubeconfig`, else KUBECONFIG, else ~/.kube/config (or in-cluster). */
export async function connect(kubeconfig: string | undefined): Promise<ClusterConnection> {
  const k8s = await loadClusterClient();
  const config = new k8s.KubeConfig();
  try {
    if (kubeconfig !== undefined) config.loadFromFile(kubeconfig);
    else config.loadFromDefault();
  } catch (error) {
    throw new ClusterError(`cannot load the kubeconfig${kubeconfig ? ` ${kubeconfig}` : ''}: ${(error as Error).message}`);
  }
  const context = config.getContextObject(config.getCurrentContext());
  const cluster = config.getCurrentCluster();
  if (!cluster) throw new ClusterError(`the kubeconfig${kubeconfig ? ` ${kubeconfig}` : ''} has no current cluster; set one with kubectl config use-context`);
  return {
    k8s,
    kubeConfig: config,
    core: config.makeApiClient(k8s.CoreV1Api),
    apps: config.makeApiClient(k8s.AppsV1Api),
    batch: config.makeApiClient(k8s.BatchV1Api),
    discovery: config.makeApiClient(k8s.DiscoveryV1Api),
    contextNamespace: context?.namespace || 'default',
    description: `context ${config.getCurrentContext()} (server ${cluster.server})`,
  };
}

/** The API's answer as plain JSON (client-node hands back class instances with Date fields). */
function plain<T>(value: T): KubernetesObject {
  return JSON.parse(JSON.stringify(value)) as KubernetesObject;
}

/** What went wrong, in the apiserver's words when it answered. */
function describeError(error: unknown): string {
  const e = error as { code?: number; body?: unknown; message?: string };
  if (typeof e.code === 'number') {
    let message = '';
    try {
      message = (typeof e.body === 'string' ? JSON.parse(e.body) : (e.body as any))?.message ?? '';
    } catch {
      message = String(e.body).slice(0, 300);
    }
    return `HTTP ${e.code}${message ? `: ${message}` : ''}`;
  }
  return e.message ?? String(error);
}

async function call<T>(what: string, request: () => Promise<T>): Promise<T> {
  try {
    return await request();
  } catch (error) {
    throw new ClusterError(`${what}: ${describeError(error)}`);
  }
}

/** Every page of a list, 500 items at a time; with `each`, each page is handed over as it comes and none is kept. */
async function listAll(
  what: string,
  page: (continueToken: string | undefined) => Promise<{ items: unknown[]; metadata?: { _continue?: string } }>,
  each?: (items: KubernetesObject[]) => Promise<void> | void,
): Promise<KubernetesObject[]> {
  const items: KubernetesObject[] = [];
  let token: string | undefined;
  do {
    const list = await call(what, () => page(token));
    const plainItems = list.items.map(plain);
    if (each) await each(plainItems);
    else for (const item of plainItems) items.push(item);
    token = list.metadata?._continue || undefined;
  } while (token);
  return items;
}

export interface PodSelection {
  /** One namespace, or undefined for all. */
  readonly namespace: string | undefined;
  /** A label selector, as kubectl's `-l`. */
  readonly selector: string | undefined;
}

const LIST_LIMIT = 500;
/** The kinds of owner a pod's workload is found through (a Deployment through its ReplicaSet, a CronJob through its Job). */
const OWNER_KINDS = ['ReplicaSet', 'Job'] as const;

/** The labels and annotations of the selected namespace, or of every namespace. */
async function readNamespaces(connection: ClusterConnection, namespace: string | undefined): Promise<Pick<ClusterObjects, 'namespaceLabels' | 'namespaceAnnotations'>> {
  const { core } = connection;
  const namespaceLabels = new Map<string, Record<string, string>>();
  const namespaceAnnotations = new Map<string, Record<string, string>>();
  const add = (object: KubernetesObject) => {
    const name = String((object.metadata as any)?.name);
    namespaceLabels.set(name, ownStringMap((object.metadata as any)?.labels));
    namespaceAnnotations.set(name, ownStringMap((object.metadata as any)?.annotations));
  };
  if (namespace) add(plain(await call(`reading namespace ${namespace}`, () => core.readNamespace({ name: namespace }))));
  else await listAll('listing namespaces', (token) => core.listNamespace({ limit: LIST_LIMIT, _continue: token }), (items) => items.forEach(add));
  return { namespaceLabels, namespaceAnnotations };
}

/** Every ReplicaSet or Job of the selection, by ownerKey; `trim` keeps of each only what leads to its workload. */
async function readOwners(connection: ClusterConnection, namespace: string | undefined, kind: (typeof OWNER_KINDS)[number], owners: Map<string, KubernetesObject>, trim = false): Promise<void> {
  const { apps, batch } = connection;
  const where = namespace ? `in namespace ${namespace}` : 'in all namespaces';
  const limit = LIST_LIMIT;
  const add = (object: KubernetesObject) => {
    const metadata = (object.metadata ?? {}) as Record<string, unknown>;
    const kept = trim ? { apiVersion: object.apiVersion, kind, metadata: { name: metadata.name, namespace: metadata.namespace, ownerReferences: metadata.ownerReferences } } : object;
    owners.set(ownerKey(String(metadata.namespace), kind, String(metadata.name)), kept);
  };
  const each = (items: KubernetesObject[]) => items.forEach(add);
  if (kind === 'ReplicaSet') {
    await listAll(`listing replicasets ${where}`, (token) => (namespace ? apps.listNamespacedReplicaSet({ namespace, limit, _continue: token }) : apps.listReplicaSetForAllNamespaces({ limit, _continue: token })), each);
  } else {
    await listAll(`listing jobs ${where}`, (token) => (namespace ? batch.listNamespacedJob({ namespace, limit, _continue: token }) : batch.listJobForAllNamespaces({ limit, _continue: token })), each);
  }
}

const ownerKindsOf = (pods: readonly KubernetesObject[]) => new Set<string>(pods.flatMap((pod) => ((pod.metadata as any)?.ownerReferences ?? []).map((owner: any) => owner.kind)));

function listPods(connection: ClusterConnection, { namespace, selector }: PodSelection): Promise<KubernetesObject[]> {
  const { core } = connection;
  const limit = LIST_LIMIT;
  return listAll(`listing pods ${namespace ? `in namespace ${namespace}` : 'in all namespaces'}`, (token) =>
    namespace ? core.listNamespacedPod({ namespace, labelSelector: selector, limit, _continue: token }) : core.listPodForAllNamespaces({ labelSelector: selector, limit, _continue: token }),
  );
}

/**
 * GET `path` with the kubeconfig's server, TLS material and credentials (exec and OIDC included), its
 * JSON as the apiserver sent it: no model classes and no copy of them, so a page of 500 pods costs its
 * JSON once (through CoreV1Api it cost three conversions, 6 s of CPU and 300 MB at 10,000 pods).
 */
async function getJson(connection: ClusterConnection, path: string, query: Record<string, string | undefined>): Promise<any> {
  const cluster = connection.kubeConfig.getCurrentCluster()!;
  const url = new URL(`${cluster.server.replace(/\/$/, '')}${path}`);
  for (const [key, value] of Object.entries(query)) if (value !== undefined) url.searchParams.set(key, value);
  const options: https.RequestOptions = { method: 'GET', headers: { accept: 'application/json' } };
  await connection.kubeConfig.applyToHTTPSOptions(options);
  return new Promise((resolve, reject) => {
    const req = (url.protocol === 'http:' ? http : https).request(url, options, (res: IncomingMessage) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('error', reject);
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        const status = res.statusCode ?? 0;
        // Shaped as client-node's errors are, for describeError.
        if (status < 200 || status > 299) return reject({ code: status, body: text });
        try {
          resolve(JSON.parse(text));
        } catch {
          reject(new Error(`GET ${url.pathname}: the answer is not JSON`));
        }
      });
    });
    req.on('error', reject);
    req.end();
  });
}

/** The selected pods page by page, as the apiserver sends them (getJson), each page handed to `each`. */
async function listPodPages(connection: ClusterConnection, { namespace, selector }: PodSelection, each: (pods: KubernetesObject[]) => Promise<void>): Promise<void> {
  const what = `listing pods ${namespace ? `in namespace ${namespace}` : 'in all namespaces'}`;
  const path = namespace ? `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods` : '/api/v1/pods';
  let token: string | undefined;
  do {
    const list = await call(what, () => getJson(connection, path, { labelSelector: selector, limit: String(LIST_LIMIT), continue: token }));
    await each(Array.isArray(list?.items) ? list.items : []);
    token = list?.metadata?.continue || undefined;
  } while (token);
}

/** The selected pods, the labels of their namespaces, and the ReplicaSets and Jobs that own them. */
export async function readCluster(connection: ClusterConnection, selection: PodSelection): Promise<ClusterObjects> {
  const pods = await listPods(connection, selection);
  const namespaces = await readNamespaces(connection, selection.namespace);
  const owners = new Map<string, KubernetesObject>();
  const kinds = ownerKindsOf(pods);
  for (const kind of OWNER_KINDS) if (kinds.has(kind)) await readOwners(connection, selection.namespace, kind, owners);
  return { pods, ...namespaces, owners };
}

/**
 * The selected pods a page at a time, each page with what judging it needs, for `status` over a whole
 * cluster: no page is kept, so memory is one page and what `eachPage` keeps, not every pod (10,000 pods
 * held at once took 300 MB). The namespaces come first; the ReplicaSets (or Jobs) when the first pod
 * owned by one comes, as readCluster lists them only when some pod is owned by one, each cut to the
 * owner references that lead to its workload. Later pages see the owners of earlier ones too.
 */
export async function readClusterPages(connection: ClusterConnection, selection: PodSelection, eachPage: (page: ClusterObjects) => void): Promise<void> {
  const namespaces = await readNamespaces(connection, selection.namespace);
  const owners = new Map<string, KubernetesObject>();
  const listed = new Set<string>();
  await listPodPages(connection, selection, async (pods) => {
    const kinds = ownerKindsOf(pods);
    for (const kind of OWNER_KINDS) {
      if (!kinds.has(kind) || listed.has(kind)) continue;
      listed.add(kind);
      await readOwners(connection, selection.namespace, kind, owners, true);
    }
    eachPage({ pods, ...namespaces, owners });
  });
}

/** `kubectl rollout restart`: sets the template annotation kubectl.kubernetes.io/restartedAt, which starts a rollout. */
export async function restartWorkload(connection: ClusterConnection, namespace: string, kind: string, name: string, at: string): Promise<void> {
  const { k8s, apps } = connection;
  const body = { spec: { template: { metadata: { annotations: { 'kubectl.kubernetes.io/restartedAt': at } } } } };
  const options = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.StrategicMergePatch);
  const what = `restarting ${kind} ${namespace}/${name}`;
  switch (kind) {
    case 'Deployment':
      await call(what, () => apps.patchNamespacedDeployment({ namespace, name, body }, options));
      return;
    case 'StatefulSet':
      await call(what, () => apps.patchNamespacedStatefulSet({ namespace, name, body }, options));
      return;
    case 'DaemonSet':
      await call(what, () => apps.patchNamespacedDaemonSet({ namespace, name, body }, options));
      return;
    default:
      throw new ClusterError(`${what}: rollout restarts Deployments, StatefulSets and DaemonSets only`);
  }
}

/**
 * Whether a workload's rollout has finished, as `kubectl rollout status` decides it: the controller
 * has seen the latest spec and every replica is updated and available. A reason when not.
 */
export async function rolloutProgress(connection: ClusterConnection, namespace: string, kind: string, name: string): Promise<{ done: boolean; message: string }> {
  const { apps } = connection;
  const what = `reading ${kind} ${namespace}/${name}`;
  const object: any =
    kind === 'Deployment' ? plain(await call(what, () => apps.readNamespacedDeployment({ namespace, name })))
    : kind === 'StatefulSet' ? plain(await call(what, () => apps.readNamespacedStatefulSet({ namespace, name })))
    : plain(await call(what, () => apps.readNamespacedDaemonSet({ namespace, name })));
  const status = object.status ?? {};
  if ((status.observedGeneration ?? 0) < (object.metadata?.generation ?? 0)) return { done: false, message: 'waiting for the controller to see the new template' };
  if (kind === 'DaemonSet') {
    const desired = status.desiredNumberScheduled ?? 0;
    const updated = status.updatedNumberScheduled ?? 0;
    const available = status.numberAvailable ?? 0;
    return { done: updated >= desired && available >= desired, message: `${updated} of ${desired} updated, ${available} available` };
  }
  const replicas = object.spec?.replicas ?? 1;
  const updated = status.updatedReplicas ?? 0;
  const available = status.availableReplicas ?? 0;
  const total = status.replicas ?? 0;
  if (kind === 'StatefulSet') {
    const ready = status.readyReplicas ?? 0;
    return { done: updated >= replicas && ready >= replicas && status.currentRevision === status.updateRevision, message: `${updated} of ${replicas} updated, ${ready} ready` };
  }
  const failed = (status.conditions ?? []).find((condition: any) => condition.type === 'Progressing' && condition.reason === 'ProgressDeadlineExceeded');
  if (failed) throw new ClusterError(`${kind} ${namespace}/${name}: ${failed.message ?? 'progress deadline exceeded'}`);
  return { done: updated >= replicas && total <= updated && available >= replicas, message: `${updated} of ${replicas} updated, ${available} available, ${total - updated} old` };
}

/**
 * The pods of `rollout --in-place` through client-node. A patch against a newer object is answered
 * 409 (a PatchConflict); one whose `test` fails, 422 with only "the server rejected our request due to
 * an error in our request" (kube-apiserver 1.32, measured by the e2e suite), which reads like any
 * other refusal: upgradePod tells them apart by reading the pod again and comparing its resourceVersion.
 */
export function podClient(connection: ClusterConnection): PodClient {
  const { k8s, core, discovery } = connection;
  const servicesOfPod = new Map<string, Set<string>>();
  return {
    async getPod(namespace, name) {
      return plain(await call(`reading pod ${namespace}/${name}`, () => core.readNamespacedPod({ namespace, name })));
    },
    async patchPod(namespace, name, operations: readonly GuardedOperation[]) {
      const options = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.JsonPatch);
      try {
        return plain(await core.patchNamespacedPod({ namespace, name, body: operations as object[] }, options));
      } catch (error) {
        const e = error as { code?: number };
        const message = describeError(error);
        if (e.code === 409) throw new PatchConflict(`patching pod ${namespace}/${name}: ${message}`);
        throw new ClusterError(`patching pod ${namespace}/${name}: ${message}`);
      }
    },
    async setPodCondition(namespace, name, condition) {
      const body = podConditionPatch(condition);
      const options = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.StrategicMergePatch);
      await call(`setting condition ${condition.type} of pod ${namespace}/${name}`, () => core.patchNamespacedPodStatus({ namespace, name, body }, options));
    },
    async podEndpoints(namespace, podUid) {
      // Once the Services that list the pod are known, only their slices are read (by the service-name label).
      const known = servicesOfPod.get(podUid);
      const labelSelector = known && known.size > 0 ? `kubernetes.io/service-name in (${[...known].join(',')})` : undefined;
      const slices = await listAll(`listing endpointslices in namespace ${namespace}`, (token) => discovery.listNamespacedEndpointSlice({ namespace, labelSelector, limit: 500, _continue: token }));
      const found = podEndpointsIn(slices as any[], podUid);
      if (!known) servicesOfPod.set(podUid, new Set(found.flatMap(({ service }) => (service === undefined ? [] : [service]))));
      return found.map(({ endpoint }) => endpoint);
    },
  };
}

/**
 * Whether each source an injected volume needs exists, read as metadata only (a Secret's data never
 * comes back to the CLI): found, not found (404), or the reason it could not be read (403, say).
 */
export async function lookUpVolumeSources(connection: ClusterConnection, needs: readonly VolumeSourceNeed[]): Promise<Map<string, VolumeSourceLookup>> {
  const { k8s, core } = connection;
  const metadataOnly = k8s.setHeaderOptions('Accept', 'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1');
  const lookups = new Map<string, VolumeSourceLookup>();
  for (const { namespace, kind, name } of needs) {
    const key = lookupKey(namespace, kind, name);
    if (lookups.has(key)) continue;
    try {
      if (kind === 'ConfigMap') await core.readNamespacedConfigMap({ namespace, name }, metadataOnly);
      else if (kind === 'Secret') await core.readNamespacedSecret({ namespace, name }, metadataOnly);
      else await core.readNamespacedPersistentVolumeClaim({ namespace, name }, metadataOnly);
      lookups.set(key, { found: true });
    } catch (error) {
      lookups.set(key, (error as { code?: number }).code === 404 ? { found: false } : { error: `reading ${kind} ${namespace}/${name}: ${describeError(error)}` });
    }
  }
  return lookups;
}
