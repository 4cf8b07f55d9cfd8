// The baseline the webhook is measured against: a bare `node:https` server with the same certificate
// and TLS settings that reads the body, JSON.parses it and answers a fixed one-operation JSONPatch
// AdmissionReview carrying the request's uid. What any Node webhook must at least spend per request.
//
// Environment: BASELINE_TLS_DIR (a directory with tls.crt and tls.key), BASELINE_PORT (0 = any).
// Logs one JSON line {"msg":"listening","port":N} once it listens; exits on SIGTERM/SIGINT.
import * as fs from 'node:fs';
import * as https from 'node:https';
import * as path from 'node:path';

const tlsDir = process.env.BASELINE_TLS_DIR;
if (!tlsDir) {
  process.stderr.write('BASELINE_TLS_DIR is not set\n');
  process.exit(2);
}
const PATCH = Buffer.from(JSON.stringify([{ op: 'add', path: '/metadata/annotations/baseline', value: 'true' }])).toString('base64');
const MAX_BODY_BYTES = 7 * 1024 * 1024;

const server = https.createServer(
  {
    cert: fs.readFileSync(path.join(tlsDir, 'tls.crt'), 'utf8'),
    key: fs.readFileSync(path.join(tlsDir, 'tls.key'), 'utf8'),
    minVersion: 'TLSv1.2',
    keepAliveTimeout: 120_000,
  },
  (req, res) => {
    if (req.method === 'GET') {
      res.writeHead(200, { 'Content-Type': 'text/plain', 'Content-Length': '3' }).end('ok\n');
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= MAX_BODY_BYTES) chunks.push(chunk);
    });
    req.on('end', () => {
      let text: string;
      let status = 200;
      try {
        const review = JSON.parse((chunks.length === 1 ? chunks[0] : Buffer.concat(chunks)).toString('utf8'));
        text = JSON.stringify({
          apiVersion: review.apiVersion,
          kind: 'AdmissionReview',
          response: { uid: review.request.uid, allowed: true, patchType: 'JSONPatch', patch: PATCH },
        });
      } catch (error) {
        status = 400;
        text = JSON.stringify({ error: (error as Error).message });
      }
      res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) }).end(text);
    });
  },
);

server.listen(Number(process.env.BASELINE_PORT ?? 0), '127.0.0.1', () => {
  const address = server.address();
  process.stdout.write(JSON.stringify({ msg: 'listening', port: typeof address === 'object' && address ? address.port : 0 }) + '\n');
});
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.on(signal, () => {
    server.close(() => process.exit(0));
    server.closeAllConnections();
    setTimeout(() => process.exit(0), 2000).unref();
  });
}
