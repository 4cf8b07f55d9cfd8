// The reference the Python, Java and Go apps must match byte for byte: the README's "Writing your own app"
// (chart `injector`) and a second chart with two revisions and their tags, the reconciler and monitoring.
// Kubernetes objects are maps with their keys in alphabetical order: the order a Go map reaches the library
// in (a Python dict and a Java LinkedHashMap keep the order written, a struct has its own). Every app takes its
// certificates from the one store INJECTOR_CERT_STORE names. With the argument `bad`, a third chart has an
// injection name with a space and a container injected twice, which synth refuses.
import { App, Duration } from 'cdk8s';
import { k8s } from 'cdk8s-plus-27';
import {
  FailurePolicy,
  InjectionProps,
  MissingAction,
  OutdatedAction,
  SidecarInjectorChart,
  TargetKind,
  Trigger,
  WebhookCertificates,
} from 'cdk8s-sidecar-injector';

const store = process.env.INJECTOR_CERT_STORE ?? '.certs';
const restricted = { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] }, runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } };

const app = new App();
const chart = new SidecarInjectorChart(app, 'injector', {
  namespace: 'platform-injector',
  failurePolicy: FailurePolicy.FAIL,
  certificates: WebhookCertificates.generated({ storeDirectory: `${store}/injector` }),
  injections: [
    {
      name: 'otel',
      trigger: Trigger.labelSelector({ matchLabels: { 'otel.example.com/enabled': 'true' } }),
      targetKinds: [TargetKind.DEPLOYMENT, TargetKind.STATEFUL_SET],
      env: [{ name: 'OTEL_SERVICE_NAME', value: '{{name}}' }],
      initContainers: [
        {
          image: 'otel/opentelemetry-collector:0.110.0',
          name: 'otel-agent',
          resources: { requests: { cpu: k8s.Quantity.fromString('50m'), memory: k8s.Quantity.fromString('64Mi') } },
          restartPolicy: 'Always',
          securityContext: restricted,
        },
      ],
    },
  ],
});
chart.injector.addInjection({ name: 'debug', trigger: Trigger.requested(), containers: [{ image: 'busybox:1.36', name: 'debug', securityContext: restricted }] });
chart.injector.webhookConfiguration.metadata.addAnnotation('argocd.argoproj.io/sync-wave', '1');

const envoy = (image: string): InjectionProps => ({ name: 'envoy', trigger: Trigger.always(), containers: [{ image, name: 'envoy', securityContext: restricted }] });
new SidecarInjectorChart(app, 'revisions', {
  namespace: 'injector-revisions',
  certificates: WebhookCertificates.generated({ storeDirectory: `${store}/revisions` }),
  revisions: [
    { name: 'r1', injections: [envoy('envoyproxy/envoy:v1.30.1')] },
    { name: 'r2', injections: [envoy('envoyproxy/envoy:v1.31.0')] },
  ],
  tags: [
    { name: 'stable', revision: 'r1', default: true },
    { name: 'canary', revision: 'r2' },
  ],
  reconciler: { missing: MissingAction.RESTART, outdated: OutdatedAction.IN_PLACE, intervalSeconds: 60 },
  monitoring: { alertAfter: Duration.minutes(10), slo: { objective: 0.995 }, alertLabels: { team: 'platform' } },
});

if (process.argv.slice(2).includes('bad')) {
  new SidecarInjectorChart(app, 'bad', {
    namespace: 'injector-bad',
    injections: [
      { name: 'my envoy', trigger: Trigger.always(), containers: [{ image: 'envoyproxy/envoy:v1.31.0', name: 'envoy' }] },
      { name: 'envoy-copy', trigger: Trigger.always(), containers: [{ image: 'envoyproxy/envoy:v1.31.0', name: 'envoy' }] },
    ],
  });
}
app.synth();
