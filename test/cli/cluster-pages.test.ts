// `status` over a whole cluster reads its pods a page at a time (readClusterPages) instead of holding
// them all (readCluster): the same pods judged the same way, each page with the owners its pods need,
// listed as readCluster lists them (only when some pod is owned by one of their kind).
import assert from 'node:assert/strict';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { KubeConfig } from '@kubernetes/client-node';
import { DEFAULT_INJECTIONS } from '../../app/default-injections';
import { resolveInjectorConfig } from '../../webhook/config';
import type { ClusterConnection } from '../../webhook/cli/cluster';
import { readCluster, readClusterPages } from '../../webhook/cli/cluster';
import { type ClusterObjects, classifyPods } from '../../webhook/fleet/injection-status';
import { loadReview } from '../support/recorded-reviews';

const SOURCE = { config: resolveInjectorConfig({ injections: DEFAULT_INJECTIONS }), description: 'test' } as any;

function pod(namespace: string, name: string, owner?: { kind: string; name: string }): any {
  const object = loadReview('pod-create-sleep').request.object;
  delete object.metadata.generateName;
  object.metadata = { ...object.metadata, name, namespace, labels: { app: name.split('-')[0], ...(owner?.kind === 'ReplicaSet' ? { 'pod-template-hash': owner.name.split('-').at(-1) } : {}) } };
  if (owner) object.metadata.ownerReferences = [{ apiVersion: owner.kind === 'Job' ? 'batch/v1' : 'apps/v1', kind: owner.kind, name: owner.name, uid: `uid-${owner.name}`, controller: true }];
  return object;
}

const PAGE = 2;

/** Lists in pages of PAGE with a continue token, every call recorded. */
function pagesOf(what: string, items: any[], calls: string[], start: number): { items: any[]; metadata: Record<string, string> } {
  calls.push(`${what}${start ? ` from ${start}` : ''}`);
  const next = start + PAGE;
  return { items: items.slice(start, next), metadata: next < items.length ? { continue: String(next) } : {} };
}

/**
 * A cluster as status reads it: pods from an apiserver over HTTP (as the apiserver sends them), the
 * rest through client-node's API classes, stubbed.
 */
async function fakeConnection(objects: { pods: any[]; namespaces: any[]; replicaSets: any[]; jobs: any[] }, calls: string[]): Promise<{ connection: ClusterConnection; close(): void }> {
  const server = http.createServer((req, res) => {
    const url = new URL(req.url!, 'http://localhost');
    if (url.pathname !== '/api/v1/pods' || url.searchParams.get('limit') !== '500') res.writeHead(404).end('{}');
    else res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(pagesOf('pods', objects.pods, calls, Number(url.searchParams.get('continue') ?? 0))));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromOptions({
    clusters: [{ name: 'c', server: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, skipTLSVerify: true }],
    users: [{ name: 'u', token: 't' }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
  const paged = (what: string, items: any[]) => async ({ _continue }: { _continue?: string }) => {
    const page = pagesOf(what, items, calls, Number(_continue ?? 0));
    return { items: page.items, metadata: page.metadata.continue ? { _continue: page.metadata.continue } : {} };
  };
  const connection = {
    kubeConfig,
    core: { listPodForAllNamespaces: paged('pods', objects.pods), listNamespace: paged('namespaces', objects.namespaces) },
    apps: { listReplicaSetForAllNamespaces: paged('replicasets', objects.replicaSets) },
    batch: { listJobForAllNamespaces: paged('jobs', objects.jobs) },
  } as unknown as ClusterConnection;
  return { connection, close: () => server.close() };
}

const namespace = (name: string, labels: Record<string, string> = {}) => ({ apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels: { 'kubernetes.io/metadata.name': name, ...labels } } });
const replicaSet = (ns: string, name: string, deployment: string) => ({
  apiVersion: 'apps/v1',
  kind: 'ReplicaSet',
  metadata: { name, namespace: ns, ownerReferences: [{ apiVersion: 'apps/v1', kind: 'Deployment', name: deployment, uid: `uid-${deployment}`, controller: true }] },
  spec: { template: { spec: { containers: [{ name: 'big', image: 'x', env: [{ name: 'A', value: 'x'.repeat(1000) }] }] } } },
});

test('status reads pods a page at a time and judges them as it would judge all of them at once, listing ReplicaSets once, when the first pod owned by one comes', async () => {
  const cluster = {
    pods: [pod('shop', 'bare-1'), pod('shop', 'bare-2'), pod('shop', 'web-1', { kind: 'ReplicaSet', name: 'web-7f9c' }), pod('blog', 'api-1', { kind: 'ReplicaSet', name: 'apiv2-5d4f' }), pod('blog', 'bare-3')],
    namespaces: [namespace('shop', { injection: 'enabled' }), namespace('blog')],
    // The Deployment behind apiv2-5d4f is named otherwise than the ReplicaSet: only ownerReferences find it.
    replicaSets: [replicaSet('shop', 'web-7f9c', 'web'), replicaSet('blog', 'apiv2-5d4f', 'api')],
    jobs: [],
  };
  const calls: string[] = [];
  const fake = await fakeConnection(cluster, calls);
  const pages: ClusterObjects[] = [];
  let whole: ClusterObjects;
  try {
    whole = await readCluster(fake.connection, { namespace: undefined, selector: undefined });
    calls.length = 0;
    await readClusterPages(fake.connection, { namespace: undefined, selector: undefined }, (page) => pages.push({ ...page, owners: new Map(page.owners) }));
  } finally {
    fake.close();
  }
  assert.deepEqual(
    pages.map((page) => page.pods.map((p: any) => p.metadata.name)),
    [['bare-1', 'bare-2'], ['web-1', 'api-1'], ['bare-3']],
    'each page handed over as it came',
  );
  assert.deepEqual(calls, ['namespaces', 'pods', 'pods from 2', 'replicasets', 'pods from 4'], 'namespaces first; ReplicaSets when the first page with an owned pod came; no Jobs');
  const judgedInPages = pages.flatMap((page) => classifyPods(page, SOURCE));
  assert.deepEqual(judgedInPages, classifyPods(whole, SOURCE), 'judged in pages (actual) as judged all at once (expected)');
  assert.deepEqual(
    judgedInPages.map((status) => `${status.namespace}/${status.name} ${status.workload.kind}/${status.workload.name} via ${status.workload.via}`),
    ['shop/bare-1 Pod/bare-1 via self', 'shop/bare-2 Pod/bare-2 via self', 'shop/web-1 Deployment/web via ownerReferences', 'blog/api-1 Deployment/api via ownerReferences', 'blog/bare-3 Pod/bare-3 via self'],
  );
  const kept = pages.at(-1)!.owners.get('blog/ReplicaSet/apiv2-5d4f') as any;
  assert.deepEqual(Object.keys(kept.metadata).sort(), ['name', 'namespace', 'ownerReferences'], 'an owner is kept as far as it leads to its workload, not its template');
});
