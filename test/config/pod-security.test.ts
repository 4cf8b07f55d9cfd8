// Pod Security Standards as the Pod Security admission controller checks them: the checker on whole
// pods, synth warning about (or, with a required level, failing on) injections that would break
// "restricted", and the default app's injected pods staying "restricted".

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { DEFAULT_INJECTIONS } from '../../app/default-injections';
import {
  Injection,
  POD_SECURITY_WARNING,
  PodSecurityLevel,
  SidecarInjectorPropsError,
  podSecurityViolations,
  resolveInjectorConfig,
} from '../../charts/engine';
import { evaluate } from '../../webhook/engine';
import { applyResponse, loadReview, names, podOf, reviewNames } from '../support/recorded-reviews';
import { buildChart, synthesize } from '../support/synth-helpers';

type Json = Record<string, any>;

const RESTRICTED_CONTAINER_CONTEXT = {
  runAsNonRoot: true,
  allowPrivilegeEscalation: false,
  capabilities: { drop: ['ALL'] },
  seccompProfile: { type: 'RuntimeDefault' },
};

function pod(spec: Json, metadata: Json = {}): Json {
  return { metadata, spec: { containers: [{ name: 'app', image: 'busybox:1.36', securityContext: RESTRICTED_CONTAINER_CONTEXT }], ...spec } };
}

function checks(subject: Json, level: PodSecurityLevel): string[] {
  return podSecurityViolations(subject, level).map((violation) => `${violation.check} at ${violation.path}`);
}

