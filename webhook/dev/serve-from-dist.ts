// `npm run webhook`: runs the bundled server (the file the image runs) with the synthesized
// Deployment's environment, its Secret and ConfigMap written where that environment points.
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
console.error(
  `serving ${deployed.serverName} on https://localhost:${port} (mounts under ${path.relative('.', runRoot)}/)\n` +
    `try: curl --cacert ${path.relative('.', runRoot)}/ca.crt --resolve ${deployed.serverName}:${port}:127.0.0.1 https://${deployed.serverName}:${port}/readyz`,
);
const child = spawn(process.execPath, ['build/webhook/server.js'], { env, stdio: 'inherit' });
for (const signal of ['SIGTERM', 'SIGINT'] as const) process.on(signal, () => child.kill(signal));
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 128 : 1)));
