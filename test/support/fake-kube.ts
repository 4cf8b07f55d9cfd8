// An apiserver in memory, as far as the reconciler calls one (webhook/kube-client/kube-api.ts's KubeApi):
// objects by group, resource, namespace and name, with resourceVersions, lists in pages in key order,
// merge, JSON and strategic (conditions by type) patches, a resourceVersion precondition, server-side
// dry-run, and RBAC: given the synthesized ClusterRole and Role, every request outside their rules is
// refused with 403, as the real apiserver would, so the tests prove the reconciler needs no more. Given
// the reconciler's admission fence (its ValidatingAdmissionPolicy as synthesized), every write that RBAC
// allows is then judged by it (the CEL through the policy simulator), as the apiserver's admission does.
// Pods are admitted through the injector the synthesized output describes (the CLI's preview: the
// webhook configuration's matching, then the engine), unless `injectorUp` is false (failurePolicy
// Ignore: the pod is admitted bare). `settle()` plays the Deployment controller and the kubelet: a
// Deployment whose template changed gets new pods (a new pod-template-hash) made through admission.
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as https from 'node:https';
import type { AddressInfo } from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { applyPatch, type Operation } from 'fast-json-patch';
import type { InjectorSource } from '../../webhook/fleet/synthesized-injectors';
import { previewAll } from '../../webhook/cli/preview';
import type { KubernetesObject } from '../../webhook/engine/admission-review';
import { KubeApiError, type KubeApi, type KubeRequest, type Method, type WatchEvent } from '../../webhook/kube-client/kube-api';
import { type SimulatedPolicy, failedValidations } from './admission-policy-simulator';
import type { ApiserverConnection } from '../../webhook/kube-client/in-cluster-connection';
import { testCertificate } from './test-certificate';

interface Rule {
  readonly apiGroups?: readonly string[];
  readonly resources?: readonly string[];
  readonly verbs: readonly string[];
  readonly resourceNames?: readonly string[];
}

/** One request as the apiserver's audit log would record it. */
export interface Recorded {
  readonly method: Method;
  readonly verb: string;
  readonly group: string;
  readonly resource: string;
  readonly namespace?: string;
  readonly name?: string;
  readonly dryRun: boolean;
  readonly body?: unknown;
  /** The admission fence's message, when it refused the write. */
  readonly refusedBy?: string;
}

const clone = <T>(value: T): T => JSON.parse(JSON.stringify(value));
const isRecord = (value: unknown): value is Record<string, any> => value !== null && typeof value === 'object' && !Array.isArray(value);

/** An RFC 7386 merge patch applied, as the apiserver applies `application/merge-patch+json`. */
export function mergePatch(target: any, patch: any): any {
  if (!isRecord(patch)) return clone(patch);
  const result = isRecord(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete result[key];
    else result[key] = mergePatch(result[key], value);
  }
  return result;
}

export class FakeKube implements KubeApi {
  private readonly store = new Map<string, any>();
  private version = 1000;
  readonly requests: Recorded[] = [];
  /** Requests refused by RBAC: the reconciler's rules as synthesized did not allow them. */
  readonly forbidden: Recorded[] = [];
  /** Whether pod creates go through the injector (false: it is down, and failurePolicy Ignore admits them bare). */
  injectorUp = true;
  /** The group/versions discovery answers for. */
  readonly served = new Set(['coordination.k8s.io/v1', 'apps/v1', 'policy/v1', 'discovery.k8s.io/v1', 'admissionregistration.k8s.io/v1']);
  /** The reconciler's rules, when RBAC is enforced. */
  rbac?: { readonly cluster: readonly Rule[]; readonly namespace: string; readonly namespaced: readonly Rule[] };
  /** The reconciler's admission fence, when enforced: its policy, and the ServiceAccount every request here is made as. */
  fence?: { readonly policy: SimulatedPolicy; readonly username: string };
  /** Every change of a pod since the start, as a watch sends it (metadata only). */
  private readonly podEvents: { version: number; event: WatchEvent }[] = [];
  private readonly podWatchers = new Set<{ onEvent: (event: WatchEvent) => void; end: (outcome: 'gone' | 'ended' | Error) => void }>();
  /** The oldest resourceVersion a watch may start from (older: 410, as after etcd's compaction). */
  oldestWatchable = 0;
  /** Watches of pods (metadata only), as the apiserver's; `undefined` makes a client that cannot watch. */
  watch?: KubeApi['watch'] = (path, query, onEvent, signal) => this.watchPods(path, query, onEvent, signal);
  /** Namespaces being deleted: creates in them are refused, as the NamespaceLifecycle admission plugin refuses them. */
  readonly terminating = new Set<string>();
  /** Each Deployment's pod-template-hashes, in order: one per rollout (what would be a ReplicaSet). */
  readonly rollouts = new Map<string, string[]>();

