// Deployed as synthesized: `npm run synth` writes the default app, `npm run webhook` runs the bundled
// server with the Deployment's environment and its Secret and ConfigMap as mounted directories, and
// the recorded AdmissionReviews go to it over TLS trusting only the webhook configuration's caBundle.

import assert from 'node:assert/strict';
import { ChildProcess, spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as zlib from 'node:zlib';
import { after, before, describe, test } from 'node:test';
import { App, Yaml } from 'cdk8s';
import { DEFAULT_INJECTIONS } from '../../app/default-injections';
import { DEFAULT_NODE_IMAGE, SERVER_BUNDLE_DIR_ENV, SERVER_BUNDLE_FILES, SERVER_BUNDLE_LOADER, SidecarInjectorChart, generateWebhookCertificate } from '../../charts/engine';
import { materializeDeployment, type DeployedWebhook } from '../../webhook/dev/deployed-mounts';
import { assertValidManifest } from '../support/openapi-validator';
import { applyResponse, decodePatch, loadReview, names, podOf } from '../support/recorded-reviews';
import { envoyInjection } from '../support/revision-fixtures';
import { BUNDLE, BundledWebhook, REPO_ROOT, freePort, httpsRequest, keepAliveAgent, postAdmission, startBundled } from '../support/webhook-harness';

const NPM = process.platform === 'win32' ? 'npm.cmd' : 'npm';

function readManifests(dir: string): any[] {
  return fs.readdirSync(dir).filter((f) => f.endsWith('.k8s.yaml')).flatMap((f) => Yaml.load(path.join(dir, f)));
}

interface Client {
  send(review: any): Promise<{ status: number; body: any }>;
  /** Sends `review`, checks the envelope, applies the patch; returns the patched object and response. */
  admit(review: any): Promise<{ object: any; pod: any; response: any; apiVersion: string }>;
}

function clientFor(port: number, deployed: Pick<DeployedWebhook, 'caBundle' | 'serverName'>): Client & { close(): void } {
  const agent = keepAliveAgent(deployed.caBundle, deployed.serverName, 4);
  const send = async (review: any) => {
    const result = await postAdmission(port, review, { ca: deployed.caBundle, servername: deployed.serverName, agent });
    return { status: result.status, body: result.json() };
  };
  return {
    send,
    async admit(review) {
      const { status, body } = await send(review);
      assert.equal(status, 200, `HTTP status; body: ${JSON.stringify(body)}`);
      assert.equal(body.kind, 'AdmissionReview');
      assert.equal(body.apiVersion, review.apiVersion, 'answered in the apiVersion of the request');
      assert.equal(body.response.uid, review.request.uid, 'uid echoed');
      assert.equal(body.response.allowed, true);
      const object = applyResponse(review.request.object, body.response);
      assertValidManifest(object);
      // Reinvocation: the webhook called again on its own output changes nothing.
      const again = await send({ ...review, request: { ...review.request, object } });
      assert.deepEqual(decodePatch(again.body.response), [], `second pass over ${object.kind} ${object.metadata.name ?? ''} returns no patch`);
      return { object, pod: podOf(object), response: body.response, apiVersion: body.apiVersion };
    },
    close: () => agent.destroy(),
  };
}

describe('the default app, deployed as synthesized (npm run synth, npm run webhook)', () => {
  let work: string;
  let webhook: ChildProcess;
  let client: ReturnType<typeof clientFor>;
  let deployed: DeployedWebhook;
  const logs: string[] = [];

  before(async () => {
    work = fs.mkdtempSync(path.join(os.tmpdir(), 'deployed-'));
    const env = { ...process.env, CDK8S_OUTDIR: path.join(work, 'dist'), SIDECAR_INJECTOR_CERT_DIR: path.join(work, 'certs') };
    const synth = spawnSync(NPM, ['run', '--silent', 'synth'], { cwd: REPO_ROOT, env, encoding: 'utf8' });
    assert.equal(synth.status, 0, `npm run synth failed:\n${synth.stdout}\n${synth.stderr}`);
    const manifests = readManifests(env.CDK8S_OUTDIR);
    // What the Deployment will get, read independently of what npm run webhook does with it.
    deployed = materializeDeployment(manifests, path.join(work, 'expected-mounts'));
    const port = await freePort();
    const opsPort = await freePort();
    webhook = spawn(NPM, ['run', '--silent', 'webhook'], {
      cwd: REPO_ROOT,
      env: { ...env, WEBHOOK_RUN_DIR: path.join(work, 'run'), INJECTOR_LISTEN_PORT: String(port), INJECTOR_OPS_PORT: String(opsPort) },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true, // its own process group: npm, tsx and the server stop together
    });
    await new Promise<void>((resolve, reject) => {
      // It bundles and starts in a few seconds; the deadline is for a loaded machine.
      const timer = setTimeout(() => reject(new Error(`npm run webhook did not listen within 60 s:\n${logs.join('')}`)), 60_000);
      webhook.stdout!.on('data', (chunk: Buffer) => {
        logs.push(chunk.toString());
        if (logs.join('').includes('"msg":"listening"')) {
          clearTimeout(timer);
          resolve();
        }
      });
      webhook.stderr!.on('data', (chunk: Buffer) => logs.push(chunk.toString()));
      webhook.on('exit', (code) => reject(new Error(`npm run webhook exited with ${code}:\n${logs.join('')}`)));
    });
    client = clientFor(port, deployed);
  });

  after(() => {
    client?.close();
    if (webhook?.pid) {
      try {
        process.kill(-webhook.pid, 'SIGTERM');
      } catch {
        // already gone
      }
    }
    fs.rmSync(work, { recursive: true, force: true });
  });

  test('runs on the pinned official Node image, from the bundle as the output\'s ConfigMap holds it', () => {
    assert.equal(deployed.image, DEFAULT_NODE_IMAGE, 'the container image');
    assert.deepEqual(deployed.command, ['node', '-e', SERVER_BUNDLE_LOADER], 'the container command');
    const bundleDir = deployed.env[SERVER_BUNDLE_DIR_ENV];
    const shipped = zlib.brotliDecompressSync(fs.readFileSync(path.join(bundleDir, SERVER_BUNDLE_FILES.bundle)));
    assert.ok(shipped.equals(fs.readFileSync(BUNDLE)), `the ConfigMap's ${SERVER_BUNDLE_FILES.bundle} decompresses to build/webhook/server.js`);
    const notices = zlib.brotliDecompressSync(fs.readFileSync(path.join(bundleDir, SERVER_BUNDLE_FILES.notices))).toString('utf8');
    assert.match(notices, /^express@5\.[\s\S]*MIT/m, 'the third-party notices name express and its license');
    assert.match(logs.join(''), /running node:22\.\d+\.\d+-alpine[\d.]+'s command/, 'npm run webhook ran the container command');
  });

  test('the server runs with the Deployment environment and mount paths', () => {
    assert.match(deployed.env.INJECTOR_TLS_DIR, /etc\/sidecar-injector\/tls$/);
    assert.match(deployed.env.INJECTOR_CONFIG_DIR, /etc\/sidecar-injector\/config$/);
    assert.equal(deployed.serverName, 'sidecar-injector.sidecar-injector.svc');
    const listening = logs.join('').split('\n').find((line) => line.includes('"msg":"config loaded"'));
    assert.ok(listening, 'config loaded from the mounted ConfigMap');
    assert.match(listening!, /"injections":\["envoy","wait-for-it","nginx-sidecar","probe-defaults"\]/);
  });

  test('envoy: every pod gets the envoy container', async () => {
    const { pod } = await client.admit(loadReview('pod-create-demoapp'));
    assert.deepEqual(names(pod.spec.containers), ['demoapp', 'envoy']);
  });

  test('wait-for-it: the annotated Deployment gets the init container with the annotation value', async () => {
    const { pod } = await client.admit(loadReview('deployment-create-frontend'));
    const configured = DEFAULT_INJECTIONS.find((injection) => injection.name === 'wait-for-it')!.initContainers![0];
    assert.deepEqual(pod.spec.initContainers, [{ ...configured, args: ['www.google.com:80'] }]);
  });

  test('nginx-sidecar composed with envoy on the annotated pod', async () => {
    const { pod } = await client.admit(loadReview('pod-create-sleep'));
    assert.deepEqual(names(pod.spec.containers), ['sleep', 'helper', 'envoy', 'sidecar-nginx']);
    assert.deepEqual(pod.spec.volumes.at(-1), { name: 'nginx-conf', configMap: { name: 'nginx-configmap' } });
    assert.equal(pod.metadata.annotations['sidecar-injector.io/status'], 'envoy,nginx-sidecar');
  });

  test('probe-defaults: initialDelaySeconds merged into my-container', async () => {
    const review = loadReview('pod-create-demoapp');
    review.request.object.metadata.labels = { app: 'myApp' };
    review.request.object.spec.containers[0].name = 'my-container';
    review.request.object.spec.containers[0].readinessProbe = { tcpSocket: { port: 5678 } };
    const { pod } = await client.admit(review);
    assert.deepEqual(pod.spec.containers[0].readinessProbe, { tcpSocket: { port: 5678 }, initialDelaySeconds: 10 });
  });

  test('a pod that already has a native sidecar keeps it and gets envoy', async () => {
    const { pod } = await client.admit(loadReview('pod-create-worker-'));
    assert.deepEqual(names(pod.spec.initContainers), ['log-shipper']);
    assert.deepEqual(names(pod.spec.containers), ['worker', 'envoy']);
  });

  test('opt-out: inject "false" returns no patch', async () => {
    const review = loadReview('pod-create-sleep');
    review.request.object.metadata.annotations['sidecar-injector.io/inject'] = 'false';
    const { body } = await client.send(review);
    assert.deepEqual(decodePatch(body.response), []);
  });

  test('an UPDATE of the injected Deployment returns no patch', async () => {
    const created = await client.admit(loadReview('deployment-create-frontend'));
    const update = loadReview('deployment-update-frontend');
    update.request.oldObject = created.object;
    update.request.object = structuredClone(created.object);
    update.request.object.spec.template.spec.containers[0].image = 'nginx:1.16.1';
    const { body } = await client.send(update);
    assert.deepEqual(decodePatch(body.response), []);
  });

  test('the recorded UPDATE of a not-yet-injected Deployment is injected once', async () => {
    const { pod } = await client.admit(loadReview('deployment-update-frontend'));
    assert.deepEqual(names(pod.spec.initContainers), ['wait-for-it']);
  });

  test('v1beta1 is answered in v1beta1', async () => {
    const { apiVersion, pod } = await client.admit(loadReview('pod-create-demoapp-v1beta1'));
    assert.equal(apiVersion, 'admission.k8s.io/v1beta1');
    assert.deepEqual(names(pod.spec.containers), ['demoapp', 'envoy']);
  });

  test('dry-run is answered exactly like a real request', async () => {
    const dryRun = loadReview('pod-create-dryrun-dryrun');
    const real = structuredClone(dryRun);
    real.request.dryRun = false;
    delete real.request.options.dryRun;
    const [a, b] = await Promise.all([client.send(dryRun), client.send(real)]);
    assert.deepEqual(a.body, b.body);
    assert.ok(a.body.response.patch, 'the dry-run pod is patched');
  });
});

describe('every workload kind, deployed as synthesized from a chart targeting them', () => {
  let work: string;
  let webhook: BundledWebhook;
  let client: ReturnType<typeof clientFor>;

  before(async () => {
    work = fs.mkdtempSync(path.join(os.tmpdir(), 'deployed-workloads-'));
    const app = new App({ outdir: path.join(work, 'dist') });
    new SidecarInjectorChart(app, 'workloads', {
      namespace: 'platform',
      name: 'injector',
      annotationPrefix: 'injector.example.com',
      certificate: generateWebhookCertificate({ serviceName: 'injector', namespace: 'platform' }),
      injections: [
        {
          name: 'log-shipper',
          trigger: { type: 'always' },
          targetKinds: ['Deployment', 'StatefulSet', 'DaemonSet', 'ReplicaSet', 'Job', 'CronJob'],
          initContainers: [{ name: 'log-shipper', image: 'fluent/fluent-bit:3.0', restartPolicy: 'Always' }],
          env: [{ name: 'WORKLOAD', value: '{{name}}' }],
        },
        { name: 'envoy', trigger: { type: 'requested' }, targetKinds: ['DaemonSet'], containers: [{ name: 'envoy', image: 'envoyproxy/envoy:v1.20.3' }] },
      ],
    });
    app.synth();
    const deployed = materializeDeployment(readManifests(app.outdir), path.join(work, 'mounts'));
    webhook = await startBundled({ ...deployed.env, INJECTOR_LISTEN_PORT: '0', INJECTOR_OPS_PORT: '0' });
    client = clientFor(webhook.port, deployed);
  });

  after(async () => {
    client?.close();
    await webhook?.stop();
    fs.rmSync(work, { recursive: true, force: true });
  });

  for (const name of ['deployment-create-frontend', 'statefulset-create-db', 'daemonset-create-agent', 'job-create-batch-once', 'cronjob-create-nightly']) {
    test(`injects the pod template of ${name}`, async () => {
      const review = loadReview(name);
      const { pod } = await client.admit(review);
      assert.deepEqual(names(pod.spec.initContainers), ['log-shipper']);
      assert.deepEqual(pod.spec.containers[0].env.at(-1), { name: 'WORKLOAD', value: review.request.object.metadata.name });
      const expected = name.startsWith('daemonset') ? 'log-shipper,envoy' : 'log-shipper';
      assert.equal(pod.metadata.annotations['injector.example.com/status'], expected);
    });
  }
});

describe('revisions, deployed as synthesized: every webhook entry calls a path the bundled server answers', () => {
  let work: string;
  let webhook: BundledWebhook;
  let deployed: DeployedWebhook;
  let entries: any[];

  before(async () => {
    work = fs.mkdtempSync(path.join(os.tmpdir(), 'deployed-revisions-'));
    const app = new App({ outdir: path.join(work, 'dist') });
    const envoy = (image: string) => [envoyInjection(image)];
    new SidecarInjectorChart(app, 'revisions', {
      certificate: generateWebhookCertificate({ serviceName: 'sidecar-injector', namespace: 'sidecar-injector' }),
      revisions: [
        { name: 'r1', injections: envoy('envoyproxy/envoy:v1.20.3') },
        { name: 'r2', injections: envoy('envoyproxy/envoy:v1.31.0') },
      ],
      tags: [{ name: 'stable', revision: 'r1', default: true }, { name: 'canary', revision: 'r2' }],
    });
    app.synth();
    const manifests = readManifests(app.outdir);
    entries = manifests.find((m) => m.kind === 'MutatingWebhookConfiguration').webhooks;
    deployed = materializeDeployment(manifests, path.join(work, 'mounts'));
    webhook = await startBundled({ ...deployed.env, INJECTOR_LISTEN_PORT: '0', INJECTOR_OPS_PORT: '0' });
  });

  after(async () => {
    await webhook?.stop();
    fs.rmSync(work, { recursive: true, force: true });
  });

  test("each entry's path gets its revision's Envoy, or the unserved warning", async () => {
    const expected: Record<string, string> = { default: 'envoyproxy/envoy:v1.20.3', r1: 'envoyproxy/envoy:v1.20.3', r2: 'envoyproxy/envoy:v1.31.0' };
    assert.equal(entries.length, 7);
    for (const entry of entries) {
      const review = loadReview('pod-create-sleep');
      const answer = await httpsRequest(webhook.port, entry.clientConfig.service.path, JSON.stringify(review), { ca: deployed.caBundle, servername: deployed.serverName });
      assert.equal(answer.status, 200, `${entry.name}: ${answer.text}`);
      const response = answer.json().response;
      const role = entry.name.split('.')[0];
      if (role.startsWith('unserved-')) {
        assert.match(response.warnings[0], /names no revision or tag this injector serves|is labelled sidecar-injector\.io\/rev with no revision/, entry.name);
        continue;
      }
      const pod = podOf(applyResponse(review.request.object, response));
      assert.equal(pod.spec.containers.find((c: any) => c.name === 'envoy').image, expected[role], entry.name);
      assert.equal(pod.metadata.annotations['sidecar-injector.io/revision'], role === 'default' ? 'r1' : role, entry.name);
    }
  });
});