describe('the Pod Security checker, on whole pods', () => {
  test('a pod whose containers set the restricted securityContext passes "restricted"', () => {
    assert.deepEqual(checks(pod({}), 'restricted'), []);
  });

  test('runAsNonRoot and seccompProfile may come from the pod instead of each container', () => {
    const subject = pod({
      securityContext: { runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } },
      containers: [{ name: 'app', image: 'busybox', securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } } }],
    });
    assert.deepEqual(checks(subject, 'restricted'), []);
  });

  test('a container with no securityContext passes "baseline" but fails each restricted check', () => {
    const subject = pod({ containers: [{ name: 'app', image: 'busybox' }] });
    assert.deepEqual(checks(subject, 'baseline'), []);
    assert.deepEqual(checks(subject, 'restricted'), [
      'allowPrivilegeEscalation at spec.containers[0].securityContext.allowPrivilegeEscalation',
      'capabilities_restricted at spec.containers[0].securityContext.capabilities.drop',
      'runAsNonRoot at spec.containers[0].securityContext.runAsNonRoot',
      'seccompProfile_restricted at spec.containers[0].securityContext.seccompProfile.type',
    ]);
  });

  const baselineViolations: [what: string, subject: Json, expected: string][] = [
    ['hostNetwork', pod({ hostNetwork: true }), 'hostNamespaces at spec.hostNetwork'],
    ['hostPID', pod({ hostPID: true }), 'hostNamespaces at spec.hostPID'],
    ['a privileged init container', pod({ initContainers: [{ name: 'i', image: 'b', securityContext: { ...RESTRICTED_CONTAINER_CONTEXT, privileged: true } }] }), 'privileged at spec.initContainers[0].securityContext.privileged'],
    ['a hostPath volume', pod({ volumes: [{ name: 'v', hostPath: { path: '/' } }] }), 'hostPathVolumes at spec.volumes[0].hostPath'],
    ['a host port', pod({ containers: [{ name: 'app', image: 'b', ports: [{ containerPort: 80, hostPort: 80 }], securityContext: RESTRICTED_CONTAINER_CONTEXT }] }), 'hostPorts at spec.containers[0].ports[0].hostPort'],
    ['SYS_ADMIN added', pod({ containers: [{ name: 'app', image: 'b', securityContext: { ...RESTRICTED_CONTAINER_CONTEXT, capabilities: { drop: ['ALL'], add: ['SYS_ADMIN'] } } }] }), 'capabilities_baseline at spec.containers[0].securityContext.capabilities.add[0]'],
    ['an unsafe sysctl', pod({ securityContext: { sysctls: [{ name: 'kernel.msgmax', value: '1' }] } }), 'sysctls at spec.securityContext.sysctls[0].name'],
    ['a custom SELinux type', pod({ securityContext: { seLinuxOptions: { type: 'spc_t' } } }), 'seLinuxOptions at spec.securityContext.seLinuxOptions.type'],
    ['procMount Unmasked', pod({ containers: [{ name: 'app', image: 'b', securityContext: { ...RESTRICTED_CONTAINER_CONTEXT, procMount: 'Unmasked' } }] }), 'procMount at spec.containers[0].securityContext.procMount'],
    ['seccomp Unconfined', pod({ securityContext: { seccompProfile: { type: 'Unconfined' } } }), 'seccompProfile_baseline at spec.securityContext.seccompProfile.type'],
    ['an unconfined AppArmor annotation', pod({}, { annotations: { 'container.apparmor.security.beta.kubernetes.io/app': 'unconfined' } }), 'appArmorProfile at metadata.annotations["container.apparmor.security.beta.kubernetes.io/app"]'],
  ];
  for (const [what, subject, expected] of baselineViolations) {
    test(`fails "baseline" (and so "restricted") for ${what}`, () => {
      assert.deepEqual(checks(subject, 'baseline'), [expected]);
      assert.ok(checks(subject, 'restricted').includes(expected));
      assert.deepEqual(checks(subject, 'privileged'), []);
    });
  }

  const restrictedOnly: [what: string, subject: Json, expected: string][] = [
    ['an nfs volume', pod({ volumes: [{ name: 'v', nfs: { server: 'nfs', path: '/' } }] }), 'restrictedVolumes at spec.volumes[0].nfs'],
    ['runAsUser 0 on the pod', pod({ securityContext: { runAsUser: 0 } }), 'runAsUser at spec.securityContext.runAsUser'],
    ['runAsNonRoot false on a container', pod({ containers: [{ name: 'app', image: 'b', securityContext: { ...RESTRICTED_CONTAINER_CONTEXT, runAsNonRoot: false } }] }), 'runAsNonRoot at spec.containers[0].securityContext.runAsNonRoot'],
    ['CHOWN added (in the default set)', pod({ containers: [{ name: 'app', image: 'b', securityContext: { ...RESTRICTED_CONTAINER_CONTEXT, capabilities: { drop: ['ALL'], add: ['CHOWN'] } } }] }), 'capabilities_restricted at spec.containers[0].securityContext.capabilities.add[0]'],
    ['an ephemeral container allowing privilege escalation', pod({ ephemeralContainers: [{ name: 'debug', image: 'b', securityContext: { ...RESTRICTED_CONTAINER_CONTEXT, allowPrivilegeEscalation: true } }] }), 'allowPrivilegeEscalation at spec.ephemeralContainers[0].securityContext.allowPrivilegeEscalation'],
  ];
  for (const [what, subject, expected] of restrictedOnly) {
    test(`passes "baseline" but fails "restricted" for ${what}`, () => {
      assert.deepEqual(checks(subject, 'baseline'), []);
      assert.deepEqual(checks(subject, 'restricted'), [expected]);
    });
  }

  test('NET_BIND_SERVICE may be added under "restricted"', () => {
    const subject = pod({ containers: [{ name: 'app', image: 'b', securityContext: { ...RESTRICTED_CONTAINER_CONTEXT, capabilities: { drop: ['ALL'], add: ['NET_BIND_SERVICE'] } } }] });
    assert.deepEqual(checks(subject, 'restricted'), []);
  });

  test('a Windows pod is exempt from the Linux-only restricted checks, not from runAsNonRoot', () => {
    const subject = pod({ os: { name: 'windows' }, containers: [{ name: 'app', image: 'b' }] });
    assert.deepEqual(checks(subject, 'restricted'), ['runAsNonRoot at spec.containers[0].securityContext.runAsNonRoot']);
  });
});

const plainSidecar: Injection = { name: 'proxy', trigger: { type: 'always' }, containers: [{ name: 'proxy', image: 'example.com/proxy:1.0' }] };
const privilegedInit: Injection = {
  name: 'mesh-init',
  trigger: { type: 'always' },
  initContainers: [{ name: 'mesh-init', image: 'example.com/mesh-init:1.0', securityContext: { capabilities: { add: ['NET_ADMIN', 'NET_RAW'] } } }],
};

function propsErrorOf(build: () => unknown): SidecarInjectorPropsError {
  try {
    build();
  } catch (error) {
    if (error instanceof SidecarInjectorPropsError) return error;
    throw error;
  }
  assert.fail('expected synth to fail with SidecarInjectorPropsError, but the injector was built');
}

/** Runs `build` and synth, collecting the process warnings they emit. */
async function warningsDuring(build: () => void): Promise<Error[]> {
  const seen: Error[] = [];
  const listener = (warning: Error) => seen.push(warning);
  process.on('warning', listener);
  try {
    build();
    await new Promise((resolve) => setImmediate(resolve)); // process warnings are delivered on the next tick
  } finally {
    process.off('warning', listener);
  }
  return seen.filter((warning) => warning.name === POD_SECURITY_WARNING);
}

