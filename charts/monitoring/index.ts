// Alerts, recording rules, an SLO and a Grafana dashboard of an injector (the `monitoring` prop).
export { InjectorMonitoring, scrapeAnnotations } from './injector-monitoring';
export type { MonitoringTarget } from './injector-monitoring';
export type { MonitoringProps, MonitoringSettings, PrometheusOperatorProps, SloProps } from './monitoring-props';
export type { MonitoredInjector, MonitoringRules } from './monitoring-rules';
export type { MonitoredPolicies } from './policy-rules';
export type { WebhookEntry } from './webhook-rules';
export type { DashboardPanel, DashboardQuery } from './dashboard';
export type { AlertRule, AlertSeverity, DescribedAlert, RecordingRule, RuleGroup } from './rule-types';
