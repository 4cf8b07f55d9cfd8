// Debian's Prometheus and Alertmanager in the node suite's network namespace, as a platform team runs
// them without the Operator: the apiserver scraped with a client certificate, the pods kept by their
// `prometheus.io/*` annotations with the relabelling of the `kubernetes-pods` job of Prometheus' example
// configuration, the synthesized rule file loaded, alerts sent to Alertmanager. Both listen on the
// node's address, which the host reaches through the veth, as it reaches the apiserver.
//
// A stand-in: Debian builds Prometheus without Kubernetes service discovery (`kubernetes_sd_configs` is
// "not found in type config.ScrapeConfig"), so PodDiscovery lists the pods through the apiserver every
// 2 s and writes them for `file_sd_configs` with the labels the pod role gives (`__meta_kubernetes_*`: one
// target per container port). The relabelling that reads the synthesized annotations is the real one.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { stringify } from 'yaml';
import { type ManagedProcess, startProcess, stopProcesses } from '../../e2e/support/control-plane';
import { NODE_IP, type NodeCluster } from './node-cluster';

const NETNS = 'sidecar-injector-e2e';
const enter = (file: string, args: readonly string[]): [string, readonly string[]] => ['nsenter', [`--net=/var/run/netns/${NETNS}`, '--', file, ...args]];

/** Where Debian installs them; PROMETHEUS and ALERTMANAGER name others. */
export function findMonitoringBinaries(env: NodeJS.ProcessEnv = process.env): { prometheus: string; alertmanager: string } | string {
  const prometheus = env.PROMETHEUS ?? '/usr/bin/prometheus';
  const alertmanager = env.ALERTMANAGER ?? '/usr/bin/prometheus-alertmanager';
  const missing = [prometheus, alertmanager].filter((file) => !fs.existsSync(file));
  return missing.length > 0 ? `skipped: ${missing.join(', ')} not found (apt-get install prometheus prometheus-alertmanager, or set PROMETHEUS and ALERTMANAGER)` : { prometheus, alertmanager };
}

/** The `kubernetes-pods` job of Prometheus' example configuration (documentation/examples/prometheus-kubernetes.yml), its pods from `targetsFile`. */
export function kubernetesPodsJob(targetsFile: string, scrapeInterval: string): Record<string, unknown> {
  return {
    job_name: 'kubernetes-pods',
    scrape_interval: scrapeInterval,
    file_sd_configs: [{ files: [targetsFile], refresh_interval: '5s' }],
    relabel_configs: [
      { source_labels: ['__meta_kubernetes_pod_annotation_prometheus_io_scrape'], action: 'keep', regex: 'true' },
      { source_labels: ['__meta_kubernetes_pod_phase'], action: 'drop', regex: 'Pending|Succeeded|Failed|Completed' },
      { source_labels: ['__meta_kubernetes_pod_annotation_prometheus_io_path'], action: 'replace', target_label: '__metrics_path__', regex: '(.+)' },
      { source_labels: ['__address__', '__meta_kubernetes_pod_annotation_prometheus_io_port'], action: 'replace', regex: '([^:]+)(?::\\d+)?;(\\d+)', replacement: '$1:$2', target_label: '__address__' },
      { action: 'labelmap', regex: '__meta_kubernetes_pod_label_(.+)' },
      { source_labels: ['__meta_kubernetes_namespace'], action: 'replace', target_label: 'namespace' },
      { source_labels: ['__meta_kubernetes_pod_name'], action: 'replace', target_label: 'pod' },
    ],
  };
}

/** A label name as Prometheus' Kubernetes discovery writes a pod's label or annotation key: every other character an underscore. */
const sanitized = (key: string) => key.replace(/[^a-zA-Z0-9_]/g, '_');

