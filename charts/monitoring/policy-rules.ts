// Alerts of the policy backend, from the apiserver's own series. From 1.34 (admissionregistration
// v1beta1 and v1) it counts each MutatingAdmissionPolicy's evaluations by error type; 1.32 and 1.33
// (v1alpha1) count nothing per policy, only the admission plugin's refusals, which failurePolicy Fail
// makes of a failing policy. Under Ignore on 1.32 and 1.33 a failing policy leaves no series at all:
// the reconciler's SidecarInjectorPodsStale is then what tells.

import type { AdmissionPolicyApiVersion } from '../admission-policy/admission-policy-types';
import { APISERVER_METRICS } from './apiserver-metrics';
import type { MonitoringSettings } from './monitoring-props';
import { type AlertContext, type DescribedAlert, alternation, counterIncreased, describedAlert, selector } from './rule-types';
import { failureSeverity, onEventShape, refusalAlerts } from './webhook-rules';

/** The policies of the injector, as the apiserver names them in its series. */
export interface MonitoredPolicies {
  /** The MutatingAdmissionPolicies' names: the `policy` label of the apiserver's series. */
  readonly names: readonly string[];
  /** Their failurePolicy: what a failing mutation does to the object. */
  readonly failurePolicy: 'Ignore' | 'Fail';
  /** Their API version, which tells the apiserver's release (v1alpha1: 1.32 and 1.33, which count nothing per policy). */
  readonly apiVersion: AdmissionPolicyApiVersion;
}

export function policyAlerts(policies: MonitoredPolicies, settings: MonitoringSettings, context: AlertContext): DescribedAlert[] {
  const { severity, why } = failureSeverity(policies.failurePolicy);
  const effect = policies.failurePolicy === 'Fail' ? 'refused those objects' : 'admitted those objects without the injection';
  const severityReason = why.replace('a failed call', 'a failing mutation');
  if (policies.apiVersion !== 'v1alpha1') {
    const checks = `${APISERVER_METRICS.mutatingPolicyChecks.name}${selector(settings.apiServerSelector, `policy=~"${alternation(policies.names)}"`, 'error_type!="no_error"')}`;
    const by = 'policy, policy_binding, error_type';
    const summary = 'A MutatingAdmissionPolicy of the injector fails to evaluate.';
    const description = (window: string) =>
      `MutatingAdmissionPolicy {{ $labels.policy }} (binding {{ $labels.policy_binding }}) failed {{ $value | humanize }} times in the last ${window} ` +
      `with {{ $labels.error_type }}; under failurePolicy ${policies.failurePolicy} the apiserver ${effect}.`;
    if (policies.failurePolicy === 'Fail') return refusalAlerts({ alert: 'SidecarInjectorPolicyErrors', series: checks, by, severityReason, summary, description }, settings, context);
    return [
      describedAlert(context, {
        alert: 'SidecarInjectorPolicyErrors',
        expr: counterIncreased(checks, by, settings.rateWindow),
        keepFiringFor: settings.keepFiringFor,
        severity,
        severityReason,
        shapeReason: onEventShape(settings),
        summary,
        description: description(settings.rateWindow),
      }),
    ];
  }
  if (policies.failurePolicy !== 'Fail') return [];
  return refusalAlerts(
    {
      alert: 'SidecarInjectorPolicyRefusingAdmissions',
      series: `${APISERVER_METRICS.controllerAdmissionDuration.name}_count${selector(settings.apiServerSelector, 'name="MutatingAdmissionPolicy"', 'type="admit"', 'rejected="true"')}`,
      by: 'operation',
      severityReason,
      summary: 'MutatingAdmissionPolicies refuse objects (Kubernetes 1.32 and 1.33 name no policy).',
      description: (window) =>
        `The apiserver's MutatingAdmissionPolicy plugin refused {{ $value | humanize }} {{ $labels.operation }} requests in the last ${window}: ` +
        'a policy failed under failurePolicy Fail. This count covers every MutatingAdmissionPolicy in the cluster, the injector\'s among them.',
    },
    settings,
    context,
  );
}
