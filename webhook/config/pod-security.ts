// The Pod Security Standards ("baseline" and "restricted", version "latest" as of Kubernetes 1.32),
// checked the way the Pod Security admission controller checks them
// (k8s.io/pod-security-admission/policy, https://kubernetes.io/docs/concepts/security/pod-security-standards/).
//
// Two uses: a whole pod (spec and metadata, as the apiserver sees it), and the parts an injection adds,
// where the pod is not known yet. There, a container must pass on its own: a requirement that a pod
// could meet at pod level (runAsNonRoot, seccompProfile) has to be met by the container itself.
// Imports nothing, so the construct, the webhook and a CLI can all use it.

/** The Pod Security Standards levels, least to most strict, as namespaces name them in
 * `pod-security.kubernetes.io/enforce`. */
export const POD_SECURITY_LEVELS = ['privileged', 'baseline', 'restricted'] as const;
/** A Pod Security Standards level: `privileged` (no checks), `baseline` (no known privilege
 * escalation) or `restricted` (hardened: non-root, no privilege escalation, all capabilities dropped, seccomp). */
export type PodSecurityLevel = (typeof POD_SECURITY_LEVELS)[number];

/** One failed check: where (a path written like the props or the pod), which PSA check, and why. */
export interface PodSecurityViolation {
  /** The lowest level the check belongs to: failing it fails this level and every stricter one. */
  readonly level: 'baseline' | 'restricted';
  /** The check's name in the Pod Security admission controller (e.g. `allowPrivilegeEscalation`). */
  readonly check: string;
  /** Where the failing field is: `spec.containers[0].securityContext.privileged` for a pod, or
   * `injections[1].containers[0].securityContext.privileged` for an injection. */
  readonly path: string;
  /** Why the field fails the check, such as `privileged containers are not allowed`. */
  readonly message: string;
}

type Json = Record<string, unknown>;

const isObject = (value: unknown): value is Json => value !== null && typeof value === 'object' && !Array.isArray(value);
const objectAt = (value: unknown, key: string): Json | undefined => (isObject(value) && isObject(value[key]) ? (value[key] as Json) : undefined);
const listAt = (value: unknown, key: string): unknown[] => (isObject(value) && Array.isArray(value[key]) ? (value[key] as unknown[]) : []);

/** Capabilities "baseline" lets a container add: the container runtime's default set. */
export const BASELINE_CAPABILITIES = [
  'AUDIT_WRITE', 'CHOWN', 'DAC_OVERRIDE', 'FOWNER', 'FSETID', 'KILL', 'MKNOD', 'NET_BIND_SERVICE', 'SETFCAP', 'SETGID',
  'SETPCAP', 'SETUID', 'SYS_CHROOT',
] as const;
/** Volume sources "restricted" allows. */
export const RESTRICTED_VOLUME_SOURCES = [
  'configMap', 'csi', 'downwardAPI', 'emptyDir', 'ephemeral', 'persistentVolumeClaim', 'projected', 'secret',
] as const;
/** Sysctls "baseline" allows: the kubelet's safe set as of 1.32. */
export const SAFE_SYSCTLS = [
  'kernel.shm_rmid_forced', 'net.ipv4.ip_local_port_range', 'net.ipv4.ip_unprivileged_port_start', 'net.ipv4.tcp_syncookies',
  'net.ipv4.ping_group_range', 'net.ipv4.ip_local_reserved_ports', 'net.ipv4.tcp_keepalive_time', 'net.ipv4.tcp_fin_timeout',
  'net.ipv4.tcp_keepalive_intvl', 'net.ipv4.tcp_keepalive_probes', 'net.ipv4.tcp_rmem', 'net.ipv4.tcp_wmem',
] as const;
const SELINUX_TYPES = new Set(['', 'container_t', 'container_init_t', 'container_kvm_t', 'container_engine_t']);
const APPARMOR_ANNOTATION_PREFIX = 'container.apparmor.security.beta.kubernetes.io/';

/** Whether failing a check of `level` fails `required`. */
function counts(level: 'baseline' | 'restricted', required: PodSecurityLevel): boolean {
  return required === 'restricted' || (required === 'baseline' && level === 'baseline');
}