  constructor(private readonly injector: () => InjectorSource) {}

  private key(group: string, resource: string, namespace: string | undefined, name: string): string {
    return `${group}/${resource}/${namespace ?? ''}/${name}`;
  }

  /** Puts an object in as stored (no admission), filling in what the apiserver would. */
  put(group: string, resource: string, object: any): any {
    const metadata = object.metadata ?? (object.metadata = {});
    metadata.uid ??= createHash('sha1').update(`${group}/${resource}/${metadata.namespace}/${metadata.name}`).digest('hex').slice(0, 12);
    metadata.resourceVersion = String(++this.version);
    metadata.generation ??= 1;
    const key = this.key(group, resource, metadata.namespace, metadata.name);
    const existed = this.store.has(key);
    this.store.set(key, object);
    if (group === '' && resource === 'pods') this.podEvent(existed ? 'MODIFIED' : 'ADDED', metadata);
    return object;
  }

  private podEvent(type: WatchEvent['type'], metadata: any): void {
    const event: WatchEvent = { type, object: { metadata: { name: metadata.name, namespace: metadata.namespace, resourceVersion: metadata.resourceVersion } } };
    this.podEvents.push({ version: Number(metadata.resourceVersion), event });
    for (const watcher of this.podWatchers) watcher.onEvent(event);
  }

  /** Ends every pod watch: `gone` as a 410 would, `ended` as the apiserver's timeout, or with an error. */
  endWatches(outcome: 'gone' | 'ended' | Error): void {
    for (const watcher of [...this.podWatchers]) watcher.end(outcome);
  }

  /** How many pod watches are open. */
  get podWatches(): number {
    return this.podWatchers.size;
  }

  private watchPods(path: string, query: Readonly<Record<string, string>>, onEvent: (event: WatchEvent) => void, signal: AbortSignal): Promise<'gone' | 'ended'> {
    this.requests.push({ method: 'GET', verb: 'watch', group: '', resource: 'pods', namespace: undefined, name: undefined, dryRun: false });
    if (path !== '/api/v1/pods') return Promise.reject(new KubeApiError(404, 'NotFound', `${path}: not watched here`));
    if (!this.allowed('watch', '', 'pods', undefined, undefined)) {
      this.forbidden.push(this.requests[this.requests.length - 1]);
      return Promise.reject(new KubeApiError(403, 'Forbidden', 'pods is forbidden: cannot watch in the cluster scope'));
    }
    const from = Number(query.resourceVersion);
    if (!(from >= this.oldestWatchable)) return Promise.resolve('gone');
    return new Promise((resolve, reject) => {
      const watcher = {
        onEvent,
        end: (outcome: 'gone' | 'ended' | Error) => {
          this.podWatchers.delete(watcher);
          if (outcome instanceof Error) reject(outcome);
          else resolve(outcome);
        },
      };
      if (signal.aborted) return resolve('ended');
      signal.addEventListener('abort', () => watcher.end('ended'), { once: true });
      // What happened since `from`, then every change as it comes.
      for (const { version, event } of this.podEvents) if (version > from) onEvent(event);
      this.podWatchers.add(watcher);
    });
  }

  get(group: string, resource: string, namespace: string | undefined, name: string): any {
    return this.store.get(this.key(group, resource, namespace, name));
  }

  remove(group: string, resource: string, namespace: string | undefined, name: string): void {
    const key = this.key(group, resource, namespace, name);
    const existing = this.store.get(key);
    this.store.delete(key);
    if (existing && group === '' && resource === 'pods') this.podEvent('DELETED', { ...existing.metadata, resourceVersion: String(++this.version) });
  }

