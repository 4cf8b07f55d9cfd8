// `npm run webhook`: runs the webhook as the synthesized Deployment's container would: with its
// environment, its Secret and ConfigMaps written where that environment points, and its command.
// In the image-free mode that command is `node -e <loader>`, which runs the bundle exactly as it sits in
// the output's ConfigMap; with an image, it is the bundle the image is built from (build/webhook/server.js).
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Yaml } from 'cdk8s';
import { materializeDeployment } from './deployed-mounts';

const distDir = process.env.CDK8S_OUTDIR ?? 'dist';
const runRoot = path.resolve(process.env.WEBHOOK_RUN_DIR ?? '.webhook-run');
const files = fs.existsSync(distDir) ? fs.readdirSync(distDir).filter((f) => f.endsWith('.k8s.yaml')) : [];
if (files.length === 0) {
  console.error(`no synthesized manifests in ${distDir}/: run "npm run synth" first`);
  process.exit(2);
}
const manifests = files.flatMap((file) => Yaml.load(path.join(distDir, file)));
const deployed = materializeDeployment(manifests, runRoot);
fs.writeFileSync(path.join(runRoot, 'ca.crt'), deployed.caBundle);

// The Deployment's variables, unless the caller set one (e.g. INJECTOR_LISTEN_PORT=9443 npm run webhook).
const env = { ...process.env };
for (const [name, value] of Object.entries(deployed.env)) env[name] ??= value;
const port = env.INJECTOR_LISTEN_PORT;
const opsPort = env.INJECTOR_OPS_PORT;
console.error(
  `serving ${deployed.serverName} on https://localhost:${port} (POST /mutate) and http://localhost:${opsPort} (/healthz, /readyz, /metrics); mounts under ${path.relative('.', runRoot)}/\n` +
    `try: curl http://127.0.0.1:${opsPort}/readyz\n` +
    `     curl --cacert ${path.relative('.', runRoot)}/ca.crt --resolve ${deployed.serverName}:${port}:127.0.0.1 -H 'Content-Type: application/json' -d @test/fixtures/admission-reviews/pod-create-sleep.json https://${deployed.serverName}:${port}/mutate`,
);
// The container's command, with this machine's node standing in for the image's (`node` comes first).
const args = deployed.command ? deployed.command.slice(1) : ['build/webhook/server.js'];
if (deployed.command && deployed.command[0] !== 'node') {
  console.error(`the Deployment's command starts with ${deployed.command[0]}, not node: only node can run here`);
  process.exit(2);
}
console.error(deployed.command ? `running ${deployed.image}'s command: node ${args[0]} <loader> (bundle from the output's ConfigMap)` : 'running build/webhook/server.js');
const child = spawn(process.execPath, args, { env, stdio: 'inherit' });
for (const signal of ['SIGTERM', 'SIGINT'] as const) process.on(signal, () => child.kill(signal));
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 128 : 1)));
