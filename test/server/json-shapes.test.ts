// A JSON body cannot cost more memory than the budget charges for it: the bundled server, started with
// the synthesized Deployment's environment (192Mi, NODE_OPTIONS), sent the worst shapes JSON.parse
// knows at the body limit, several at once, stays alive and under its memory limit.

import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as https from 'node:https';
import * as path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { RUNTIME_ENV, memoryQuantityBytes } from '../../webhook/config';
import { MAX_BODY_BYTES } from '../../webhook/server/admission-handler';
import { makeTempDir, synthDefaultAppToTemp } from '../support/synth-helpers';
import { BundledWebhook, deployedEnvironment, opsRequest, startBundled } from '../support/webhook-harness';

const MiB = 1024 * 1024;
/** The largest body charged its worst case unread (SMALL_BYTES). */
const SMALL_BYTES = 8 * 1024;

/** `[unit,unit,...]` of `bytes` bytes (padded with spaces, which JSON allows). */
function repeated(unit: string, bytes: number): Buffer {
  const count = Math.floor((bytes - 2) / (unit.length + 1));
  const text = '[' + Array(count).fill(unit).join(',') + ']';
  return Buffer.from(text.padEnd(bytes, ' '));
}

/** The shapes that cost JSON.parse the most heap per byte (runtime-settings.ts has the figures). */
const SHAPES: Record<string, (bytes: number) => Buffer> = {
  'empty objects [{},{},...]': (bytes) => repeated('{}', bytes),
  'nested arrays [[[...]]]': (bytes) => Buffer.from('['.repeat(Math.floor(bytes / 2)) + ']'.repeat(Math.floor(bytes / 2))),
  'empty arrays [[],[],...]': (bytes) => repeated('[]', bytes),
  'objects with unique keys [{"k0":0},...]': (bytes) => {
    const parts: string[] = [];
    for (let i = 0, length = 2; length < bytes - 16; i++) length += (parts[parts.length] = `{"k${i.toString(36)}":0}`).length + 1;
    return Buffer.from(`[${parts.join(',')}]`.padEnd(bytes, ' '));
  },
  'zeros [0,0,...]': (bytes) => repeated('0', bytes),
  'deep objects {"a":{"a":...}}': (bytes) => {
    const depth = Math.floor((bytes - 1) / 6);
    return Buffer.from(('{"a":'.repeat(depth) + '0' + '}'.repeat(depth)).padEnd(bytes, ' '));
  },
};

function post(port: number, body: Buffer, ca: string, servername: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve) => {
    const req = https.request(
      { host: '127.0.0.1', port, path: '/mutate', method: 'POST', ca, servername, agent: false, headers: { 'Content-Type': 'application/json', 'Content-Length': String(body.length) } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8').slice(0, 300) }));
        res.on('error', () => resolve({ status: res.statusCode ?? 0, text: 'answer cut' }));
      },
    );
    // A server that answers before reading the whole body may reset the rest: the answer is what counts.
    req.on('error', (error: NodeJS.ErrnoException) => resolve({ status: 0, text: `no answer: ${error.code ?? error.message}` }));
    req.end(body);
  });
}

function vmHwmBytes(pid: number): number {
  return Number(/^VmHWM:\s+(\d+) kB/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) * 1024;
}

describe('the worst JSON shapes at the body limit, sent to the bundled webhook as the Deployment starts it', () => {
  let webhook: BundledWebhook;
  let limitBytes: number;
  let ca: string;
  let servername: string;

  before(async () => {
    const synthesized = synthDefaultAppToTemp();
    const deployed = deployedEnvironment(synthesized.manifests, path.join(makeTempDir('json-shape-mounts')));
    ca = deployed.caBundle;
    servername = deployed.serverName;
    limitBytes = memoryQuantityBytes(String(deployed.container.resources?.limits?.memory))!;
    webhook = await startBundled({ ...deployed.env, [RUNTIME_ENV.listenPort]: '0', [RUNTIME_ENV.opsPort]: '0' });
  });

  after(async () => {
    await webhook?.stop('SIGKILL');
  });

  for (const [name, make] of Object.entries(SHAPES)) {
    test(`${name}: three at ${MAX_BODY_BYTES} bytes, three at 1 MiB and twenty at ${SMALL_BYTES} bytes at once are all answered, and the process stays alive and under its memory limit`, async (t) => {
      const bodies = [...Array(3).fill(make(MAX_BODY_BYTES)), ...Array(3).fill(make(MiB)), ...Array(20).fill(make(SMALL_BYTES))];
      const answers = await Promise.all(bodies.map((body) => post(webhook.port, body, ca, servername)));
      // A body refused by its shape mid-way is answered 413 or 429 and its connection closed; a client
      // still writing may see that as a reset (EPIPE) rather than read the answer. Every other outcome fails.
      const refusedMidBody = (answer: { status: number; text: string }, index: number) => index < 6 && answer.status === 0 && /EPIPE|ECONNRESET/.test(answer.text);
      const unanswered = answers.filter((answer, index) => ![400, 413, 429].includes(answer.status) && !refusedMidBody(answer, index));
      assert.deepEqual(unanswered, [], `expected every body answered 400 (not an AdmissionReview), 413 or 429; exit code ${webhook.child.exitCode}, log tail:\n${webhook.logs.slice(-3).join('')}`);
      const health = await opsRequest(webhook.opsPort, '/healthz');
      assert.equal(health.status, 200, 'the webhook is alive and answers its liveness probe');
      const peak = vmHwmBytes(webhook.child.pid!);
      t.diagnostic(`statuses ${[...new Set(answers.map((answer) => answer.status))].join(', ')}; peak RSS ${(peak / MiB).toFixed(1)} MiB of ${limitBytes / MiB} MiB`);
      assert.ok(peak < limitBytes, `peak RSS (VmHWM) ${(peak / MiB).toFixed(1)} MiB, over the ${limitBytes / MiB} MiB memory limit`);
    });
  }
});