class Violations {
  readonly list: PodSecurityViolation[] = [];
  constructor(private readonly required: PodSecurityLevel) {}
  add(level: 'baseline' | 'restricted', check: string, path: string, message: string): void {
    if (counts(level, this.required)) this.list.push({ level, check, path, message });
  }
}

/** What is known about the pod a container runs in. */
interface PodContext {
  /** The pod's securityContext; undefined when the pod is not known (an injection's container). */
  readonly securityContext: Json | undefined;
  /** `spec.os.name: windows` exempts a pod from the Linux-only restricted checks. */
  readonly windows: boolean;
  /** `spec.hostUsers: false` (a user namespace) lets baseline allow an Unmasked procMount. */
  readonly userNamespace: boolean;
}

/**
 * Checks one container. `partial`: the container is a set of fields merged into others, so only values
 * it sets are checked, never fields it leaves out.
 */
function checkContainer(container: unknown, path: string, pod: PodContext, partial: boolean, out: Violations): void {
  if (!isObject(container)) return;
  const context = objectAt(container, 'securityContext') ?? {};
  const at = (field: string) => `${path}.securityContext.${field}`;

  // baseline
  if (context.privileged === true) out.add('baseline', 'privileged', at('privileged'), 'privileged containers are not allowed');
  if (objectAt(context, 'windowsOptions')?.hostProcess === true) {
    out.add('baseline', 'hostProcess', at('windowsOptions.hostProcess'), 'Windows host processes are not allowed');
  }
  const capabilities = objectAt(context, 'capabilities');
  const added = listAt(capabilities, 'add');
  added.forEach((capability, index) => {
    if (!(BASELINE_CAPABILITIES as readonly unknown[]).includes(capability)) {
      out.add('baseline', 'capabilities_baseline', at(`capabilities.add[${index}]`), `capability ${JSON.stringify(capability)} is not in the default set`);
    }
  });
  listAt(container, 'ports').forEach((port, index) => {
    const hostPort = isObject(port) ? port.hostPort : undefined;
    if (hostPort !== undefined && hostPort !== null && hostPort !== 0) {
      out.add('baseline', 'hostPorts', `${path}.ports[${index}].hostPort`, `host port ${JSON.stringify(hostPort)} is not allowed`);
    }
  });
  checkSeLinux(objectAt(context, 'seLinuxOptions'), at('seLinuxOptions'), out);
  const procMount = context.procMount;
  if (procMount !== undefined && procMount !== null && procMount !== 'Default' && !(procMount === 'Unmasked' && pod.userNamespace)) {
    out.add('baseline', 'procMount', at('procMount'), `procMount ${JSON.stringify(procMount)} is not allowed (only Default)`);
  }
  const seccompType = objectAt(context, 'seccompProfile')?.type;
  if (seccompType === 'Unconfined') out.add('baseline', 'seccompProfile_baseline', at('seccompProfile.type'), 'seccomp profile Unconfined is not allowed');
  if (objectAt(context, 'appArmorProfile')?.type === 'Unconfined') {
    out.add('baseline', 'appArmorProfile', at('appArmorProfile.type'), 'AppArmor profile Unconfined is not allowed');
  }

  // restricted
  const linuxOnly = !pod.windows;
  if (linuxOnly && (partial ? context.allowPrivilegeEscalation === true : context.allowPrivilegeEscalation !== false)) {
    out.add('restricted', 'allowPrivilegeEscalation', at('allowPrivilegeEscalation'), `must be false, got ${JSON.stringify(context.allowPrivilegeEscalation)}`);
  }
  if (linuxOnly) {
    const dropped = listAt(capabilities, 'drop');
    if (!partial && !dropped.includes('ALL')) out.add('restricted', 'capabilities_restricted', at('capabilities.drop'), 'must include "ALL"');
    added.forEach((capability, index) => {
      if (capability !== 'NET_BIND_SERVICE') {
        out.add('restricted', 'capabilities_restricted', at(`capabilities.add[${index}]`), `only NET_BIND_SERVICE may be added, got ${JSON.stringify(capability)}`);
      }
    });
  }
  const podNonRoot = pod.securityContext?.runAsNonRoot;
  if (context.runAsNonRoot === false) out.add('restricted', 'runAsNonRoot', at('runAsNonRoot'), 'must not be false');
  else if (!partial && context.runAsNonRoot !== true && podNonRoot !== true) {
    const where = pod.securityContext ? 'here or in the pod\'s securityContext' : 'here (the pod it lands in may not set it)';
    out.add('restricted', 'runAsNonRoot', at('runAsNonRoot'), `must be true ${where}`);
  }
  if (context.runAsUser === 0) out.add('restricted', 'runAsUser', at('runAsUser'), 'must not be 0 (root)');
  if (linuxOnly) {
    const podSeccomp = objectAt(pod.securityContext, 'seccompProfile')?.type;
    const effective = seccompType ?? podSeccomp;
    if (seccompType === 'Unconfined') {
      // already a baseline violation
    } else if (seccompType !== undefined && seccompType !== 'RuntimeDefault' && seccompType !== 'Localhost') {
      out.add('restricted', 'seccompProfile_restricted', at('seccompProfile.type'), `must be RuntimeDefault or Localhost, got ${JSON.stringify(seccompType)}`);
    } else if (!partial && effective !== 'RuntimeDefault' && effective !== 'Localhost') {
      const where = pod.securityContext ? 'here or in the pod\'s securityContext' : 'here (the pod it lands in may not set it)';
      out.add('restricted', 'seccompProfile_restricted', at('seccompProfile.type'), `must be RuntimeDefault or Localhost ${where}`);
    }
  }
}

