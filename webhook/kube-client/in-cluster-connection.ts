// Where the in-cluster apiserver is and how to authenticate to it: the service-account token and CA
// the kubelet mounts, and the Service address it puts in the environment. The webhook's namespace
// watch and the reconciler connect with it.

import * as fs from 'node:fs';

/** Where the apiserver is, and how to authenticate to it. */
export interface ApiserverConnection {
  /** `https://host:port`. */
  readonly url: string;
  /** The bearer token's file (read again on every request: kubelet rotates it). */
  readonly tokenFile: string;
  /** The CA bundle that signs the apiserver's certificate. */
  readonly caFile: string;
  /** The name the certificate must carry, when not the URL's host. @default the URL's host */
  readonly serverName?: string;
}

const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

/** The in-cluster connection from the environment the kubelet sets, or why there is none. */
export function inClusterConnection(env: NodeJS.ProcessEnv = process.env): ApiserverConnection | string {
  const host = env.KUBERNETES_SERVICE_HOST;
  const port = env.KUBERNETES_SERVICE_PORT;
  if (!host || !port) return 'KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set';
  const tokenFile = `${SERVICE_ACCOUNT_DIR}/token`;
  if (!fs.existsSync(tokenFile)) return `no service-account token at ${tokenFile} (automountServiceAccountToken is off)`;
  return { url: `https://${host.includes(':') ? `[${host}]` : host}:${port}`, tokenFile, caFile: `${SERVICE_ACCOUNT_DIR}/ca.crt` };
}
