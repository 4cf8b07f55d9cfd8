// Two revisions of one Envoy injection (r1 on v1.20.3, r2 on v1.31.0) with the default tag on r1 and
// `canary` on r2: the config of issue 37's must-show, shared by the config, engine, server, chart and CLI tests.
import type { SidecarInjectorProps } from '../../charts/engine';
import type { Injection, InjectorConfig } from '../../webhook/config';

export const ENVOY_V1 = 'envoyproxy/envoy:v1.20.3';
export const ENVOY_V2 = 'envoyproxy/envoy:v1.31.0';

export function envoyInjection(image: string): Injection {
  return {
    name: 'envoy',
    trigger: { type: 'always' },
    containers: [
      {
        name: 'envoy',
        image,
        resources: { requests: { cpu: '50m', memory: '64Mi' } },
        securityContext: { runAsNonRoot: true, allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] }, seccompProfile: { type: 'RuntimeDefault' } },
      },
    ],
  };
}

/** r1 and r2, the default tag (`stable`) on `defaultOn`, `canary` on r2. */
export function revisionedConfig(defaultOn: 'r1' | 'r2' = 'r1'): InjectorConfig {
  return {
    injections: [],
    revisions: [
      { name: 'r1', injections: [envoyInjection(ENVOY_V1)] },
      { name: 'r2', injections: [envoyInjection(ENVOY_V2)] },
    ],
    tags: [
      { name: 'stable', revision: defaultOn, default: true },
      { name: 'canary', revision: 'r2' },
    ],
  };
}

/** revisionedConfig as construct props (the same revisions and tags), with `extra` props. */
export function revisionedProps(defaultOn: 'r1' | 'r2' = 'r1', extra: Partial<SidecarInjectorProps> = {}): SidecarInjectorProps {
  const { revisions, tags } = revisionedConfig(defaultOn);
  return { revisions: revisions!.map((revision) => ({ name: revision.name, injections: [...revision.injections] })), tags: [...tags!], ...extra };
}