/** The targets Kubernetes discovery's pod role makes of one pod: one per container port, with its meta labels. */
export function podTargets(pod: any): { targets: string[]; labels: Record<string, string> }[] {
  if (!pod.status?.podIP) return [];
  const common: Record<string, string> = {
    __meta_kubernetes_namespace: pod.metadata.namespace,
    __meta_kubernetes_pod_name: pod.metadata.name,
    __meta_kubernetes_pod_ip: pod.status.podIP,
    __meta_kubernetes_pod_phase: pod.status.phase ?? '',
    __meta_kubernetes_pod_ready: String((pod.status.conditions ?? []).some((condition: any) => condition.type === 'Ready' && condition.status === 'True')),
  };
  for (const [key, value] of Object.entries(pod.metadata.labels ?? {})) common[`__meta_kubernetes_pod_label_${sanitized(key)}`] = String(value);
  for (const [key, value] of Object.entries(pod.metadata.annotations ?? {})) common[`__meta_kubernetes_pod_annotation_${sanitized(key)}`] = String(value);
  return pod.spec.containers.flatMap((container: any) =>
    (container.ports ?? []).map((port: any) => ({
      targets: [`${pod.status.podIP}:${port.containerPort}`],
      labels: { ...common, __meta_kubernetes_pod_container_name: container.name, __meta_kubernetes_pod_container_port_name: port.name ?? '', __meta_kubernetes_pod_container_port_number: String(port.containerPort) },
    })),
  );
}

/** Writes every pod of the cluster as targets every 2 s (atomically: Prometheus watches the file). */
class PodDiscovery {
  private timer?: NodeJS.Timeout;
  private stopped = false;

  constructor(
    private readonly cluster: NodeCluster,
    readonly file: string,
  ) {}

  async refresh(): Promise<void> {
    const pods = (await this.cluster.plane.ok('GET', '/api/v1/pods')).items;
    const next = `${this.file}.next`;
    fs.writeFileSync(next, JSON.stringify(pods.flatMap(podTargets)));
    fs.renameSync(next, this.file);
  }

  start(): void {
    const loop = () => {
      this.timer = setTimeout(() => {
        this.refresh().catch(() => undefined).finally(() => {
          if (!this.stopped) loop();
        });
      }, 2_000);
    };
    loop();
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }
}

export interface PrometheusAlert {
  readonly labels: Record<string, string>;
  readonly annotations: Record<string, string>;
  readonly state: 'pending' | 'firing';
  readonly activeAt: string;
}

export class MonitoringStack {
  private constructor(
    private readonly processes: ManagedProcess[],
    private readonly rulesDir: string,
    readonly dir: string,
    private readonly discovery: PodDiscovery,
  ) {}

  static readonly prometheusUrl = `http://${NODE_IP}:9090`;
  static readonly alertmanagerUrl = `http://${NODE_IP}:9093`;

  /** Starts both, scraping every `scrapeInterval`, and waits until each answers its readiness endpoint. */
  static async start(cluster: NodeCluster, binaries: { prometheus: string; alertmanager: string }, dir: string, scrapeInterval = '5s'): Promise<MonitoringStack> {
    fs.mkdirSync(path.join(dir, 'rules'), { recursive: true });
    const write = (name: string, text: string) => {
      const file = path.join(dir, name);
      fs.writeFileSync(file, text, { mode: 0o600 });
      return file;
    };
    const pki = cluster.plane.pki;
    const tls = { ca_file: write('ca.crt', pki.caCertificate), cert_file: write('admin.crt', pki.admin.certificate), key_file: write('admin.key', pki.admin.privateKey) };
    const config = {
      global: { scrape_interval: scrapeInterval, evaluation_interval: scrapeInterval },
      rule_files: [path.join(dir, 'rules', '*.yaml')],
      alerting: { alertmanagers: [{ static_configs: [{ targets: [`${NODE_IP}:9093`] }] }] },
      scrape_configs: [
        { job_name: 'apiserver', scheme: 'https', tls_config: tls, static_configs: [{ targets: [`${NODE_IP}:6443`] }] },
        kubernetesPodsJob(path.join(dir, 'pods.json'), scrapeInterval),
      ],
    };
    const discovery = new PodDiscovery(cluster, path.join(dir, 'pods.json'));
    await discovery.refresh();
    discovery.start();
    const alertmanagerConfig = { route: { receiver: 'recorder', group_wait: '1s', group_interval: '1s', repeat_interval: '1h' }, receivers: [{ name: 'recorder' }] };
    const processes = [
      startProcess('alertmanager', binaries.alertmanager, [
        `--config.file=${write('alertmanager.yml', stringify(alertmanagerConfig))}`,
        `--storage.path=${path.join(dir, 'alertmanager')}`,
        `--web.listen-address=${NODE_IP}:9093`,
        '--cluster.listen-address=',
      ], { enter, logFile: path.join(dir, 'alertmanager.log') }),
      startProcess('prometheus', binaries.prometheus, [
        `--config.file=${write('prometheus.yml', stringify(config))}`,
        `--storage.tsdb.path=${path.join(dir, 'data')}`,
        `--web.listen-address=${NODE_IP}:9090`,
        '--web.enable-lifecycle',
      ], { enter, logFile: path.join(dir, 'prometheus.log') }),
    ];
    const stack = new MonitoringStack(processes, path.join(dir, 'rules'), dir, discovery);
    for (const url of [`${MonitoringStack.prometheusUrl}/-/ready`, `${MonitoringStack.alertmanagerUrl}/-/ready`]) {
      await cluster.until(`${url} answers`, async () => (await fetch(url)).ok, 60_000);
    }
    return stack;
  }