describe('synth and Pod Security', () => {
  test('warns, and still synthesizes, when an injected container would fail "restricted"', async () => {
    let injector: ReturnType<typeof buildChart>['injector'] | undefined;
    const warnings = await warningsDuring(() => {
      const built = buildChart({ injections: [plainSidecar] });
      injector = built.injector;
      synthesize(built.app);
    });
    const paths = injector!.podSecurityWarnings().map((warning) => warning.path);
    assert.deepEqual(paths, [
      'injections[0].containers[0].securityContext.allowPrivilegeEscalation',
      'injections[0].containers[0].securityContext.capabilities.drop',
      'injections[0].containers[0].securityContext.runAsNonRoot',
      'injections[0].containers[0].securityContext.seccompProfile.type',
    ]);
    assert.equal(warnings.length, 4, `process warnings: ${warnings.map((warning) => warning.message).join('\n')}`);
    assert.match(warnings[0].message, /injections\[0\]\.containers\[0\]\.securityContext\.allowPrivilegeEscalation: would fail Pod Security "restricted"/);
    assert.deepEqual(
      injector!.node.metadata.filter((entry) => entry.type === POD_SECURITY_WARNING).length,
      4,
      'each warning is also recorded as construct metadata',
    );
  });

  test('does not warn about an injection that passes "restricted" (the default app)', async () => {
    const warnings = await warningsDuring(() => synthesize(buildChart({ injections: DEFAULT_INJECTIONS }).app));
    assert.deepEqual(warnings.map((warning) => warning.message), []);
  });

  test('fails, naming each prop path, when the injection requires "restricted"', () => {
    const error = propsErrorOf(() => buildChart({ injections: [{ ...plainSidecar, podSecurity: 'restricted' }] }));
    assert.deepEqual(error.issues.map((issue) => issue.path), [
      'injections[0].containers[0].securityContext.allowPrivilegeEscalation',
      'injections[0].containers[0].securityContext.capabilities.drop',
      'injections[0].containers[0].securityContext.runAsNonRoot',
      'injections[0].containers[0].securityContext.seccompProfile.type',
    ]);
    assert.match(error.issues[0].message, /Pod Security "restricted" \(allowPrivilegeEscalation\): must be false/);
  });

  test('fails when the injector requires "baseline" and an injection adds NET_ADMIN and NET_RAW, and passes what only "restricted" forbids', () => {
    const error = propsErrorOf(() => buildChart({ podSecurity: 'baseline', injections: [plainSidecar, privilegedInit] }));
    assert.deepEqual(error.issues.map((issue) => `${issue.path}: ${issue.message}`), [
      'injections[1].initContainers[0].securityContext.capabilities.add[0]: Pod Security "baseline" (capabilities_baseline): capability "NET_ADMIN" is not in the default set',
      'injections[1].initContainers[0].securityContext.capabilities.add[1]: Pod Security "baseline" (capabilities_baseline): capability "NET_RAW" is not in the default set',
    ]);
    assert.doesNotThrow(() => buildChart({ podSecurity: 'baseline', injections: [plainSidecar] }));
  });

  test('an injection may declare its own, weaker level under the injector\'s: then it neither fails nor warns', async () => {
    let injector: ReturnType<typeof buildChart>['injector'] | undefined;
    const warnings = await warningsDuring(() => {
      const built = buildChart({ podSecurity: 'restricted', injections: [...DEFAULT_INJECTIONS, { ...privilegedInit, podSecurity: 'privileged' }] });
      injector = built.injector;
      synthesize(built.app);
    });
    assert.deepEqual(injector!.podSecurityWarnings(), []);
    assert.deepEqual(warnings, []);
  });

  test('fails for a hostPath volume, a privilege-escalating merge and an unconfined AppArmor annotation', () => {
    const error = propsErrorOf(() =>
      buildChart({
        podSecurity: 'restricted',
        injections: [
          {
            name: 'node-agent',
            trigger: { type: 'always' },
            volumes: [{ name: 'host', hostPath: { path: '/var/run' } }],
            merges: [{ containerNames: ['app'], fields: { securityContext: { allowPrivilegeEscalation: true } } }],
            annotations: { 'container.apparmor.security.beta.kubernetes.io/app': 'unconfined' },
          },
        ],
      }),
    );
    assert.deepEqual(error.issues.map((issue) => issue.path), [
      'injections[0].volumes[0].hostPath',
      'injections[0].annotations["container.apparmor.security.beta.kubernetes.io/app"]',
      'injections[0].merges[0].fields.securityContext.allowPrivilegeEscalation',
    ]);
  });

  test('the webhook\'s config (the ConfigMap) carries the injector\'s level, and the webhook checks it on load', () => {
    const { injector } = buildChart({ podSecurity: 'restricted', injections: DEFAULT_INJECTIONS });
    const config = JSON.parse(injector.configJson());
    assert.equal(config.podSecurity, 'restricted');
    assert.throws(() => resolveInjectorConfig({ ...config, injections: [plainSidecar] }), /Pod Security "restricted"/);
  });
});

