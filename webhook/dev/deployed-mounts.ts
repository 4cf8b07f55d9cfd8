// Reproduces on a workstation what the kubelet gives the synthesized Deployment: the Secret and
// ConfigMap from dist/ written as the mounted directories (with the kubelet's `..data` symlink
// layout), and the container's environment pointing at them. `npm run webhook` and the
// deployed-as-synthesized test both use it, so both run the webhook exactly as synthesized.

import * as fs from 'node:fs';
import * as path from 'node:path';

type Manifest = Record<string, any>;

export interface DeployedWebhook {
  /** The container's environment, with mount paths rewritten under the local root. */
  readonly env: Record<string, string>;
  /** Local directory standing for each mount path of the container. */
  readonly mounts: Record<string, string>;
  readonly serviceName: string;
  readonly namespace: string;
  /** The MutatingWebhookConfiguration's caBundle, decoded (PEM). */
  readonly caBundle: string;
  /** `<service>.<namespace>.svc`: the name the apiserver connects to. */
  readonly serverName: string;
  readonly containerPort: number;
  /** The container's image. */
  readonly image: string;
  /** The container's command (the image-free mode's `node -e <loader>`); undefined runs the image's
   * entrypoint, which for the webhook image is `node server.js` with the bundle. */
  readonly command?: string[];
}

function only(manifests: Manifest[], kind: string, name?: string): Manifest {
  const found = manifests.filter((m) => m.kind === kind && (name === undefined || m.metadata?.name === name));
  if (found.length !== 1) throw new Error(`expected exactly one ${kind}${name ? ` named ${name}` : ''} in the manifests, found ${found.length}`);
  return found[0];
}

/** Writes `files` into `dir` the way the kubelet's atomic writer does: `..data` -> a versioned dir. */
export function writeAtomicDirectory(dir: string, files: Record<string, string | Buffer>): void {
  fs.mkdirSync(dir, { recursive: true });
  const version = `..${Date.now()}_${process.hrtime.bigint()}`;
  const versionDir = path.join(dir, version);
  fs.mkdirSync(versionDir);
  for (const [name, content] of Object.entries(files)) fs.writeFileSync(path.join(versionDir, name), content, { mode: 0o600 });
  const dataLink = path.join(dir, '..data');
  const tmpLink = path.join(dir, '..data_tmp');
  fs.rmSync(tmpLink, { force: true });
  fs.symlinkSync(version, tmpLink);
  let previous: string | undefined;
  try {
    previous = fs.readlinkSync(dataLink);
  } catch {
    previous = undefined;
  }
  fs.renameSync(tmpLink, dataLink); // the atomic swap
  for (const name of Object.keys(files)) {
    const link = path.join(dir, name);
    if (!fs.existsSync(link)) fs.symlinkSync(path.join('..data', name), link);
  }
  if (previous) fs.rmSync(path.join(dir, previous), { recursive: true, force: true });
}

/** Materializes the webhook Deployment of `manifests` under `root`. */
export function materializeDeployment(manifests: Manifest[], root: string): DeployedWebhook {
  const deployment = only(manifests, 'Deployment');
  const podSpec = deployment.spec.template.spec;
  const container = podSpec.containers[0];
  const mounts: Record<string, string> = {};
  for (const mount of container.volumeMounts ?? []) {
    const volume = podSpec.volumes.find((v: Manifest) => v.name === mount.name);
    const local = path.join(root, mount.mountPath);
    let files: Record<string, string | Buffer>;
    if (volume?.secret) {
      const secret = only(manifests, 'Secret', volume.secret.secretName);
      files = Object.fromEntries(Object.entries(secret.data ?? {}).map(([k, v]) => [k, Buffer.from(String(v), 'base64')]));
    } else if (volume?.configMap) {
      const configMap = only(manifests, 'ConfigMap', volume.configMap.name);
      const binary = Object.entries(configMap.binaryData ?? {}).map(([k, v]) => [k, Buffer.from(String(v), 'base64')]);
      files = { ...configMap.data, ...Object.fromEntries(binary) };
    } else {
      throw new Error(`volume ${mount.name} is neither a Secret nor a ConfigMap`);
    }
    writeAtomicDirectory(local, files);
    mounts[mount.mountPath] = local;
  }
  const env: Record<string, string> = {};
  for (const variable of container.env ?? []) {
    const value = String(variable.value ?? '');
    env[variable.name] = mounts[value] ?? value;
  }
  const webhookConfiguration = only(manifests, 'MutatingWebhookConfiguration');
  const clientConfig = webhookConfiguration.webhooks[0].clientConfig;
  const service = only(manifests, 'Service', clientConfig.service.name);
  return {
    env,
    mounts,
    serviceName: service.metadata.name,
    namespace: service.metadata.namespace,
    caBundle: Buffer.from(clientConfig.caBundle ?? '', 'base64').toString('utf8'),
    serverName: `${service.metadata.name}.${service.metadata.namespace}.svc`,
    containerPort: container.ports[0].containerPort,
    image: container.image,
    command: container.command,
  };
}
