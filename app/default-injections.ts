import type { ContainerSpec, Injection } from '../charts/engine';

/**
 * What Pod Security "restricted" asks of every container, set on the container itself so it holds in
 * any pod: no privilege escalation, no capabilities, a non-root user, the runtime's seccomp profile.
 */
function restrictedSecurityContext(user: number) {
  return {
    runAsNonRoot: true,
    runAsUser: user,
    runAsGroup: user,
    allowPrivilegeEscalation: false,
    capabilities: { drop: ['ALL'] },
    seccompProfile: { type: 'RuntimeDefault' },
  };
}

/** Seed 000's Envoy, as the default app injects it: with resources and a restricted securityContext. */
const ENVOY: ContainerSpec = {
  name: 'envoy',
  image: 'envoyproxy/envoy:v1.20.3',
  // In a Guaranteed pod the limits become these requests (qos: 'preserve-guaranteed').
  resources: { requests: { cpu: '100m', memory: '128Mi' }, limits: { memory: '256Mi' } },
  // The image's own `envoy` user; its entrypoint runs Envoy directly when started as non-root.
  securityContext: restrictedSecurityContext(101),
};

/**
 * The seed examples the built-in app demonstrates: one of each trigger, a workload injection, a native
 * Kubernetes volume, and a merge into the user's own containers. Every injected container carries
 * resources and passes Pod Security "restricted" (each injection requires it, so a change that breaks
 * that fails synth), so pods in namespaces that enforce it are still admitted, and a Guaranteed pod
 * stays Guaranteed.
 */
export const DEFAULT_INJECTIONS: Injection[] = [
  {
    name: 'envoy',
    trigger: { type: 'always' },
    containers: [ENVOY],
    qos: 'preserve-guaranteed',
    // A regular container would keep a Job's pod running forever; elsewhere Envoy stays a regular container.
    nativeSidecars: 'jobs',
    podSecurity: 'restricted',
  },
  {
    name: 'wait-for-it',
    trigger: { type: 'annotation', key: 'com.foreach/wait-for-it' },
    targetKinds: ['Deployment'],
    initContainers: [
      {
        name: 'wait-for-it',
        image: 'willwill/wait-for-it',
        // The image has no tag but latest, and an untagged image is pulled at every pod start unless
        // told otherwise (a node without a route to Docker Hub leaves the pod in Init:ErrImagePull).
        imagePullPolicy: 'IfNotPresent',
        args: ['{{annotation}}'],
        resources: { requests: { cpu: '10m', memory: '16Mi' }, limits: { cpu: '10m', memory: '16Mi' } },
        securityContext: restrictedSecurityContext(65532),
      },
    ],
    podSecurity: 'restricted',
  },
  {
    name: 'nginx-sidecar',
    trigger: { type: 'annotation', key: 'sidecar-injector-webhook.morven.me/inject', valuePattern: 'true' },
    containers: [
      {
        name: 'sidecar-nginx',
        // The unprivileged build runs as uid 101; nginx.conf from nginx-configmap must listen on a port
        // above 1023 and keep its pid file in /tmp.
        image: 'nginxinc/nginx-unprivileged:1.25',
        volumeMounts: [{ name: 'nginx-conf', mountPath: '/etc/nginx' }],
        resources: { requests: { cpu: '50m', memory: '32Mi' }, limits: { memory: '64Mi' } },
        securityContext: restrictedSecurityContext(101),
      },
    ],
    volumes: [{ name: 'nginx-conf', configMap: { name: 'nginx-configmap' } }],
    qos: 'preserve-guaranteed',
    nativeSidecars: 'jobs',
    podSecurity: 'restricted',
  },
  {
    name: 'probe-defaults',
    trigger: { type: 'labelSelector', matchLabels: { app: 'myApp' } },
    merges: [{ containerNames: ['my-container'], fields: { readinessProbe: { initialDelaySeconds: 10 } } }],
    podSecurity: 'restricted',
  },
];
