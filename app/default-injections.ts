import type { Injection } from '../charts';

/**
 * The seed examples the built-in app demonstrates: one of each trigger, a workload injection, a native
 * Kubernetes volume, and a merge into the user's own containers.
 */
export const DEFAULT_INJECTIONS: Injection[] = [
  {
    name: 'envoy',
    trigger: { type: 'always' },
    containers: [{ name: 'envoy', image: 'envoyproxy/envoy:v1.20.3' }],
  },
  {
    name: 'wait-for-it',
    trigger: { type: 'annotation', key: 'com.foreach/wait-for-it' },
    targetKinds: ['Deployment'],
    initContainers: [{ name: 'wait-for-it', image: 'willwill/wait-for-it', args: ['{{annotation}}'] }],
  },
  {
    name: 'nginx-sidecar',
    trigger: { type: 'annotation', key: 'sidecar-injector-webhook.morven.me/inject', valuePattern: 'true' },
    containers: [
      {
        name: 'sidecar-nginx',
        image: 'nginx:1.25',
        volumeMounts: [{ name: 'nginx-conf', mountPath: '/etc/nginx' }],
      },
    ],
    volumes: [{ name: 'nginx-conf', configMap: { name: 'nginx-configmap' } }],
  },
  {
    name: 'probe-defaults',
    trigger: { type: 'labelSelector', matchLabels: { app: 'myApp' } },
    merges: [{ containerNames: ['my-container'], fields: { readinessProbe: { initialDelaySeconds: 10 } } }],
  },
];
