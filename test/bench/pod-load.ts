// Pods created through a real kube-apiserver at a fixed rate (open loop: each create starts at its
// time, whether or not the ones before it are answered), as a fleet of ReplicaSet controllers would
// create them: pods of Deployments, spread over namespaces, each named anew. No node runs them: the
// apiserver stores them and they stay Pending, admitted all the same.
import * as https from 'node:https';
import type { ControlPlane } from '../e2e/support/control-plane';

export interface PodLoadOptions {
  readonly rate: number;
  readonly total: number;
  readonly namespaces: readonly string[];
  /** Pods per Deployment: a namespace's pods belong to total / namespaces / podsPerDeployment Deployments. */
  readonly podsPerDeployment: number;
  /** Creates in flight at most; past it a create waits, and the achieved rate falls below the target. @default 100 */
  readonly maxInFlight?: number;
  /** Distinguishes the pods of two runs in the same namespaces. */
  readonly runLabel: string;
}

export interface PodLoadResult {
  readonly created: number;
  readonly failed: number;
  /** The first few failures, as the apiserver worded them. */
  readonly failures: readonly string[];
  readonly seconds: number;
  /** Client-side latency of each create, ms, sorted. */
  readonly latenciesMs: Float64Array;
  /** Pods created without the injection the default app always adds (Envoy). */
  readonly notInjected: number;
  /** The most creates that were in flight at once. */
  readonly peakInFlight: number;
}

/** An app pod that passes Pod Security "restricted", owned by a ReplicaSet of Deployment `deployment`. */
function appPod(name: string, deployment: string, replicaSet: string, index: number): Record<string, unknown> {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      labels: { app: deployment, 'pod-template-hash': replicaSet.slice(deployment.length + 1) },
      ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: replicaSet, uid: `00000000-0000-4000-8000-${String(index).padStart(12, '0')}`, controller: true, blockOwnerDeletion: true }],
    },
    spec: {
      securityContext: { runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } },
      containers: [
        {
          name: 'app',
          image: 'registry.example/app:1.0',
          ports: [{ containerPort: 8080, name: 'http' }],
          env: [{ name: 'LOG_LEVEL', value: 'info' }],
          resources: { requests: { cpu: '50m', memory: '64Mi' }, limits: { memory: '128Mi' } },
          securityContext: { runAsUser: 1000, allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } },
        },
      ],
    },
  };
}

/** The agent the load uses: the admin identity, enough sockets for the rate at a few hundred ms each. */
function loadAgent(plane: ControlPlane, sockets: number): https.Agent {
  return new https.Agent({ ca: plane.pki.caCertificate, cert: plane.pki.admin.certificate, key: plane.pki.admin.privateKey, keepAlive: true, maxSockets: sockets });
}

function createPod(agent: https.Agent, plane: ControlPlane, namespace: string, pod: Record<string, unknown>): Promise<{ status: number; body: any; ms: number }> {
  const payload = Buffer.from(JSON.stringify(pod));
  const started = performance.now();
  return new Promise((resolve) => {
    const req = https.request(
      {
        host: plane.address,
        port: plane.apiserverPort,
        path: `/api/v1/namespaces/${namespace}/pods`,
        method: 'POST',
        agent,
        headers: { accept: 'application/json', 'content-type': 'application/json', 'content-length': payload.length },
        timeout: 60_000,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          let body: any;
          try {
            body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
          } catch {
            body = undefined;
          }
          resolve({ status: res.statusCode ?? 0, body, ms: performance.now() - started });
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error('no answer in 60 s')));
    req.on('error', (error) => resolve({ status: 0, body: { message: error.message }, ms: performance.now() - started }));
    req.end(payload);
  });
}

const hasEnvoy = (pod: any) => Array.isArray(pod?.spec?.containers) && pod.spec.containers.some((container: any) => container?.name === 'envoy');

/** Creates `total` pods at `rate` per second, round-robin over the namespaces. */
export async function createPodsAtRate(plane: ControlPlane, options: PodLoadOptions): Promise<PodLoadResult> {
  const maxInFlight = options.maxInFlight ?? 100;
  const agent = loadAgent(plane, maxInFlight);
  const latencies = new Float64Array(options.total);
  const failures: string[] = [];
  let created = 0;
  let failed = 0;
  let notInjected = 0;
  let inFlight = 0;
  let peakInFlight = 0;
  let answered = 0;
  const perNamespace = Math.ceil(options.total / options.namespaces.length);
  const began = performance.now();
  let done!: () => void;
  const finished = new Promise<void>((resolve) => (done = resolve));
  const launch = (index: number) => {
    const namespaceIndex = index % options.namespaces.length;
    const inNamespace = Math.floor(index / options.namespaces.length);
    const deployment = `app-${Math.floor(inNamespace / options.podsPerDeployment)}`;
    const replicaSet = `${deployment}-${options.runLabel}`;
    const name = `${replicaSet}-${String(inNamespace % options.podsPerDeployment).padStart(3, '0')}`;
    inFlight++;
    peakInFlight = Math.max(peakInFlight, inFlight);
    void createPod(agent, plane, options.namespaces[namespaceIndex], appPod(name, deployment, replicaSet, namespaceIndex * perNamespace + inNamespace)).then(({ status, body, ms }) => {
      inFlight--;
      latencies[answered++] = ms;
      if (status === 201) {
        created++;
        if (!hasEnvoy(body)) notInjected++;
      } else {
        failed++;
        if (failures.length < 5) failures.push(`${status} ${body?.message ?? JSON.stringify(body)?.slice(0, 300)}`);
      }
      if (answered === options.total) done();
    });
  };
  // Every 10 ms, the creates whose time has come (and room in flight for them).
  let next = 0;
  const timer = setInterval(() => {
    const due = Math.min(options.total, Math.floor(((performance.now() - began) / 1000) * options.rate) + 1);
    while (next < due && inFlight < maxInFlight) launch(next++);
    if (next === options.total) clearInterval(timer);
  }, 10);
  await finished;
  agent.destroy();
  return {
    created,
    failed,
    failures,
    seconds: (performance.now() - began) / 1000,
    latenciesMs: latencies.sort(),
    notInjected,
    peakInFlight,
  };
}