function checkSeLinux(options: Json | undefined, path: string, out: Violations): void {
  if (!options) return;
  if (options.type !== undefined && !SELINUX_TYPES.has(options.type as string)) {
    out.add('baseline', 'seLinuxOptions', `${path}.type`, `SELinux type ${JSON.stringify(options.type)} is not allowed`);
  }
  for (const field of ['user', 'role']) {
    if (options[field] !== undefined && options[field] !== '') {
      out.add('baseline', 'seLinuxOptions', `${path}.${field}`, `a custom SELinux ${field} is not allowed`);
    }
  }
}

function checkVolume(volume: unknown, path: string, out: Violations): void {
  if (!isObject(volume)) return;
  for (const source of Object.keys(volume)) {
    if (source === 'name' || volume[source] === undefined || volume[source] === null) continue;
    if (source === 'hostPath') out.add('baseline', 'hostPathVolumes', `${path}.hostPath`, 'hostPath volumes are not allowed');
    else if (!(RESTRICTED_VOLUME_SOURCES as readonly string[]).includes(source)) {
      out.add('restricted', 'restrictedVolumes', `${path}.${source}`, `volume source ${source} is not allowed (only ${RESTRICTED_VOLUME_SOURCES.join(', ')})`);
    }
  }
}

function checkAppArmorAnnotations(annotations: unknown, path: string, out: Violations): void {
  if (!isObject(annotations)) return;
  for (const [key, value] of Object.entries(annotations)) {
    if (!key.startsWith(APPARMOR_ANNOTATION_PREFIX)) continue;
    if (value !== 'runtime/default' && !(typeof value === 'string' && value.startsWith('localhost/'))) {
      out.add('baseline', 'appArmorProfile', `${path}["${key}"]`, `AppArmor profile ${JSON.stringify(value)} is not allowed (runtime/default or localhost/*)`);
    }
  }
}

const CONTAINER_LISTS = ['containers', 'initContainers', 'ephemeralContainers'] as const;

/**
 * Every check of `level` that a pod (or pod template: `{metadata, spec}`) fails, as the Pod Security
 * admission controller evaluates it. Paths start at `path` (`spec.containers[0]...`).
 */
