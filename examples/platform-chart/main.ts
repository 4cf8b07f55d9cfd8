// A platform team's chart: the injector beside the team's own objects, in one chart. Deployments
// labelled logging.example.com/ship=true get a log shipper written with cdk8s-plus-27's typed
// k8s.Container; the webhook pods run on tainted infrastructure nodes; Argo CD applies the webhook
// configuration last.
// Run: cdk8s synth --app "npx ts-node main.ts" (or compile with tsc and run main.js).
import { App, Chart, ChartProps } from 'cdk8s';
import * as kplus from 'cdk8s-plus-27';
import { k8s } from 'cdk8s-plus-27';
import { Construct } from 'constructs';
import { SidecarInjector, TargetKind, Trigger } from 'cdk8s-sidecar-injector';

const restricted: k8s.SecurityContext = {
  runAsNonRoot: true,
  allowPrivilegeEscalation: false,
  readOnlyRootFilesystem: true,
  capabilities: { drop: ['ALL'] },
  seccompProfile: { type: 'RuntimeDefault' },
};

/** Tails the app's log files from a shared volume. */
const logShipper: k8s.Container = {
  name: 'log-shipper',
  image: 'fluent/fluent-bit:3.1.9',
  ports: [{ name: 'metrics', containerPort: 2020 }],
  resources: {
    requests: { cpu: k8s.Quantity.fromString('20m'), memory: k8s.Quantity.fromString('32Mi') },
    limits: { memory: k8s.Quantity.fromString('64Mi') },
  },
  readinessProbe: { httpGet: { path: '/api/v1/health', port: k8s.IntOrString.fromString('metrics') } },
  volumeMounts: [{ name: 'app-logs', mountPath: '/var/log/app', readOnly: true }],
  securityContext: restricted,
};

class PlatformChart extends Chart {
  readonly injector: SidecarInjector;

  constructor(scope: Construct, id: string, props: ChartProps = {}) {
    super(scope, id, props);

    this.injector = new SidecarInjector(this, 'injector', {
      namespace: 'platform',
      tolerations: [{ key: 'node-role.kubernetes.io/infra', operator: 'Exists', effect: 'NoSchedule' }],
      nodeSelector: { 'node-role.kubernetes.io/infra': 'true' },
      injections: [
        {
          name: 'log-shipper',
          trigger: Trigger.labelSelector({ matchLabels: { 'logging.example.com/ship': 'true' } }),
          targetKinds: [TargetKind.DEPLOYMENT],
          containers: [logShipper],
          volumes: [{ name: 'app-logs', emptyDir: {} }],
          // The app's own containers write their logs where the shipper reads them.
          volumeMounts: [{ name: 'app-logs', mountPath: '/var/log/app' }],
        },
      ],
    });
    // Registered only once everything else is applied (Argo CD sync waves), no child id needed.
    this.injector.webhookConfiguration.metadata.addAnnotation('argocd.argoproj.io/sync-wave', '1');

    // The team's own namespace and app, opted in to injection.
    new kplus.Namespace(this, 'shop-namespace', { metadata: { name: 'shop', labels: { injection: 'enabled' } } });
    new kplus.Deployment(this, 'shop', {
      metadata: { name: 'shop', namespace: 'shop', labels: { 'logging.example.com/ship': 'true' } },
      containers: [{ name: 'shop', image: 'ghcr.io/example/shop:1.4.0', portNumber: 8080, securityContext: { user: 10001 } }],
    });
  }
}

const app = new App();
new PlatformChart(app, 'platform');
app.synth();
