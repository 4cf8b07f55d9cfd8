// How SidecarInjector splits its injections between the webhook and the admission policies: the one
// function API both sides use, so each injection is applied by exactly one backend.
import type { ConfigIssue, Injection, ResolvedInjection, ResolvedInjectorConfig } from '../../webhook/config';
import { ADMISSION_POLICY_API_VERSIONS, AdmissionPolicyApiVersion, INJECTOR_BACKENDS, InjectorBackend } from './admission-policy-types';
import { policyLimitations } from './injection-policy';

/** Problems of the `backend` and `admissionPolicyApiVersion` props. */
export function backendSettingsIssues(props: { backend?: unknown; admissionPolicyApiVersion?: unknown }): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  if (props.backend !== undefined && !INJECTOR_BACKENDS.includes(props.backend as InjectorBackend)) {
    issues.push({ path: 'backend', message: `must be one of ${INJECTOR_BACKENDS.map((b) => `"${b}"`).join(', ')}, got ${JSON.stringify(props.backend)}` });
  }
  if (props.admissionPolicyApiVersion !== undefined && !ADMISSION_POLICY_API_VERSIONS.includes(props.admissionPolicyApiVersion as AdmissionPolicyApiVersion)) {
    issues.push({
      path: 'admissionPolicyApiVersion',
      message: `must be one of ${ADMISSION_POLICY_API_VERSIONS.map((v) => `"${v}"`).join(', ')}, got ${JSON.stringify(props.admissionPolicyApiVersion)}`,
    });
  }
  return issues;
}

/** Whether `injection` goes to the admission policies under `backend`: every one, unless `webhook`. */
export function appliedByPolicy(backend: InjectorBackend, _injection: ResolvedInjection): boolean {
  return backend !== 'webhook';
}

/**
 * With a policy backend, every injection CEL cannot express is an error naming `injections[N]` and
 * the reason. None is left for a valid config (policyLimitations), so `both-where-possible` makes no
 * webhook either: there is nothing it would carry.
 */
export function policyBackendIssues(backend: InjectorBackend, injections: readonly ResolvedInjection[], firstIndex: number): ConfigIssue[] {
  if (backend === 'webhook') return [];
  return injections.flatMap((injection, offset) =>
    policyLimitations(injection).map((reason) => ({
      path: `injections[${firstIndex + offset}]`,
      message: `injection "${injection.name}" cannot be a MutatingAdmissionPolicy: ${reason}`,
    })),
  );
}

/** The config the webhook loads under `backend`: only the injections no policy applies. */
export function webhookShareOf(backend: InjectorBackend, config: ResolvedInjectorConfig): ResolvedInjectorConfig {
  if (backend === 'webhook') return config;
  return { ...config, injections: config.injections.filter((injection) => !appliedByPolicy(backend, injection)) };
}

/** `injections` with their defaults filled in (targetKinds), as the policies need them. */
export function resolvedInjectionsOf(config: ResolvedInjectorConfig, injections: readonly Injection[]): ResolvedInjection[] {
  return injections.map((injection) => config.injections.find((candidate) => candidate.name === injection.name)!);
}
