// What an injection in audit mode says instead of changing a pod, in both backends' words: the
// webhook's admission warning (engine/prepared-config.ts) and the message of the policy backend's
// ValidatingAdmissionPolicy (charts/admission-policy/audit-policy.ts). From the config alone.

import type { ResolvedInjection } from './injector-config';

/** `audit: injection "envoy" would add containers envoy; volumes envoy-config; env SERVICE_NAME; ...`. */
export function auditMessage(injection: ResolvedInjection): string {
  const names = (list: readonly { name?: unknown }[] | undefined) => (list ?? []).map((item) => String(item.name));
  const parts = [
    ['containers', names(injection.containers)],
    ['init containers', names(injection.initContainers)],
    ['volumes', names(injection.volumes)],
    ['volume mounts', (injection.volumeMounts ?? []).map((mount) => String(mount.mountPath))],
    ['env', names(injection.env)],
    ['labels', Object.keys(injection.labels ?? {})],
    ['annotations', Object.keys(injection.annotations ?? {})],
  ]
    .filter(([, list]) => list.length > 0)
    .map(([what, list]) => `${what} ${(list as string[]).join(', ')}`);
  return `audit: injection "${injection.name}" would add ${parts.length > 0 ? parts.join('; ') : 'nothing'}; it is in audit mode, so nothing was added`;
}