  list(group: string, resource: string, namespace?: string): any[] {
    const prefix = `${group}/${resource}/`;
    return [...this.store.entries()]
      .filter(([key]) => key.startsWith(prefix) && (namespace === undefined || key.startsWith(`${prefix}${namespace}/`)))
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([, object]) => object);
  }

  namespace(name: string, labels: Record<string, string> = {}, annotations: Record<string, string> = {}): void {
    this.put('', 'namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels: { 'kubernetes.io/metadata.name': name, ...labels }, annotations } });
  }

  /** A pod as the apiserver admits it now: through the injector when it is up. Running and Ready. */
  admitPod(pod: KubernetesObject, dryRun = false): KubernetesObject {
    const metadata = (pod.metadata ?? {}) as Record<string, any>;
    const namespace = String(metadata.namespace ?? 'default');
    let admitted = clone(pod);
    if (this.injectorUp) {
      const ns = this.get('', 'namespaces', undefined, namespace)?.metadata ?? {};
      const [preview] = previewAll([{ source: 'fake-apiserver', index: 1, line: 1, object: admitted, text: '', document: undefined } as any], this.injector(), {
        namespace,
        namespaceLabels: ns.labels ?? {},
        namespaceAnnotations: ns.annotations ?? {},
      });
      admitted = clone(preview.output);
    }
    const out = admitted as any;
    if (!out.metadata.name) out.metadata.name = `${out.metadata.generateName ?? 'pod-'}${createHash('sha1').update(String(this.version + 1)).digest('hex').slice(0, 5)}`;
    const all = [...(out.spec?.initContainers ?? []), ...(out.spec?.containers ?? [])];
    out.status = {
      phase: 'Running',
      conditions: [{ type: 'Ready', status: 'True' }],
      containerStatuses: (out.spec?.containers ?? []).map((c: any) => ({ name: c.name, image: c.image, imageID: `sha256:${createHash('sha1').update(c.image).digest('hex')}`, ready: true, restartCount: 0, containerID: `containerd://${c.name}-0`, state: { running: {} } })),
      ...(all.length > (out.spec?.containers ?? []).length ? { initContainerStatuses: (out.spec?.initContainers ?? []).map((c: any) => ({ name: c.name, image: c.image, imageID: `sha256:${createHash('sha1').update(c.image).digest('hex')}`, ready: true, restartCount: 0, containerID: `containerd://${c.name}-0`, state: c.restartPolicy === 'Always' ? { running: {} } : { terminated: { exitCode: 0 } } })) } : {}),
    };
    if (!dryRun) this.put('', 'pods', out);
    return out;
  }

  /** A Deployment of `replicas` pods, stored and rolled out now. */
  deployment(namespace: string, name: string, replicas: number, podSpec: Record<string, any>, extra: { labels?: Record<string, string>; annotations?: Record<string, string>; strategy?: any } = {}): any {
    const labels = { app: name, ...extra.labels };
    this.put('apps', 'deployments', {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name, namespace },
      spec: { replicas, selector: { matchLabels: { app: name } }, ...(extra.strategy ? { strategy: extra.strategy } : {}), template: { metadata: { labels, ...(extra.annotations ? { annotations: extra.annotations } : {}) }, spec: podSpec } },
      status: {},
    });
    this.settle();
    return this.get('apps', 'deployments', namespace, name);
  }

  /** The Deployment controller and the kubelet, caught up: each Deployment runs `replicas` pods of its current template. */
  settle(): void {
    for (const deployment of this.list('apps', 'deployments')) {
      const { namespace, name } = deployment.metadata;
      const hash = createHash('sha1').update(JSON.stringify(deployment.spec.template)).digest('hex').slice(0, 10);
      const history = this.rollouts.get(`${namespace}/${name}`) ?? [];
      if (history[history.length - 1] !== hash) this.rollouts.set(`${namespace}/${name}`, [...history, hash]);
      const pods = this.list('', 'pods', namespace).filter((pod) => pod.metadata.ownerReferences?.[0]?.name?.startsWith(`${name}-`) && pod.metadata.labels?.['pod-template-hash'] !== undefined);
      for (const pod of pods) if (pod.metadata.labels['pod-template-hash'] !== hash) this.remove('', 'pods', namespace, pod.metadata.name);
      const current = pods.filter((pod) => pod.metadata.labels['pod-template-hash'] === hash).length;
      for (let index = current; index < deployment.spec.replicas; index++) {
        const template = clone(deployment.spec.template);
        this.admitPod({
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: {
            name: `${name}-${hash}-${index}${this.version}`,
            namespace,
            labels: { ...template.metadata.labels, 'pod-template-hash': hash },
            ...(template.metadata.annotations ? { annotations: template.metadata.annotations } : {}),
            ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: `${name}-${hash}`, controller: true, uid: 'rs' }],
          },
          spec: template.spec,
        });
      }
      deployment.status = { observedGeneration: deployment.metadata.generation, replicas: deployment.spec.replicas, updatedReplicas: deployment.spec.replicas, readyReplicas: deployment.spec.replicas, availableReplicas: deployment.spec.replicas };
    }
  }

  /** Pods written since the kubelet last looked: it catches up before the next read (as a real one does, later). */
  private readonly kubeletBehind = new Set<string>();

  /** The kubelet, caught up: a container whose image changed is restarted on the new image, the others keep running. */
  private kubeletSync(pod: any): void {
    for (const [list, statuses] of [['containers', 'containerStatuses'], ['initContainers', 'initContainerStatuses']] as const) {
      for (const container of pod.spec?.[list] ?? []) {
        const status = (pod.status?.[statuses] ?? []).find((entry: any) => entry.name === container.name);
        if (!status || status.image === container.image) continue;
        status.image = container.image;
        status.imageID = `sha256:${createHash('sha1').update(container.image).digest('hex')}`;
        status.restartCount += 1;
        status.containerID = `containerd://${container.name}-${status.restartCount}`;
      }
    }
  }

  private allowed(verb: string, group: string, resource: string, namespace: string | undefined, name: string | undefined): boolean {
    if (!this.rbac) return true;
    const matches = (rule: Rule) =>
      (rule.apiGroups ?? []).includes(group) &&
      (rule.resources ?? []).includes(resource) &&
      rule.verbs.includes(verb) &&
      (!rule.resourceNames || rule.resourceNames.length === 0 || (name !== undefined && verb !== 'list' && verb !== 'create' && rule.resourceNames.includes(name)));
    return this.rbac.cluster.some(matches) || (namespace === this.rbac.namespace && this.rbac.namespaced.some(matches));
  }

  /** The fence's judgement of a write RBAC allowed: a refusal is a 403 naming the rule, as the apiserver answers. */
  private judge(operation: 'CREATE' | 'UPDATE', at: { group: string; version: string; resource: string; subresource?: string; namespace?: string; name?: string; dryRun: boolean }, object: any, oldObject: any): void {
    if (!this.fence) return;
    const refused = failedValidations(
      this.fence.policy,
      {
        kind: { group: at.group, version: at.version, kind: String(object?.kind ?? '') },
        resource: { group: at.group, version: at.version, resource: at.resource },
        subResource: at.subresource,
        operation,
        namespace: at.namespace,
        name: at.name ?? object?.metadata?.name,
        userInfo: { username: this.fence.username },
        dryRun: at.dryRun,
        object,
        oldObject,
      },
      object,
    );
    if (refused.length === 0) return;
    const recorded = { ...this.requests[this.requests.length - 1], refusedBy: refused[0] };
    this.forbidden.push(recorded);
    const policy = this.fence.policy.metadata.name;
    throw new KubeApiError(403, 'Forbidden', `${at.resource} "${recorded.name ?? object?.metadata?.name ?? ''}" is forbidden: ValidatingAdmissionPolicy '${policy}' with binding '${policy}' denied request: ${refused[0]}`);
  }

  async request(method: Method, path: string, request: KubeRequest = {}): Promise<any> {
    const parts = path.split('/').filter(Boolean);
    const [group, version, rest] = parts[0] === 'api' ? ['', parts[1], parts.slice(2)] : [parts[1], parts[2], parts.slice(3)];
    if (rest.length === 0) {
      // Discovery: allowed to every authenticated user (system:discovery).
      if (!this.served.has(`${group}/${version}`)) throw new KubeApiError(404, 'NotFound', `${path}: not served`);
      const resources = group === 'wgpolicyk8s.io' ? ['policyreports'] : group === 'admissionregistration.k8s.io' ? ['mutatingwebhookconfigurations', 'mutatingadmissionpolicies', 'mutatingadmissionpolicybindings'] : [];
      return { resources: resources.map((resourceName) => ({ name: resourceName })) };
    }
    const namespaced = rest[0] === 'namespaces' && rest.length >= 3;
    const namespace = namespaced ? rest[1] : undefined;
    const [resource, name, subresource] = namespaced ? rest.slice(2) : rest;
    const verb = method === 'GET' ? (name ? 'get' : 'list') : method === 'POST' ? 'create' : method === 'PATCH' ? 'patch' : method === 'PUT' ? 'update' : 'delete';
    const fullResource = subresource ? `${resource}/${subresource}` : resource;
    const dryRun = request.query?.dryRun === 'All';
    this.requests.push({ method, verb, group, resource: fullResource, namespace, name, dryRun, ...(request.body !== undefined ? { body: clone(request.body) } : {}) });
    if (!this.served.has(`${group}/${version}`) && group !== '') throw new KubeApiError(404, 'NotFound', `${path}: the server could not find the requested resource`);
    if (!this.allowed(verb, group, fullResource, namespace, name)) {
      this.forbidden.push(this.requests[this.requests.length - 1]);
      throw new KubeApiError(403, 'Forbidden', `${fullResource}${name ? ` "${name}"` : ''} is forbidden: cannot ${verb} in ${namespace ? `namespace "${namespace}"` : 'the cluster scope'}`);
    }
    if (verb === 'create' && namespace !== undefined && this.terminating.has(namespace)) {
      throw new KubeApiError(403, 'Forbidden', `${resource} is forbidden: unable to create new content in namespace ${namespace} because it is being terminated`);
    }
    if (verb === 'list') {
      let items = this.list(group, resource, namespace);
      const selector = request.query?.labelSelector;
      if (selector) {
        const [key, value] = selector.split('=');
        items = items.filter((item) => item.metadata?.labels?.[key] === value);
      }
      const offset = Number(request.query?.continue ?? 0);
      const limit = Number(request.query?.limit ?? items.length);
      const page = items.slice(offset, offset + limit);
      return { metadata: { resourceVersion: String(this.version), continue: offset + limit < items.length ? String(offset + limit) : undefined }, items: clone(page) };
    }
    const current = name ? this.get(group, resource, namespace, name) : undefined;
    if (verb === 'get') {
      if (!current) throw new KubeApiError(404, 'NotFound', `${resource} "${name}" not found`);
      if (resource === 'pods' && this.kubeletBehind.delete(`${namespace}/${name}`)) this.kubeletSync(current);
      return clone(current);
    }
    const admission = { group, version, resource, subresource, namespace, name, dryRun };
    if (verb === 'create') {
      const body = clone(request.body) as any;
      body.metadata = { ...body.metadata, namespace };
      if (resource === 'pods') {
        // Mutating admission (the injector), then validating (the fence), then stored.
        const admitted = this.admitPod(body, true);
        this.judge('CREATE', admission, admitted, null);
        return clone(dryRun ? admitted : this.put('', 'pods', admitted));
      }
      if (!body.metadata.name) body.metadata.name = `${body.metadata.generateName ?? 'object-'}${++this.version}`;
      if (this.get(group, resource, namespace, body.metadata.name)) throw new KubeApiError(409, 'AlreadyExists', `${resource} "${body.metadata.name}" already exists`);
      this.judge('CREATE', admission, body, null);
      return dryRun ? body : clone(this.put(group, resource, body));
    }
    if (!current) throw new KubeApiError(404, 'NotFound', `${resource} "${name}" not found`);
    const body = request.body as any;
    let next: any;
    if (verb === 'update') {
      if (body?.metadata?.resourceVersion !== current.metadata.resourceVersion) throw new KubeApiError(409, 'Conflict', `Operation cannot be fulfilled on ${resource} "${name}": the object has been modified`);
      next = clone(body);
    } else if (request.contentType === 'application/json-patch+json') {
      try {
        next = applyPatch(clone(current), clone(body) as Operation[], true, false).newDocument;
      } catch {
        // As kube-apiserver answers a failed `test`: a bare 422 (the e2e suite measured it on 1.32).
        throw new KubeApiError(422, 'Invalid', 'the server rejected our request due to an error in our request');
      }
    } else if (request.contentType === 'application/strategic-merge-patch+json' && subresource === 'status') {
      next = clone(current);
      for (const condition of body.status?.conditions ?? []) {
        const conditions = (next.status.conditions ??= []);
        const index = conditions.findIndex((entry: any) => entry.type === condition.type);
        if (index >= 0) conditions[index] = condition;
        else conditions.push(condition);
      }
    } else {
      const precondition = body?.metadata?.resourceVersion;
      if (precondition !== undefined && precondition !== current.metadata.resourceVersion) throw new KubeApiError(409, 'Conflict', `Operation cannot be fulfilled on ${resource} "${name}": the object has been modified`);
      next = mergePatch(current, body);
    }
    this.judge('UPDATE', admission, next, current);
    if (dryRun) return next;
    if (resource === 'pods' && !subresource) this.kubeletBehind.add(`${namespace}/${name}`);
    else if (JSON.stringify(next.spec) !== JSON.stringify(current.spec)) next.metadata.generation = (current.metadata.generation ?? 1) + 1;
    next.metadata.uid = current.metadata.uid;
    return clone(this.put(group, resource, next));
  }
}

