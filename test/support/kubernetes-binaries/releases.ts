// The Kubernetes releases the suites run against, and where `npm run kube:build` keeps their binaries.
// Test support only: nothing here is in the npm package.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

/** The patch release each tested minor is pinned to (a `go.mod` per release beside this file). */
export const PINNED_RELEASES: Readonly<Record<string, string>> = {
  '1.32': 'v1.32.13',
  '1.34': 'v1.34.4',
  '1.36': 'v1.36.3',
  '1.37': 'v1.37.2',
};

/** The binaries built from `k8s.io/kubernetes/cmd/<name>`, what the e2e, node and cluster-bench suites run. */
export const KUBERNETES_COMMANDS = ['kube-apiserver', 'kube-controller-manager', 'kube-scheduler', 'kubelet', 'kube-proxy', 'kubectl'] as const;
export type KubernetesCommand = (typeof KUBERNETES_COMMANDS)[number];

/** The suites' environment variable for each binary. */
export const COMMAND_VARIABLES: Readonly<Record<KubernetesCommand, string>> = {
  'kube-apiserver': 'KUBE_APISERVER',
  'kube-controller-manager': 'KUBE_CONTROLLER_MANAGER',
  'kube-scheduler': 'KUBE_SCHEDULER',
  kubelet: 'KUBELET',
  'kube-proxy': 'KUBE_PROXY',
  kubectl: 'KUBECTL',
};

/** `1.37`, `v1.37` or `v1.37.2` → the pinned `v1.37.2`, or an error naming the releases there are. */
export function resolveRelease(asked: string): string {
  const minor = /^v?(1\.\d+)(\.\d+)?$/.exec(asked.trim());
  const release = minor ? PINNED_RELEASES[minor[1]] : undefined;
  if (!minor || !release || (minor[2] && `v${minor[1]}${minor[2]}` !== release)) {
    throw new Error(`no pinned Kubernetes release for "${asked}"; pinned: ${Object.values(PINNED_RELEASES).join(', ')} (test/support/kubernetes-binaries/releases.ts)`);
  }
  return release;
}

/** Where built releases live: KUBE_BINARIES_CACHE, else $XDG_CACHE_HOME or ~/.cache, /cdk8s-sidecar-injector/kubernetes. */
export function binariesCacheRoot(env: NodeJS.ProcessEnv = process.env): string {
  if (env.KUBE_BINARIES_CACHE) return env.KUBE_BINARIES_CACHE;
  const base = env.XDG_CACHE_HOME || path.join(env.HOME || os.homedir(), '.cache');
  return path.join(base, 'cdk8s-sidecar-injector', 'kubernetes');
}

/** The directory holding one release's binaries (`<root>/v1.37.2/bin`). */
export function releaseBinDir(release: string, env: NodeJS.ProcessEnv = process.env): string {
  return path.join(binariesCacheRoot(env), release, 'bin');
}

/** A file this process may run. */
export function isExecutable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

/**
 * The release the suites use when no KUBE_* variable names a binary: KUBE_VERSION (`1.37`) if set, else the
 * newest pinned release whose binaries are all built. Undefined when nothing is built.
 */
function cachedRelease(env: NodeJS.ProcessEnv): string | undefined {
  const wanted = env.KUBE_VERSION ? [resolveRelease(env.KUBE_VERSION)] : Object.values(PINNED_RELEASES).slice().reverse();
  return wanted.find((release) => KUBERNETES_COMMANDS.every((command) => isExecutable(path.join(releaseBinDir(release, env), command))));
}

/**
 * process.env with the KUBE_* binary variables filled from the cache (KUBE_VERSION picks the release), so the
 * suites find `npm run kube:build`'s output by themselves, and the directory of KUBECTL put first on PATH,
 * since the suites run `kubectl` by name. The cache is used only when no KUBE_* variable is set, nor
 * KUBEBUILDER_ASSETS: binaries the user names are never mixed with another release's. Idempotent; what
 * the suites' binary lookups default to.
 */
export function useCachedKubernetes(): NodeJS.ProcessEnv {
  const env = process.env;
  const named = env.KUBEBUILDER_ASSETS || KUBERNETES_COMMANDS.some((command) => env[COMMAND_VARIABLES[command]]);
  const release = named ? undefined : cachedRelease(env);
  if (release) for (const command of KUBERNETES_COMMANDS) env[COMMAND_VARIABLES[command]] = path.join(releaseBinDir(release, env), command);
  const kubectlDir = env.KUBECTL ? path.dirname(env.KUBECTL) : undefined;
  const dirs = (env.PATH ?? '').split(':');
  if (kubectlDir && dirs[0] !== kubectlDir) env.PATH = [kubectlDir, ...dirs.filter((dir) => dir !== kubectlDir)].join(':');
  return env;
}

/** The hint the suites' skip lines end with. */
export const BUILD_HINT = 'or build them: npm run kube:build -- 1.37';
