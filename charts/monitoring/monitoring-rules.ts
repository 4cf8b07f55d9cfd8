// Every rule of one injector, from what it is made of: its webhook entries (as synthesized), its
// policies, whether it has a reconciler. Pure: the construct, the docs' alert table and the tests all
// call this one function.

import { stringify } from 'yaml';
import type { MonitoringSettings } from './monitoring-props';
import { reconcilerAlerts, webhookPodAlerts } from './injector-rules';
import { type MonitoredPolicies, policyAlerts } from './policy-rules';
import type { AlertContext, DescribedAlert, RuleGroup } from './rule-types';
import { POLICY_SLO_SUBJECT, policySloRecordingRules, sloAlerts, sloRecordingRules } from './slo-rules';
import { type WebhookEntry, webhookEntryAlerts, webhookTargetAlert } from './webhook-rules';

/** What an injector is made of, as far as its monitoring needs to know. */
export interface MonitoredInjector {
  /** The injector's namespace. */
  readonly namespace: string;
  /** The injector's name (the `name` prop). */
  readonly name: string;
  /** The entries of its MutatingWebhookConfiguration (webhook backend); undefined without a webhook. */
  readonly webhooks?: readonly WebhookEntry[];
  /** Its MutatingAdmissionPolicies (policy backend); undefined without. */
  readonly policies?: MonitoredPolicies;
  /** Whether it runs the reconciler. */
  readonly reconciler: boolean;
}

/** The rule groups of a rule file, and each alert with why its severity is what it is. */
export interface MonitoringRules {
  /** The rule groups, as the rule file and the PrometheusRule hold them. */
  readonly groups: readonly RuleGroup[];
  /** Each alert of the groups, with why its severity is what it is. */
  readonly alerts: readonly DescribedAlert[];
}

export function monitoringRules(injector: MonitoredInjector, settings: MonitoringSettings): MonitoringRules {
  const context: AlertContext = { injector: `${injector.namespace}/${injector.name}`, alertLabels: settings.alertLabels, runbookBaseUrl: settings.runbookBaseUrl };
  const webhooks = injector.webhooks ?? [];
  const alerts: DescribedAlert[] = [];
  // The burn-rate alerts follow the recording rules they read in one group: rules of a group are
  // evaluated in order, so they read this evaluation's ratios, not the last one's.
  // The policies count evaluations per policy from 1.34 (v1beta1, v1); 1.32 and 1.33 (v1alpha1) count none, so have no SLO.
  const policySlo = injector.policies !== undefined && injector.policies.names.length > 0 && injector.policies.apiVersion !== 'v1alpha1' ? injector.policies : undefined;
  const burnRates = webhooks.length > 0 ? sloAlerts(settings, context) : policySlo ? sloAlerts(settings, context, POLICY_SLO_SUBJECT) : [];
  if (webhooks.length > 0) {
    for (const entry of webhooks) alerts.push(...webhookEntryAlerts(entry, settings, context, injector.reconciler));
    alerts.push(webhookTargetAlert(webhooks, settings, context), ...burnRates);
  }
  if (injector.webhooks !== undefined) alerts.push(...webhookPodAlerts(settings, context));
  if (injector.policies && injector.policies.names.length > 0) alerts.push(...policyAlerts(injector.policies, settings, context));
  if (webhooks.length === 0) alerts.push(...burnRates);
  if (injector.reconciler) alerts.push(...reconcilerAlerts(settings, context));
  const prefix = `sidecar-injector.${injector.namespace}.${injector.name}`;
  const interval = settings.evaluationInterval === undefined ? {} : { interval: settings.evaluationInterval };
  const groups: RuleGroup[] = [];
  const recordings = webhooks.length > 0 ? sloRecordingRules(webhooks, settings) : policySlo ? policySloRecordingRules(policySlo, settings) : [];
  if (recordings.length > 0) groups.push({ name: `${prefix}.slo`, ...interval, rules: [...recordings, ...burnRates.map((alert) => alert.rule)] });
  const others = alerts.filter((alert) => !burnRates.includes(alert));
  if (others.length > 0) groups.push({ name: `${prefix}.alerts`, ...interval, rules: others.map((alert) => alert.rule) });
  return { groups, alerts };
}

/** A Prometheus rule file (`rule_files:`) holding `groups`. */
export function ruleFileText(groups: readonly RuleGroup[]): string {
  return stringify({ groups }, { lineWidth: 0 });
}
