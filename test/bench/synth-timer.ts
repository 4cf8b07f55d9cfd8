// Times synthDefaultApp in this process: node --import tsx test/bench/synth-timer.ts <outdir> <certDir> <runs>
// Prints {"importMs": <process start -> modules loaded>, "synthMs": [<each run>]}.
import { loadOrCreateWebhookCertificate } from '../../charts/certificates/certificate-store';
import { DEFAULT_NAMESPACE, synthDefaultApp } from '../../app/default-app';

// performance.now() counts from process start, so this is start-up plus loading the app's modules.
const importMs = performance.now();
const [outdir, certDir, runsText] = process.argv.slice(2);
const certificate = loadOrCreateWebhookCertificate({ directory: certDir, serviceName: 'sidecar-injector', namespace: DEFAULT_NAMESPACE }).material;
const synthMs: number[] = [];
const runs = Math.min(20, Math.max(1, Number(runsText) || 1));
for (let i = 0; i < runs; i++) {
  const started = performance.now();
  const files = synthDefaultApp({ outdir, certificate });
  synthMs.push(performance.now() - started);
  if (files.length === 0) throw new Error('synth wrote nothing');
}
process.stdout.write(JSON.stringify({ importMs, synthMs }) + '\n');