  /** Replaces the rule files with `ruleFile` (the synthesized ConfigMap's text) and has Prometheus reload them. */
  async loadRules(name: string, ruleFile: string): Promise<void> {
    for (const file of fs.readdirSync(this.rulesDir)) fs.rmSync(path.join(this.rulesDir, file));
    fs.writeFileSync(path.join(this.rulesDir, name), ruleFile);
    const response = await fetch(`${MonitoringStack.prometheusUrl}/-/reload`, { method: 'POST' });
    if (!response.ok) throw new Error(`Prometheus refused its reload: ${response.status} ${await response.text()}`);
  }

  /** An instant query's result. */
  async query(expr: string): Promise<{ metric: Record<string, string>; value: [number, string] }[]> {
    const response = await fetch(`${MonitoringStack.prometheusUrl}/api/v1/query?query=${encodeURIComponent(expr)}`);
    const body = (await response.json()) as { status: string; error?: string; data: { result: { metric: Record<string, string>; value: [number, string] }[] } };
    if (body.status !== 'success') throw new Error(`query ${expr}: ${body.error}`);
    return body.data.result;
  }

  /** The rule groups as Prometheus loaded them, with each rule's health. */
  async ruleGroups(): Promise<{ name: string; rules: { name: string; health: string; lastError?: string }[] }[]> {
    const body = (await (await fetch(`${MonitoringStack.prometheusUrl}/api/v1/rules`)).json()) as { data: { groups: { name: string; rules: { name: string; health: string; lastError?: string }[] }[] } };
    return body.data.groups;
  }

  /** The alerts pending or firing in Prometheus named `alertname`. */
  async alerts(alertname: string): Promise<PrometheusAlert[]> {
    const body = (await (await fetch(`${MonitoringStack.prometheusUrl}/api/v1/alerts`)).json()) as { data: { alerts: PrometheusAlert[] } };
    return body.data.alerts.filter((alert) => alert.labels.alertname === alertname);
  }

  /** The alerts Alertmanager holds as active, named `alertname`. */
  async received(alertname: string): Promise<{ labels: Record<string, string>; annotations: Record<string, string>; status: { state: string } }[]> {
    const response = await fetch(`${MonitoringStack.alertmanagerUrl}/api/v2/alerts?filter=${encodeURIComponent(`alertname="${alertname}"`)}`);
    return (await response.json()) as { labels: Record<string, string>; annotations: Record<string, string>; status: { state: string } }[];
  }

  /** Prometheus' and Alertmanager's last log lines, for a failure message. */
  logs(): string {
    return this.processes.map(({ name, logFile }) => `--- ${name}\n${fs.existsSync(logFile) ? fs.readFileSync(logFile, 'utf8').split('\n').slice(-20).join('\n') : ''}`).join('\n');
  }

  async stop(): Promise<void> {
    this.discovery.stop();
    await stopProcesses(this.processes, 10_000);
  }
}