export function podSecurityViolations(pod: unknown, level: PodSecurityLevel, path = ''): PodSecurityViolation[] {
  const out = new Violations(level);
  if (level === 'privileged' || !isObject(pod)) return out.list;
  const prefix = path ? `${path}.` : '';
  const spec = objectAt(pod, 'spec') ?? {};
  const podContext = objectAt(spec, 'securityContext') ?? {};
  const context: PodContext = {
    securityContext: podContext,
    windows: objectAt(spec, 'os')?.name === 'windows',
    userNamespace: spec.hostUsers === false,
  };
  const at = (field: string) => `${prefix}spec.${field}`;

  for (const field of ['hostNetwork', 'hostPID', 'hostIPC']) {
    if (spec[field] === true) out.add('baseline', 'hostNamespaces', at(field), `${field} is not allowed`);
  }
  if (objectAt(podContext, 'windowsOptions')?.hostProcess === true) {
    out.add('baseline', 'hostProcess', at('securityContext.windowsOptions.hostProcess'), 'Windows host processes are not allowed');
  }
  checkSeLinux(objectAt(podContext, 'seLinuxOptions'), at('securityContext.seLinuxOptions'), out);
  const podSeccomp = objectAt(podContext, 'seccompProfile')?.type;
  if (podSeccomp === 'Unconfined') out.add('baseline', 'seccompProfile_baseline', at('securityContext.seccompProfile.type'), 'seccomp profile Unconfined is not allowed');
  if (objectAt(podContext, 'appArmorProfile')?.type === 'Unconfined') {
    out.add('baseline', 'appArmorProfile', at('securityContext.appArmorProfile.type'), 'AppArmor profile Unconfined is not allowed');
  }
  listAt(podContext, 'sysctls').forEach((sysctl, index) => {
    const name = isObject(sysctl) ? sysctl.name : undefined;
    if (!(SAFE_SYSCTLS as readonly unknown[]).includes(name)) {
      out.add('baseline', 'sysctls', at(`securityContext.sysctls[${index}].name`), `sysctl ${JSON.stringify(name)} is not in the safe set`);
    }
  });
  checkAppArmorAnnotations(objectAt(pod, 'metadata')?.annotations, `${prefix}metadata.annotations`, out);
  listAt(spec, 'volumes').forEach((volume, index) => checkVolume(volume, at(`volumes[${index}]`), out));

  if (podContext.runAsNonRoot === false) out.add('restricted', 'runAsNonRoot', at('securityContext.runAsNonRoot'), 'must not be false');
  if (podContext.runAsUser === 0) out.add('restricted', 'runAsUser', at('securityContext.runAsUser'), 'must not be 0 (root)');
  // Unconfined is already a baseline violation; any other type but these two is a restricted one.
  if (!context.windows && podSeccomp !== undefined && !['RuntimeDefault', 'Localhost', 'Unconfined'].includes(podSeccomp as string)) {
    out.add('restricted', 'seccompProfile_restricted', at('securityContext.seccompProfile.type'), `must be RuntimeDefault or Localhost, got ${JSON.stringify(podSeccomp)}`);
  }
  for (const list of CONTAINER_LISTS) {
    listAt(spec, list).forEach((container, index) => checkContainer(container, at(`${list}[${index}]`), context, false, out));
  }
  return out.list;
}

/** The parts of an injection that Pod Security looks at. */
export interface InjectedParts {
  readonly containers?: readonly unknown[];
  readonly initContainers?: readonly unknown[];
  readonly volumes?: readonly unknown[];
  readonly annotations?: unknown;
  readonly merges?: readonly unknown[];
}

/**
 * Every check of `level` that what an injection adds would fail, in any pod: its containers and init
 * containers must pass on their own, its volumes must be allowed, its merges and annotations must not
 * weaken the pod. Paths start at `path` (`injections[0]`).
 */
export function injectedPodSecurityViolations(parts: InjectedParts, level: PodSecurityLevel, path: string): PodSecurityViolation[] {
  const out = new Violations(level);
  if (level === 'privileged') return out.list;
  const unknownPod: PodContext = { securityContext: undefined, windows: false, userNamespace: false };
  for (const list of ['containers', 'initContainers'] as const) {
    listAt(parts, list).forEach((container, index) => checkContainer(container, `${path}.${list}[${index}]`, unknownPod, false, out));
  }
  listAt(parts, 'volumes').forEach((volume, index) => checkVolume(volume, `${path}.volumes[${index}]`, out));
  checkAppArmorAnnotations(parts.annotations, `${path}.annotations`, out);
  listAt(parts, 'merges').forEach((merge, index) => {
    if (isObject(merge)) checkContainer(merge.fields, `${path}.merges[${index}].fields`, unknownPod, true, out);
  });
  return out.list;
}
