// The four classic sidecar-injector scenarios, written the way a platform team would:
// Envoy in every pod, wait-for-it before Deployments that ask for it, an nginx sidecar on request,
// and probe defaults merged into existing containers.
// Run: cdk8s synth --app "npx ts-node main.ts" (or compile with tsc and run main.js).
import { App } from 'cdk8s';
import { k8s } from 'cdk8s-plus-27';
import { NativeSidecarMode, PodSecurityLevel, SidecarInjectorChart, TargetKind, Trigger } from 'cdk8s-sidecar-injector';

/** What Pod Security "restricted" asks of every container, so injected pods are admitted anywhere. */
function restricted(user: number): k8s.SecurityContext {
  return {
    runAsNonRoot: true,
    runAsUser: user,
    runAsGroup: user,
    allowPrivilegeEscalation: false,
    capabilities: { drop: ['ALL'] },
    seccompProfile: { type: 'RuntimeDefault' },
  };
}

const app = new App();
new SidecarInjectorChart(app, 'sidecar-injector', {
  namespace: 'sidecar-injector',
  // Every injection below must pass Pod Security "restricted", or synth fails.
  podSecurity: PodSecurityLevel.RESTRICTED,
  injections: [
    {
      // Every pod in a namespace labelled injection=enabled gets an Envoy proxy.
      name: 'envoy',
      trigger: Trigger.always(),
      containers: [
        {
          name: 'envoy',
          image: 'envoyproxy/envoy:v1.20.3',
          resources: {
            requests: { cpu: k8s.Quantity.fromString('100m'), memory: k8s.Quantity.fromString('128Mi') },
            limits: { memory: k8s.Quantity.fromString('256Mi') },
          },
          securityContext: restricted(101),
        },
      ],
      // In Job pods Envoy runs as a native sidecar, so the Job can still complete.
      nativeSidecars: NativeSidecarMode.JOBS,
    },
    {
      // Deployments annotated com.foreach/wait-for-it: "db:5432" wait for that address first.
      name: 'wait-for-it',
      trigger: Trigger.annotation('com.foreach/wait-for-it', { valuePattern: '.+:[0-9]+' }),
      targetKinds: [TargetKind.DEPLOYMENT],
      initContainers: [
        {
          name: 'wait-for-it',
          image: 'willwill/wait-for-it',
          args: ['{{annotation}}'],
          resources: { limits: { cpu: k8s.Quantity.fromString('10m'), memory: k8s.Quantity.fromString('16Mi') } },
          securityContext: restricted(65532),
        },
      ],
    },
    {
      // Pods annotated sidecar-injector-webhook.morven.me/inject: "true" get nginx with its config.
      name: 'nginx-sidecar',
      trigger: Trigger.annotation('sidecar-injector-webhook.morven.me/inject', { valuePattern: 'true' }),
      containers: [
        {
          name: 'sidecar-nginx',
          image: 'nginxinc/nginx-unprivileged:1.25',
          volumeMounts: [{ name: 'nginx-conf', mountPath: '/etc/nginx' }],
          resources: { requests: { cpu: k8s.Quantity.fromString('50m'), memory: k8s.Quantity.fromString('32Mi') } },
          securityContext: restricted(101),
        },
      ],
      volumes: [{ name: 'nginx-conf', configMap: { name: 'nginx-configmap' } }],
    },
    {
      // Pods labelled app=myApp get a readiness delay, where my-container already has a readiness probe.
      name: 'probe-defaults',
      trigger: Trigger.labelSelector({ matchLabels: { app: 'myApp' } }),
      merges: [{ containerNames: ['my-container'], fields: { readinessProbe: { initialDelaySeconds: 10 } } }],
    },
  ],
});
app.synth();
