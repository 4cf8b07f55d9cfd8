// The reconciler's entry point (bundled to build/webhook/reconciler.js): settings from the mounted
// ConfigMap, the pod's service-account token, its name for the Lease; stops on SIGTERM.

import * as fs from 'node:fs';
import * as path from 'node:path';
import { RECONCILER_DEFAULT_DIR, RECONCILER_ENV, RECONCILER_OPS_PORT, RECONCILER_SETTINGS_FILE, parseReconcilerSettings } from '../config';
import { createLogger } from '../server/logger';
import { inClusterConnection } from '../kube-client/in-cluster-connection';
import { HttpsKubeApi } from '../kube-client/kube-api';
import { startReconciler } from './reconciler-process';

async function main(): Promise<void> {
  const logger = createLogger(process.env.RECONCILER_LOG_LEVEL === 'debug' ? 'debug' : 'info');
  const dir = process.env[RECONCILER_ENV.settingsDir] ?? RECONCILER_DEFAULT_DIR;
  const settings = parseReconcilerSettings(fs.readFileSync(path.join(dir, RECONCILER_SETTINGS_FILE), 'utf8'));
  const connection = inClusterConnection();
  if (typeof connection === 'string') throw new Error(`the reconciler runs in the cluster only: ${connection}`);
  const namespace = process.env[RECONCILER_ENV.podNamespace];
  const identity = process.env[RECONCILER_ENV.podName];
  if (!namespace || !identity) throw new Error(`${RECONCILER_ENV.podNamespace} and ${RECONCILER_ENV.podName} must be set (the Deployment sets them from the downward API)`);
  const api = new HttpsKubeApi(connection);
  const running = await startReconciler({ api, settings, namespace, identity, logger, opsPort: Number(process.env[RECONCILER_ENV.opsPort] ?? RECONCILER_OPS_PORT) });
  logger.log('info', 'reconciler started', { namespace, identity, missing: settings.missing, outdated: settings.outdated, intervalSeconds: settings.intervalSeconds, backend: settings.injector.backend });
  const stop = async () => {
    await running.stop();
    api.close();
    logger.log('info', 'reconciler stopped');
    logger.flush();
    process.exit(0);
  };
  process.once('SIGTERM', () => void stop());
  process.once('SIGINT', () => void stop());
}

main().catch((error) => {
  process.stderr.write(`sidecar-injector reconciler: ${(error as Error).message}\n`);
  process.exit(1);
});
