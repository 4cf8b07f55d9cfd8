// The webhook as the e2e suites run it beside a real kube-apiserver: the bundle started with the
// synthesized Deployment's environment and the control plane's serving certificate, and the synthesized
// MutatingWebhookConfiguration pointed at it on 127.0.0.1.
import * as path from 'node:path';
import { RUNTIME_ENV } from '../../../webhook/config';
import { Manifest, makeTempDir, synthDefaultAppToTemp } from '../../support/synth-helpers';
import { BundledWebhook, MountedDirs, deployedEnvironment, makeMountedDirs, startBundled } from '../../support/webhook-harness';
import { ControlPlane, ControlPlaneBinaries, binaryVersion } from './control-plane';

/** `configuration` (a synthesized MutatingWebhookConfiguration) renamed `name`, calling the webhook on
 * 127.0.0.1:`port` with `caCertificate` as its caBundle, failing closed; each entry's namespaceSelector
 * replaced when one is given. */
export function locallyServed(configuration: Manifest, name: string, port: number, caCertificate: string, namespaceSelector?: unknown): Manifest {
  return {
    ...configuration,
    metadata: { name },
    webhooks: configuration.webhooks.map((entry: any) => ({
      ...entry,
      clientConfig: { url: `https://127.0.0.1:${port}/mutate`, caBundle: Buffer.from(caCertificate).toString('base64') },
      failurePolicy: 'Fail',
      ...(namespaceSelector ? { namespaceSelector } : {}),
    })),
  };
}

/** The bundled webhook started as the synthesized Deployment runs it (its env: the 192Mi limit,
 * NODE_OPTIONS), with the config from `manifests`' ConfigMap and `plane`'s serving certificate. */
async function startDeployedBundle(
  plane: ControlPlane,
  manifests: Manifest[],
  label: string,
): Promise<{ webhook: BundledWebhook; dirs: MountedDirs; env: Record<string, string> }> {
  const configMap = manifests.find((m) => m.kind === 'ConfigMap' && m.data?.['config.json']);
  if (!configMap) throw new Error('no ConfigMap with config.json in the synthesized output');
  const dirs = makeMountedDirs(configMap.data['config.json'], { caCertificate: plane.pki.caCertificate, certificate: plane.pki.serving.certificate, privateKey: plane.pki.serving.privateKey });
  const deployed = deployedEnvironment(manifests, path.join(makeTempDir(`${label}-mounts`)));
  try {
    const webhook = await startBundled({ ...deployed.env, [RUNTIME_ENV.tlsDir]: dirs.tlsDir, [RUNTIME_ENV.configDir]: dirs.configDir, [RUNTIME_ENV.listenPort]: '0', [RUNTIME_ENV.opsPort]: '0' });
    return { webhook, dirs, env: deployed.env };
  } catch (error) {
    dirs.cleanup();
    throw error;
  }
}

/** The default app synthesized, a control plane started without extra flags, and the app's webhook
 * started beside it by startDeployedBundle; `stop` ends and removes all of it. */
export async function startDefaultAppBesidePlane(
  binaries: ControlPlaneBinaries,
  label: string,
): Promise<{ manifests: Manifest[]; plane: ControlPlane; webhook: BundledWebhook; env: Record<string, string>; stop(): Promise<void> }> {
  const manifests = synthDefaultAppToTemp().manifests;
  const plane = await ControlPlane.start(binaries, { apiserverFlags: [] });
  console.log(`kube-apiserver ${binaryVersion(binaries.kubeApiserver)}; etcd ${binaryVersion(binaries.etcd)}`);
  let started: Awaited<ReturnType<typeof startDeployedBundle>>;
  try {
    started = await startDeployedBundle(plane, manifests, label);
  } catch (error) {
    await plane.stop();
    throw error;
  }
  const { webhook, dirs, env } = started;
  return {
    manifests,
    plane,
    webhook,
    env,
    async stop() {
      await webhook.stop('SIGKILL');
      await plane.stop();
      dirs.cleanup();
    },
  };
}