// ---------------------------------------------------------------------------------------------
// The default app's injected pods, on every recorded review

const defaultConfig = resolveInjectorConfig({ injections: DEFAULT_INJECTIONS });

/** A recorded request with every default trigger set: the wait-for-it and nginx annotations, the myApp label. */
function triggering(name: string): Json {
  const request = loadReview(name).request;
  const object = request.object;
  const template = podOf(object);
  template.metadata ??= {};
  template.metadata.annotations = { ...template.metadata.annotations, 'sidecar-injector-webhook.morven.me/inject': 'true' };
  if (object.kind === 'Deployment') object.metadata.annotations = { ...object.metadata.annotations, 'com.foreach/wait-for-it': 'db:5432' };
  return request;
}

/** The same request, its pod made restricted-compliant the way a pod author would: pod-level and container-level. */
function madeRestricted(request: Json): Json {
  const copy = structuredClone(request);
  const spec = podOf(copy.object).spec;
  spec.securityContext = { ...spec.securityContext, runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } };
  for (const list of ['containers', 'initContainers'] as const) {
    for (const container of spec[list] ?? []) {
      container.securityContext = { ...container.securityContext, allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } };
    }
  }
  return copy;
}

function injectedPod(request: Json): { pod: Json; injected: string[] } {
  const result = evaluate(request as never, defaultConfig);
  const pod = podOf(applyResponse(request.object, result.response));
  return { pod, injected: result.decisions.filter((decision) => decision.reason === 'injected').map((decision) => decision.injection) };
}

function describeViolations(pod: Json): string {
  const list = podSecurityViolations(pod, 'restricted').map((violation) => `  ${violation.path}: ${violation.message}`);
  return `containers [${names(pod.spec.containers)}], initContainers [${names(pod.spec.initContainers)}]\n${list.join('\n')}`;
}

const JOB_OWNER = { apiVersion: 'batch/v1', kind: 'Job', name: 'nightly', uid: '6f1d7f7e-8d25-4c8e-9d1a-0c7d0c1e2a11', controller: true };
const cases = [
  ...reviewNames().map((name) => ({ name, request: () => triggering(name) })),
  {
    name: 'pod-create-sleep, owned by a Job',
    request: () => {
      const request = triggering('pod-create-sleep');
      request.object.metadata.ownerReferences = [JOB_OWNER];
      return request;
    },
  },
];

describe('the default app\'s injected pods and Pod Security "restricted", as the admission controller checks the whole pod', () => {
  for (const { name, request } of cases) {
    test(`${name}, made restricted-compliant, is still restricted-compliant after injection`, () => {
      const compliant = madeRestricted(request());
      assert.deepEqual(podSecurityViolations(podOf(compliant.object), 'restricted'), [], 'the pod passes before injection');
      const { pod, injected } = injectedPod(compliant);
      assert.deepEqual(podSecurityViolations(pod, 'restricted'), [], `after injecting [${injected}]: ${describeViolations(pod)}`);
    });

    test(`${name}, as recorded (not restricted-compliant itself): the injection adds no new violation`, () => {
      const original = request();
      const before = new Set(podSecurityViolations(podOf(original.object), 'restricted').map((violation) => violation.path));
      const { pod, injected } = injectedPod(original);
      const added = podSecurityViolations(pod, 'restricted').filter((violation) => !before.has(violation.path));
      assert.deepEqual(added, [], `after injecting [${injected}]: ${describeViolations(pod)}`);
    });
  }

  test('the recordings do get injected: every default injection fires on at least one', () => {
    const fired = new Set(cases.flatMap(({ request }) => injectedPod(request()).injected));
    assert.deepEqual([...fired].sort(), ['envoy', 'nginx-sidecar', 'wait-for-it']);
  });
});
