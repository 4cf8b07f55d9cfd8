// The kube-apiserver's series the rules and the dashboard read, as the Kubernetes source defines them
// (k8s.io/apiserver pkg/admission/metrics/metrics.go and pkg/admission/plugin/policy/mutating/metrics/
// metrics.go, the same in 1.32 to 1.36 where they exist). test/e2e/monitoring-metrics.e2e.test.ts checks
// each against a real apiserver's /metrics; the unit tests check that the rules name no other.

/** The apiserver's series, by the Kubernetes minor version that first exports them. */
export const APISERVER_METRICS = {
  /** Calls to each admission webhook, by name, type (admit), operation and rejected; buckets below. */
  webhookAdmissionDuration: { name: 'apiserver_admission_webhook_admission_duration_seconds', since: 32, histogram: true },
  /** Calls by name, type, operation, HTTP code and rejected. */
  webhookRequests: { name: 'apiserver_admission_webhook_request_total', since: 32, histogram: false },
  /** Refusals by name, type, operation, error_type (calling_webhook_error, apiserver_internal_error, no_error) and rejection_code. */
  webhookRejections: { name: 'apiserver_admission_webhook_rejection_count', since: 32, histogram: false },
  /** Failed calls to a webhook with failurePolicy Ignore: the object admitted without it. */
  webhookFailOpen: { name: 'apiserver_admission_webhook_fail_open_count', since: 32, histogram: false },
  /** Each admission plugin's time, by name (MutatingAdmissionPolicy), type, operation and rejected. */
  controllerAdmissionDuration: { name: 'apiserver_admission_controller_admission_duration_seconds', since: 32, histogram: true },
  /** Each MutatingAdmissionPolicy mutation evaluated, by policy, policy_binding and error_type
   * (no_error, compile_error, invalid_error, out_of_budget). Not in 1.32 and 1.33. */
  mutatingPolicyChecks: { name: 'apiserver_mutating_admission_policy_check_total', since: 34, histogram: false },
  /** The time of each MutatingAdmissionPolicy mutation, by the same labels. Not in 1.32 and 1.33. */
  mutatingPolicyCheckDuration: { name: 'apiserver_mutating_admission_policy_check_duration_seconds', since: 34, histogram: true },
} as const;

/** The bounds of `apiserver_admission_webhook_admission_duration_seconds`, in seconds. */
export const APISERVER_WEBHOOK_LATENCY_BOUNDS: readonly number[] = [0.005, 0.025, 0.1, 0.5, 1, 2.5, 10, 25];

/** The series names an apiserver of `minor` exports among ours (a histogram's as _bucket, _sum, _count). */
export function apiserverSeriesNames(minor = Number.POSITIVE_INFINITY): string[] {
  return Object.values(APISERVER_METRICS)
    .filter((metric) => metric.since <= minor)
    .flatMap((metric) => (metric.histogram ? [`${metric.name}_bucket`, `${metric.name}_sum`, `${metric.name}_count`] : [metric.name]));
}
