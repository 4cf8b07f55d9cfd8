// The Envoy injection the override tests share (issue 39): what it configures and what it offers.
import type { ContainerOverride, Injection } from '../../webhook/config';

export const ENVOY_RESOURCES = { requests: { cpu: '100m', memory: '128Mi' }, limits: { cpu: '1', memory: '512Mi' } };

/**
 * The cpu request (up to 2, above the configured limit: the cpu limit is offered too, up to 4), the
 * memory request (64Mi to 512Mi) and the log level from a set, these two with namespace defaults.
 */
export const ALL_OFFERS: readonly ContainerOverride[] = [
  { annotation: 'envoy.example.com/cpu-request', container: 'envoy', resource: 'requests.cpu', max: '2' },
  { annotation: 'envoy.example.com/memory-request', container: 'envoy', resource: 'requests.memory', min: '64Mi', max: '512Mi', fromNamespace: true },
  { annotation: 'envoy.example.com/cpu-limit', container: 'envoy', resource: 'limits.cpu', max: '4' },
  { annotation: 'envoy.example.com/log-level', container: 'envoy', env: 'ENVOY_LOG_LEVEL', allowedValues: ['debug', 'info', 'warn'], fromNamespace: true },
];

/** Envoy with ENVOY_RESOURCES and two env vars (ENVOY_LOG_LEVEL=info, OTHER=x), offering `offers`. */
export function envoyWithOverrides(extra: Partial<Injection> = {}, offers: readonly ContainerOverride[] = ALL_OFFERS): Injection {
  return {
    name: 'envoy',
    trigger: { type: 'always' },
    containers: [{ name: 'envoy', image: 'envoyproxy/envoy:v1.31.0', resources: ENVOY_RESOURCES, env: [{ name: 'ENVOY_LOG_LEVEL', value: 'info' }, { name: 'OTHER', value: 'x' }] }],
    overrides: offers,
    ...extra,
  };
}
