// A kube-apiserver as far as the webhook's namespace watch needs one, over TLS with the test CA:
// metadata lists of namespaces in pages, watches as JSON lines, 401 without the token, 410 for an
// expired resourceVersion. Changes made with set() and remove() reach every open watch.
import * as fs from 'node:fs';
import * as https from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import type { ApiserverConnection } from '../../webhook/kube-client/in-cluster-connection';
import { testCertificate } from './test-certificate';

/** A kube-apiserver as far as namespaces go: metadata lists in pages of `limit`, watches of JSON lines. */
export class FakeApiserver {
  namespaces = new Map<string, Record<string, string>>();
  version = 100;
  watchers = new Set<ServerResponse>();
  requests: string[] = [];
  methods: string[] = [];
  /** Versions at or below this are expired (410). */
  expiredBelow = 0;
  server: https.Server;
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fake-apiserver-'));

  constructor() {
    const material = testCertificate();
    this.server = https.createServer({ cert: material.certificate, key: material.privateKey }, (req, res) => this.handle(req, res));
    fs.writeFileSync(path.join(this.dir, 'token'), 'test-token\n');
    fs.writeFileSync(path.join(this.dir, 'ca.crt'), material.caCertificate);
  }

  async start(): Promise<ApiserverConnection & { tokenFile: string }> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    const { port } = this.server.address() as AddressInfo;
    return { url: `https://127.0.0.1:${port}`, tokenFile: path.join(this.dir, 'token'), caFile: path.join(this.dir, 'ca.crt'), serverName: 'sidecar-injector.sidecar-injector.svc' };
  }

  set(name: string, annotations: Record<string, string>) {
    const type = this.namespaces.has(name) ? 'MODIFIED' : 'ADDED';
    this.namespaces.set(name, annotations);
    this.emit(type, name, annotations);
  }

  remove(name: string) {
    const annotations = this.namespaces.get(name)!;
    this.namespaces.delete(name);
    this.emit('DELETED', name, annotations);
  }

  emit(type: string, name: string, annotations: Record<string, string>) {
    this.version++;
    const line = JSON.stringify({ type, object: { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: { name, resourceVersion: String(this.version), annotations } } });
    for (const watcher of this.watchers) watcher.write(`${line}\n`);
  }

  handle(req: IncomingMessage, res: ServerResponse) {
    this.requests.push(`${req.headers.authorization} ${req.url}`);
    this.methods.push(req.method ?? '');
    const url = new URL(req.url!, 'https://x');
    if (req.headers.authorization !== 'Bearer test-token') {
      res.writeHead(401).end('{"kind":"Status","code":401}');
      return;
    }
    if (url.searchParams.get('watch') === '1') {
      if (Number(url.searchParams.get('resourceVersion')) < this.expiredBelow) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(`${JSON.stringify({ type: 'ERROR', object: { kind: 'Status', code: 410, reason: 'Expired', message: 'too old resource version' } })}\n`);
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json', 'transfer-encoding': 'chunked' });
      this.watchers.add(res);
      res.on('close', () => this.watchers.delete(res));
      return;
    }
    const limit = Number(url.searchParams.get('limit') ?? 500);
    const start = Number(url.searchParams.get('continue') ?? 0);
    const names = [...this.namespaces.keys()].sort();
    const page = names.slice(start, start + limit);
    const more = start + limit < names.length;
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ kind: 'PartialObjectMetadataList', metadata: { resourceVersion: String(this.version), ...(more ? { continue: String(start + limit) } : {}) }, items: page.map((name) => ({ metadata: { name, annotations: this.namespaces.get(name) } })) }));
  }

  /** Ends every open watch, as the apiserver does at timeoutSeconds. */
  closeWatches() {
    for (const watcher of this.watchers) watcher.end();
  }

  async stop() {
    this.closeWatches();
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}
