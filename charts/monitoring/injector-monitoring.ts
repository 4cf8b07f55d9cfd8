// The monitoring objects of one injector (the `monitoring` prop): a ConfigMap holding the Prometheus
// rule file, a ConfigMap holding the Grafana dashboard for Grafana's dashboard sidecar, and, only when
// asked, the Prometheus Operator's PrometheusRule and PodMonitor (CRDs a stock cluster lacks). The
// rules and the dashboard are made at synth, from the webhook entries and policies as synthesized.

import { ApiObject, Lazy } from 'cdk8s';
import { k8s } from 'cdk8s-plus-27';
import { Construct } from 'constructs';
import { type DashboardPanel, dashboardJson, dashboardPanels } from './dashboard';
import { type MonitoredInjector, type MonitoringRules, monitoringRules, ruleFileText } from './monitoring-rules';
import { type MonitoringProps, type MonitoringSettings, monitoringSettings } from './monitoring-props';

/** What the SidecarInjector tells its monitoring. */
export interface MonitoringTarget {
  /** The injector's name: the objects are `<name>-prometheus-rules`, `<name>-grafana-dashboard`, `<name>`. */
  readonly name: string;
  /** The injector's namespace, where the objects go. */
  readonly namespace: string;
  /** Labels for its objects. */
  readonly labels: Record<string, string>;
  /** The apiserver's timeout for a webhook call, which bounds the SLO's latency. */
  readonly timeoutSeconds: number;
  /** Called at synth: the webhook entries, policies and reconciler as synthesized. */
  readonly injector: () => MonitoredInjector;
  /** The `sidecar-injector.io/deployment` values of the pods to scrape: the webhook's, the reconciler's. */
  readonly scrapedDeployments: readonly string[];
}

/** The pod annotations a plain Prometheus's `kubernetes-pods` job scrapes by. */
export function scrapeAnnotations(port: number): Record<string, string> {
  return { 'prometheus.io/scrape': 'true', 'prometheus.io/port': String(port), 'prometheus.io/path': '/metrics' };
}

/** The rule file, the dashboard and the Operator's objects of one injector. */
export class InjectorMonitoring extends Construct {
  /** The props with their defaults filled in. */
  readonly settings: MonitoringSettings;
  /** The key of the rule file in `ruleConfigMap`: `<namespace>-<name>.rules.yaml`. */
  readonly ruleFileName: string;
  /** The ConfigMap holding the Prometheus rule file, to mount into Prometheus or copy. */
  readonly ruleConfigMap: k8s.KubeConfigMap;
  /** The key of the dashboard in `dashboardConfigMap`: `<namespace>-<name>.json`. */
  readonly dashboardFileName: string;
  /** The ConfigMap holding the Grafana dashboard, labelled for Grafana's dashboard sidecar (`dashboardLabels`). */
  readonly dashboardConfigMap: k8s.KubeConfigMap;
  /** The Prometheus Operator's PrometheusRule, when `prometheusOperator` is given. */
  readonly prometheusRule?: ApiObject;
  /** The Prometheus Operator's PodMonitor of the webhook and reconciler pods, when `prometheusOperator` is
   * given and there are pods (not with the policy backend and no reconciler). */
  readonly podMonitor?: ApiObject;

  constructor(scope: Construct, id: string, props: MonitoringProps, private readonly target: MonitoringTarget) {
    super(scope, id);
    this.settings = monitoringSettings(props, target);
    const metadata = (name: string, extraLabels: Record<string, string> = {}) => ({ name, namespace: target.namespace, labels: { ...target.labels, ...extraLabels } });
    this.ruleFileName = `${target.namespace}-${target.name}.rules.yaml`;
    this.ruleConfigMap = new k8s.KubeConfigMap(this, 'Rules', {
      metadata: metadata(`${target.name}-prometheus-rules`),
      data: { [this.ruleFileName]: Lazy.any({ produce: () => ruleFileText(this.rules().groups) }) as unknown as string },
    });
    this.dashboardFileName = `${target.namespace}-${target.name}.json`;
    this.dashboardConfigMap = new k8s.KubeConfigMap(this, 'Dashboard', {
      metadata: metadata(`${target.name}-grafana-dashboard`, this.settings.dashboardLabels),
      data: { [this.dashboardFileName]: Lazy.any({ produce: () => JSON.stringify(this.dashboard(), null, 2) + '\n' }) as unknown as string },
    });
    if (props.prometheusOperator === undefined) return;
    const operatorLabels = props.prometheusOperator.labels ?? {};
    this.prometheusRule = new ApiObject(this, 'PrometheusRule', {
      apiVersion: 'monitoring.coreos.com/v1',
      kind: 'PrometheusRule',
      metadata: metadata(target.name, operatorLabels),
      spec: Lazy.any({ produce: () => ({ groups: this.rules().groups }) }),
    });
    if (target.scrapedDeployments.length === 0) return; // the policy backend alone runs no pod
    this.podMonitor = new ApiObject(this, 'PodMonitor', {
      apiVersion: 'monitoring.coreos.com/v1',
      kind: 'PodMonitor',
      metadata: metadata(target.name, operatorLabels),
      spec: {
        selector: { matchExpressions: [{ key: 'sidecar-injector.io/deployment', operator: 'In', values: [...target.scrapedDeployments] }] },
        podMetricsEndpoints: [{ port: 'ops', path: '/metrics' }],
      },
    });
  }

  /** The rules, made at synth from the injector as synthesized. */
  rules(): MonitoringRules {
    return monitoringRules(this.target.injector(), this.settings);
  }

  /** The dashboard's panels and their queries, made at synth. */
  panels(): DashboardPanel[] {
    return dashboardPanels(this.target.injector(), this.settings);
  }

  /** The dashboard's JSON model, made at synth. */
  dashboard(): Record<string, unknown> {
    return dashboardJson(this.target.injector(), this.settings);
  }
}