/**
 * The in-memory apiserver behind real HTTPS (the test CA), so the reconciler's own client is what talks
 * to it: the bearer token checked, the body JSON, errors as Status objects. `delayMs` holds every answer.
 */
export async function serveOverHttps(
  kube: FakeKube,
  options: { delayMs?: number; answer?: (path: string) => string | undefined; raw?: (url: URL, req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse) => boolean } = {},
): Promise<{ connection: ApiserverConnection; tokens: string[]; stop(): Promise<void> }> {
  const material = testCertificate();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fake-kube-'));
  fs.writeFileSync(path.join(dir, 'token'), 'reconciler-token\n');
  fs.writeFileSync(path.join(dir, 'ca.crt'), material.caCertificate);
  const tokens: string[] = [];
  const server = https.createServer({ cert: material.certificate, key: material.privateKey }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', async () => {
      tokens.push(String(req.headers.authorization));
      const url = new URL(req.url!, 'https://x');
      if (options.raw?.(url, req, res)) return;
      if (url.searchParams.get('watch') === '1' && kube.watch && req.headers.authorization === 'Bearer reconciler-token') {
        // A watch as the apiserver streams it: one JSON event a line; a version too old is an ERROR 410 event.
        const abort = new AbortController();
        req.socket.once('close', () => abort.abort());
        res.writeHead(200, { 'content-type': 'application/json' });
        const query = Object.fromEntries([...url.searchParams].filter(([key]) => key !== 'watch'));
        kube.watch(url.pathname, query, (event) => void res.write(JSON.stringify(event) + '\n'), abort.signal).then(
          (outcome) => res.end(outcome === 'gone' ? JSON.stringify({ type: 'ERROR', object: { kind: 'Status', code: 410, reason: 'Expired' } }) + '\n' : undefined),
          () => res.destroy(),
        );
        return;
      }
      const canned = options.answer?.(url.pathname);
      if (canned !== undefined) return void res.writeHead(200, { 'content-type': 'application/json' }).end(canned);
      if (req.headers.authorization !== 'Bearer reconciler-token') return void res.writeHead(401).end(JSON.stringify({ kind: 'Status', code: 401, reason: 'Unauthorized', message: 'Unauthorized' }));
      if (options.delayMs) await new Promise((resolve) => setTimeout(resolve, options.delayMs));
      const body = chunks.length > 0 ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : undefined;
      try {
        const answer = await kube.request(req.method as any, url.pathname, { body, contentType: req.headers['content-type'], query: Object.fromEntries(url.searchParams) });
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answer));
      } catch (error) {
        const e = error as KubeApiError;
        res.writeHead(e.status ?? 500, { 'content-type': 'application/json' }).end(JSON.stringify({ kind: 'Status', code: e.status, reason: e.reason, message: e.message }));
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    connection: { url: `https://127.0.0.1:${port}`, tokenFile: path.join(dir, 'token'), caFile: path.join(dir, 'ca.crt'), serverName: 'sidecar-injector.sidecar-injector.svc' },
    tokens,
    async stop() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
