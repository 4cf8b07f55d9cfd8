// Properties of the pure engine, checked on recorded requests whose pods are randomized and on random
// configs that the validator accepts: the patch applies, reinvocation changes nothing, the user's own
// containers are left alone, the result is a valid pod, and opt-outs and uids are honoured.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { InjectorConfig, ResolvedInjectorConfig, annotationKeys, injectorConfigIssues, podSecurityViolations, resolveInjectorConfig } from '../../webhook/config';
import { AdmissionRequest, BadAdmissionReview, InjectionDecision, MutationResult, decodeAdmissionReview, evaluate, formatStatus, parseStatus } from '../../webhook/engine';
import {
  RESTRICTED_SECURITY_CONTEXT,
  Scenario,
  arbitraryScenario,
  describeScenario,
} from '../support/arbitraries';
import { validateManifest } from '../support/openapi-validator';
import { qosClassOf } from '../../webhook/engine/qos';
import { applyResponse, decodePatch, loadReview, podOf } from '../support/recorded-reviews';
import { admittedSpec } from '../support/pod-level-resources';

/** Runs per property; PROPERTY_RUNS=2000 for a deeper search. */
const RUNS = Number(process.env.PROPERTY_RUNS ?? 200);
/** Where the pod template sits, as a JSON pointer; every other kind keeps it at /spec/template. */
const TEMPLATE_POINTER: Record<string, string> = { Pod: '', CronJob: '/spec/jobTemplate/spec/template' };

type Json = Record<string, any>;

interface Outcome {
  readonly result: MutationResult;
  /** The request's object with the response's patch applied, as the apiserver applies it. */
  readonly patched: Json;
}

function run(request: AdmissionRequest & { object: Json }, config: ResolvedInjectorConfig): Outcome {
  const result = evaluate(request, config);
  let patched: Json;
  try {
    patched = applyResponse(request.object, result.response);
  } catch (error) {
    assert.fail(`the apiserver would reject this patch: ${(error as Error).message}\npatch: ${JSON.stringify(decodePatch(result.response))}`);
  }
  return { result, patched };
}

function injectedBy(decisions: readonly InjectionDecision[]): string[] {
  return decisions.filter((decision) => decision.reason === 'injected').map((decision) => decision.injection);
}

const namesOf = (list: unknown): string[] => (Array.isArray(list) ? list.map((item) => item?.name) : []);

function duplicates(values: readonly unknown[]): unknown[] {
  const seen = new Set<unknown>();
  return values.filter((value) => (seen.has(value) ? true : (seen.add(value), false)));
}

function templatePointer(kind: string): string {
  return TEMPLATE_POINTER[kind] ?? '/spec/template';
}

/** The injections that changed the object this time, as configured. */
function injectedInjections(scenario: Scenario, result: MutationResult) {
  const names = new Set(injectedBy(result.decisions));
  return scenario.resolved.injections.filter((injection) => names.has(injection.name));
}

function containersSummary(pod: Json): string {
  return `containers [${namesOf(pod.spec?.containers).join(', ')}], initContainers [${namesOf(pod.spec?.initContainers).join(', ')}]`;
}

/** fast-check prints the seed, the shrunk counterexample (see describeScenario) and the assertion. */
const check = (property: fc.IProperty<[Scenario]>) => fc.assert(property, { numRuns: RUNS, includeErrorInReport: true });

describe('the engine, on randomized recorded requests and random valid configs', () => {
  test('(a) every patch applies, with validation, to the object it was computed for, and stays inside its pod template', () => {
    check(
      fc.property(arbitraryScenario(), (scenario) => {
        const { result } = run(scenario.request, scenario.resolved);
        const base = templatePointer(scenario.request.kind.kind);
        for (const operation of result.patch) {
          assert.equal(operation.op, 'add', `only "add" operations are expected, got ${JSON.stringify(operation)}`);
          assert.ok(
            operation.path.startsWith(base + '/spec/') || operation.path.startsWith(base + '/metadata'),
            `operation ${JSON.stringify(operation)} reaches outside the pod template at "${base}"`,
          );
        }
        assert.deepEqual(decodePatch(result.response), result.patch, 'the response carries exactly the operations the engine reports');
      }),
    );
  });

  test('(b) reinvoking on the patched object changes nothing, as a CREATE and as a workload UPDATE with oldObject', () => {
    check(fc.property(arbitraryScenario(), (scenario) => assertIdempotent(scenario)));
  });

  test('(b) reinvocation is idempotent for injections that only add containers, init containers, volumes and pull secrets', () => {
    check(fc.property(arbitraryScenario({ containersOnly: true }), (scenario) => assertIdempotent(scenario)));
  });

  test('(c) the user\'s containers, init containers and volumes stay where they were, unchanged but for appended env and mounts and merged fields', () => {
    check(
      fc.property(arbitraryScenario(), (scenario) => {
        const { result, patched } = run(scenario.request, scenario.resolved);
        const before = podOf(scenario.request.object);
        const after = podOf(patched);
        const injections = injectedInjections(scenario, result);
        const injectedEnv = new Set(injections.flatMap((injection) => (injection.env ?? []).map((variable) => variable.name)));
        const injectedMounts = new Set(injections.flatMap((injection) => (injection.volumeMounts ?? []).map((mount) => mount.mountPath)));
        const configured = new Set(
          injections.flatMap((injection) => [...(injection.containers ?? []), ...(injection.initContainers ?? [])].map((container) => container.name)),
        );
        const mergedFields = (name: string): Set<string> =>
          new Set(
            injections.flatMap((injection) =>
              (injection.merges ?? []).filter((merge) => merge.containerNames.includes(name)).flatMap((merge) => Object.keys(merge.fields)),
            ),
          );

        for (const list of ['containers', 'initContainers'] as const) {
          const original: Json[] = before.spec[list] ?? [];
          const all: Json[] = after.spec[list] ?? [];
          const originalNames = new Set(namesOf(original));
          // Native sidecars placed "first" go before the pod's own init containers: those keep their order.
          const now = list === 'initContainers' ? all.filter((container) => originalNames.has(container.name)) : all;
          const added = list === 'initContainers' ? all.filter((container) => !originalNames.has(container.name)) : all.slice(original.length);
          const context = `${list}: before [${namesOf(original).join(', ')}], after [${namesOf(all).join(', ')}]`;
          assert.ok(now.length >= original.length, `a ${list} entry was removed; ${context}`);
          original.forEach((container, index) => {
            const result = now[index];
            assert.equal(result?.name, container.name, `${list}[${index}] moved; ${context}`);
            const skip = mergedFields(container.name);
            for (const field of new Set([...Object.keys(container), ...Object.keys(result)])) {
              if (skip.has(field)) continue;
              if (list === 'containers' && (field === 'env' || field === 'volumeMounts')) {
                const was: Json[] = container[field] ?? [];
                const is: Json[] = result[field] ?? [];
                assert.deepEqual(is.slice(0, was.length), was, `${field} of container "${container.name}" was changed, not appended to`);
                const key = field === 'env' ? 'name' : 'mountPath';
                const allowed = field === 'env' ? injectedEnv : injectedMounts;
                for (const added of is.slice(was.length)) {
                  assert.ok(allowed.has(added[key]), `container "${container.name}" got ${field} ${JSON.stringify(added)}, which no injected injection adds`);
                }
                continue;
              }
              assert.deepEqual(result[field], container[field], `field "${field}" of ${list.slice(0, -1)} "${container.name}" changed`);
            }
          });
          for (const item of added) {
            assert.ok(configured.has(item.name), `${list} got "${item.name}", which no injected injection adds; ${context}`);
          }
        }
        const volumesBefore: Json[] = before.spec.volumes ?? [];
        const volumesAfter: Json[] = after.spec.volumes ?? [];
        assert.deepEqual(volumesAfter.slice(0, volumesBefore.length), volumesBefore, 'the pod\'s own volumes were changed or reordered');
      }),
    );
  });

  test('(d) the result has unique container, volume, env and mountPath names and validates against the 1.32 OpenAPI schema', () => {
    let validInputs = 0;
    check(
      fc.property(arbitraryScenario(), (scenario) => {
        const { result, patched } = run(scenario.request, scenario.resolved);
        const pod = podOf(patched);
        const containers: Json[] = [...(pod.spec.containers ?? []), ...(pod.spec.initContainers ?? [])];
        assert.deepEqual(duplicates(namesOf(containers)), [], `duplicate container names in ${containersSummary(pod)}`);
        assert.deepEqual(duplicates(namesOf(pod.spec.volumes)), [], `duplicate volume names in [${namesOf(pod.spec.volumes).join(', ')}]`);
        for (const container of containers) {
          assert.deepEqual(duplicates(namesOf(container.env)), [], `duplicate env names in container "${container.name}": ${JSON.stringify(container.env)}`);
          const paths = (container.volumeMounts ?? []).map((mount: Json) => mount.mountPath);
          assert.deepEqual(duplicates(paths), [], `duplicate mountPaths in container "${container.name}": ${JSON.stringify(container.volumeMounts)}`);
        }
        if (validateManifest(scenario.request.object).length > 0) return;
        validInputs++;
        const violations = validateManifest(patched);
        assert.deepEqual(violations, [], `the patched ${patched.kind} does not match the schema; patch: ${JSON.stringify(result.patch)}`);
      }),
    );
    assert.ok(validInputs >= RUNS * 0.9, `only ${validInputs} of ${RUNS} generated objects were valid to begin with: the arbitraries need fixing`);
  });

  test('(p) every pod that sets pod-level resources stays valid by the apiserver\'s rules once injected, with 1.36\'s defaulting and 1.37\'s', () => {
    let injectedSome = 0;
    check(
      fc.property(arbitraryScenario({ podLevelResources: true }), (scenario) => {
        // A merge that sets resources in the pod's own containers is not counted (see docs/backends.md).
        const mergesResources = scenario.resolved.injections.some((injection) => (injection.merges ?? []).some((merge) => 'resources' in merge.fields));
        if (mergesResources) return;
        const pod = podOf(scenario.request.object);
        for (const version of ['1.36', '1.37'] as const) {
          assert.deepEqual(admittedSpec(pod.spec, version, (spec) => spec).violations, [], `the generated pod is invalid on its own on ${version}: the arbitraries need fixing`);
          let patchedSpec: Json | undefined;
          const { violations } = admittedSpec(pod.spec, version, (spec) => {
            const object = structuredClone(scenario.request.object);
            podOf(object).spec = spec;
            const { result, patched } = run({ ...scenario.request, object }, scenario.resolved);
            if (result.decisions.some((decision) => decision.reason === 'injected')) injectedSome++;
            return (patchedSpec = podOf(patched).spec);
          });
          assert.deepEqual(
            violations,
            [],
            `on ${version} the injected pod is refused; spec.resources ${JSON.stringify(patchedSpec?.resources)}, containers ${JSON.stringify(patchedSpec?.containers?.map((c: Json) => ({ name: c.name, resources: c.resources })))}, initContainers ${JSON.stringify(patchedSpec?.initContainers?.map((c: Json) => ({ name: c.name, restartPolicy: c.restartPolicy, resources: c.resources })))}`,
          );
        }
      }),
    );
    assert.ok(injectedSome >= RUNS / 2, `only ${injectedSome} of ${RUNS * 2} admissions injected anything: the property checks too little`);
  });

  test('(e) every container injected with a restricted securityContext passes Pod Security "restricted"', () => {
    check(
      fc.property(arbitraryScenario({ restricted: true }), (scenario) => {
        const { patched } = run(scenario.request, scenario.resolved);
        const before = podOf(scenario.request.object);
        const after = podOf(patched);
        const own = new Set([...namesOf(before.spec.containers), ...namesOf(before.spec.initContainers)]);
        for (const container of [...(after.spec.containers ?? []), ...(after.spec.initContainers ?? [])]) {
          if (own.has(container.name)) continue;
          const violations = restrictedViolations(container, after.spec.securityContext);
          assert.deepEqual(violations, [], `injected container "${container.name}" violates "restricted": ${JSON.stringify(container)}`);
        }
        const ownVolumes = new Set(namesOf(before.spec.volumes));
        for (const volume of after.spec.volumes ?? []) {
          if (ownVolumes.has(volume.name)) continue;
          const source = Object.keys(volume).filter((key) => key !== 'name');
          assert.ok(source.every((key) => RESTRICTED_VOLUME_TYPES.has(key)), `injected volume ${JSON.stringify(volume)} is not allowed under "restricted"`);
        }
      }),
    );
  });

  test('(k) an injector that requires "restricted" of its injections adds no violation to the whole pod, as Pod Security admission checks it', () => {
    check(
      fc.property(arbitraryScenario({ restricted: true }), (scenario) => {
        const resolved = { ...scenario.resolved, podSecurity: 'restricted' as const };
        assert.deepEqual(injectorConfigIssues(resolved), [], 'the generated restricted config passes validation with podSecurity "restricted"');
        const { patched } = run(scenario.request, resolved);
        const before = podOf(scenario.request.object);
        const after = podOf(patched);
        const existing = new Set(podSecurityViolations(before, 'restricted').map((violation) => violationKey(before, violation.path, violation.check)));
        const added = podSecurityViolations(after, 'restricted').filter((violation) => !existing.has(violationKey(after, violation.path, violation.check)));
        assert.deepEqual(added, [], `after injection: ${containersSummary(after)}`);
      }),
    );
  });

  test('(f) <prefix>/inject: "false" admits unchanged, every in-scope injection decided "opted-out"', () => {
    const optedOut = fc
      .tuple(arbitraryScenario(), fc.constantFrom('false', 'False', ' false ', 'FALSE'), fc.boolean())
      .map(([scenario, value, onObject]) => {
        const request = structuredClone(scenario.request);
        const keys = annotationKeys(scenario.resolved.annotationPrefix);
        const pod = podOf(request.object);
        pod.metadata ??= {};
        pod.metadata.annotations ??= {};
        if (onObject && pod !== request.object) {
          // A workload's own metadata counts too, when its template says nothing.
          delete pod.metadata.annotations[keys.inject];
          request.object.metadata.annotations = { ...request.object.metadata.annotations, [keys.inject]: value };
        } else {
          pod.metadata.annotations[keys.inject] = value;
        }
        const out = { ...scenario, request };
        Object.defineProperty(out, fc.toStringMethod, { value: () => describeScenario(out) });
        return out;
      });
    check(
      fc.property(optedOut, (scenario) => {
        const result = evaluate(scenario.request, scenario.resolved);
        assert.deepEqual(result.patch, [], `an opted-out ${scenario.request.kind.kind} was patched`);
        assert.equal(result.response.patch, undefined);
        const kind = scenario.request.kind.kind;
        for (const decision of result.decisions) {
          const injection = scenario.resolved.injections.find((candidate) => candidate.name === decision.injection)!;
          const expected = injection.targetKinds.includes(kind as never) ? 'opted-out' : 'out-of-scope';
          assert.equal(decision.reason, expected, `injection "${decision.injection}" (targets ${injection.targetKinds.join(', ')})`);
        }
      }),
    );
  });

  test('(g) every response echoes the uid and allows, whatever the operation and whether enabled', () => {
    const anyOperation = fc
      .tuple(arbitraryScenario(), fc.constantFrom('CREATE', 'UPDATE', 'DELETE', 'CONNECT'), fc.boolean(), fc.boolean())
      .map(([scenario, operation, keepOperation, enabled]) => {
        const request = { ...scenario.request, operation: keepOperation ? scenario.request.operation : operation };
        const resolved = { ...scenario.resolved, enabled };
        const out = { ...scenario, request, resolved };
        Object.defineProperty(out, fc.toStringMethod, { value: () => `${describeScenario(out)}\nenabled: ${enabled}` });
        return out;
      });
    check(
      fc.property(anyOperation, (scenario) => {
        const { result } = run(scenario.request, scenario.resolved);
        assert.equal(result.response.uid, scenario.request.uid);
        assert.equal(result.response.allowed, true);
        assert.equal(result.response.status, undefined, 'an allowed response carries no status');
        assert.equal(result.response.patchType === 'JSONPatch', result.response.patch !== undefined, 'patchType is set exactly when there is a patch');
        assert.deepEqual(
          result.decisions.map((decision) => decision.injection),
          scenario.resolved.injections.map((injection) => injection.name),
          'one decision per configured injection, in order',
        );
        const { operation, kind } = scenario.request;
        const inScope = operation === 'CREATE' || (operation === 'UPDATE' && kind.kind !== 'Pod');
        if (!scenario.resolved.enabled) assert.ok(result.decisions.every((decision) => decision.reason === 'disabled'));
        if (!inScope || !scenario.resolved.enabled) assert.deepEqual(result.patch, [], `${operation} of a ${kind.kind} was patched`);
      }),
    );
  });

  test('(h) every label and annotation of an injected injection is on the pod afterwards, and the status lists it', () => {
    check(
      fc.property(arbitraryScenario(), (scenario) => {
        const { result, patched } = run(scenario.request, scenario.resolved);
        const injected = injectedInjections(scenario, result);
        if (injected.length === 0) return;
        const metadata = podOf(patched).metadata ?? {};
        for (const injection of injected) {
          for (const map of ['labels', 'annotations'] as const) {
            for (const key of Object.keys(injection[map] ?? {})) {
              const actual = metadata[map] ?? {};
              assert.ok(
                Object.prototype.hasOwnProperty.call(actual, key) && typeof actual[key] === 'string',
                `injection "${injection.name}" sets ${map.slice(0, -1)} "${key}", but the pod's ${map} are ${JSON.stringify(actual)}; warnings: ${JSON.stringify(result.response.warnings)}`,
              );
            }
          }
        }
        const keys = annotationKeys(scenario.resolved.annotationPrefix);
        const before = parseStatus(podOf(scenario.request.object).metadata?.annotations?.[keys.status]);
        const status = parseStatus(metadata.annotations?.[keys.status]);
        assert.deepEqual([...status].sort(), [...new Set([...before, ...injected.map((injection) => injection.name)])].sort(), 'status annotation');
      }),
    );
  });

  test('(i) a QoS warning names each class change, and the first and last of them are the pod\'s class before and after', () => {
    check(
      fc.property(arbitraryScenario(), (scenario) => {
        const { result, patched } = run(scenario.request, scenario.resolved);
        const classOf = (pod: Json) => qosClassOf([...(pod.spec.containers ?? []), ...(pod.spec.initContainers ?? [])], pod.spec.resources);
        const before = classOf(podOf(scenario.request.object));
        const after = classOf(podOf(patched));
        const changes = result.podWarnings.filter((warning) => warning.reason === 'qos-class-changed').map((warning) => warning.qosClass!);
        const context = `QoS ${before} -> ${after}; warnings ${JSON.stringify(result.response.warnings)}`;
        if (changes.length === 0) {
          assert.equal(after, before, `the class changed without a warning; ${context}`);
          return;
        }
        assert.equal(changes[0].before, before, context);
        assert.equal(changes[changes.length - 1].after, after, context);
        changes.forEach((change, index) => assert.notEqual(change.after, change.before, `change ${index} is no change; ${context}`));
      }),
    );
  });

  test('(j) in a Job\'s pod, containers go in as native sidecars when asked to, and a Job warning comes exactly for those that did not', () => {
    check(
      fc.property(arbitraryScenario(), (scenario) => {
        const { result, patched } = run(scenario.request, scenario.resolved);
        const kind = scenario.request.kind.kind;
        const jobPod = kind === 'Job' || kind === 'CronJob';
        const after = podOf(patched);
        const before = podOf(scenario.request.object);
        const own = new Set([...namesOf(before.spec.containers), ...namesOf(before.spec.initContainers)]);
        const sidecars = new Set(namesOf(after.spec.initContainers).filter((name, index) => !own.has(name) && after.spec.initContainers[index].restartPolicy === 'Always'));
        const regular = new Set(namesOf(after.spec.containers).filter((name) => !own.has(name)));
        const warned = new Set(result.podWarnings.filter((warning) => warning.reason === 'job-never-completes').map((warning) => warning.injection));
        for (const injection of injectedInjections(scenario, result)) {
          const mode = injection.nativeSidecars ?? 'never';
          const native = mode === 'always' || (mode === 'jobs' && jobPod);
          for (const container of injection.containers ?? []) {
            if (own.has(container.name)) continue;
            assert.ok((native ? sidecars : regular).has(container.name), `container "${container.name}" of injection "${injection.name}" (nativeSidecars ${mode}) in a ${kind}: ${containersSummary(after)}`);
          }
          const addedRegular = !native && (injection.containers ?? []).some((container) => regular.has(container.name));
          assert.equal(warned.has(injection.name), jobPod && addedRegular, `Job warning for injection "${injection.name}" in a ${kind}: ${JSON.stringify(result.response.warnings)}`);
        }
      }),
    );
  });
});

/** A violation named by its container (or volume) and check, not its index: native sidecars placed first shift indices. */
function violationKey(pod: Json, path: string, checkName: string): string {
  const item = /^spec\.(containers|initContainers|ephemeralContainers|volumes)\[(\d+)\]/.exec(path);
  return item ? `${item[1]}:${pod.spec[item[1]]?.[Number(item[2])]?.name}:${checkName}` : `${path}:${checkName}`;
}

function assertIdempotent(scenario: Scenario): void {
  const { result, patched } = run(scenario.request, scenario.resolved);
  const again = evaluate({ ...scenario.request, object: patched }, scenario.resolved);
  assert.deepEqual(
    again.patch,
    [],
    `reinvocation patched again.\nfirst patch: ${JSON.stringify(result.patch)}\nfirst warnings: ${JSON.stringify(result.response.warnings)}\n` +
      `reinvoked decisions: ${JSON.stringify(again.decisions)}`,
  );
  if (scenario.request.kind.kind !== 'Pod') {
    const update = evaluate({ ...scenario.request, operation: 'UPDATE', object: patched, oldObject: scenario.request.object }, scenario.resolved);
    assert.deepEqual(update.patch, [], `an UPDATE of the patched ${scenario.request.kind.kind} patched again`);
  }
}

// ---------------------------------------------------------------------------------------------
// Pod Security "restricted", for one container (https://kubernetes.io/docs/concepts/security/pod-security-standards/)

const RESTRICTED_VOLUME_TYPES = new Set(['configMap', 'csi', 'downwardAPI', 'emptyDir', 'ephemeral', 'persistentVolumeClaim', 'projected', 'secret']);
const BASELINE_SELINUX_TYPES = new Set([undefined, '', 'container_t', 'container_init_t', 'container_kvm_t', 'container_engine_t']);

function restrictedViolations(container: Json, podSecurityContext: Json = {}): string[] {
  const context: Json = container.securityContext ?? {};
  const violations: string[] = [];
  if (context.privileged === true) violations.push('privileged');
  if (context.windowsOptions?.hostProcess === true) violations.push('windowsOptions.hostProcess');
  if (context.procMount !== undefined && context.procMount !== 'Default') violations.push(`procMount ${context.procMount}`);
  if (!BASELINE_SELINUX_TYPES.has(context.seLinuxOptions?.type)) violations.push(`seLinuxOptions.type ${context.seLinuxOptions.type}`);
  if (context.appArmorProfile?.type === 'Unconfined') violations.push('appArmorProfile Unconfined');
  for (const port of container.ports ?? []) if (port.hostPort) violations.push(`hostPort ${port.hostPort}`);
  if (context.allowPrivilegeEscalation !== false) violations.push('allowPrivilegeEscalation must be false');
  if (!(context.capabilities?.drop ?? []).includes('ALL')) violations.push('capabilities.drop must include ALL');
  for (const capability of context.capabilities?.add ?? []) {
    if (capability !== 'NET_BIND_SERVICE') violations.push(`capabilities.add ${capability}`);
  }
  if ((context.runAsNonRoot ?? podSecurityContext.runAsNonRoot) !== true) violations.push('runAsNonRoot must be true');
  if ((context.runAsUser ?? podSecurityContext.runAsUser) === 0) violations.push('runAsUser must not be 0');
  const seccomp = context.seccompProfile?.type ?? podSecurityContext.seccompProfile?.type;
  if (seccomp !== 'RuntimeDefault' && seccomp !== 'Localhost') violations.push(`seccompProfile.type must be RuntimeDefault or Localhost, got ${seccomp}`);
  return violations;
}

describe('the status annotation', () => {
  test('formatStatus lists each name once, in the order first seen, for short and long lists alike', () => {
    const name = fc.constantFrom('envoy', 'wait-for-it', 'nginx-sidecar', 'probe-defaults', 'a', 'b', 'c', 'd', 'e', 'f');
    fc.assert(
      fc.property(fc.array(name, { maxLength: 14 }), (names) => {
        assert.equal(formatStatus(names), [...new Set(names)].join(','), JSON.stringify(names));
      }),
      { numRuns: 2000 },
    );
  });
});

describe('the Pod Security "restricted" check of these tests', () => {
  test('passes the restricted securityContext and flags each field left out or weakened', () => {
    const container = { name: 'proxy', image: 'envoy', securityContext: RESTRICTED_SECURITY_CONTEXT };
    assert.deepEqual(restrictedViolations(container), []);
    for (const field of Object.keys(RESTRICTED_SECURITY_CONTEXT)) {
      const { [field]: _left, ...weaker } = RESTRICTED_SECURITY_CONTEXT;
      assert.notDeepEqual(restrictedViolations({ ...container, securityContext: weaker }), [], `without ${field}`);
    }
    assert.notDeepEqual(restrictedViolations({ ...container, securityContext: { ...RESTRICTED_SECURITY_CONTEXT, privileged: true } }), []);
    assert.notDeepEqual(restrictedViolations({ ...container, securityContext: { ...RESTRICTED_SECURITY_CONTEXT, runAsUser: 0 } }), []);
    assert.notDeepEqual(
      restrictedViolations({ ...container, securityContext: { ...RESTRICTED_SECURITY_CONTEXT, capabilities: { drop: ['ALL'], add: ['NET_ADMIN'] } } }),
      [],
    );
    assert.notDeepEqual(restrictedViolations({ ...container, ports: [{ containerPort: 80, hostPort: 80 }], securityContext: RESTRICTED_SECURITY_CONTEXT }), []);
  });

  test('accepts runAsNonRoot and seccompProfile from the pod level', () => {
    const { runAsNonRoot: _r, seccompProfile: _s, ...containerLevel } = RESTRICTED_SECURITY_CONTEXT;
    const container = { name: 'proxy', image: 'envoy', securityContext: containerLevel };
    assert.deepEqual(restrictedViolations(container, { runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } }), []);
  });
});

// ---------------------------------------------------------------------------------------------
// The counterexamples the properties found, kept as named regressions (minimal, on recordings).

function sleepPod(): AdmissionRequest & { object: Json } {
  return loadReview('pod-create-sleep').request;
}

function resolve(config: InjectorConfig): ResolvedInjectorConfig {
  return resolveInjectorConfig(config);
}

describe('reinvocation, on the counterexamples the properties found', () => {
  test('does not inject on reinvocation what a label added by an earlier injection now selects', () => {
    const config = resolve({
      injections: [
        { name: 'mesh-label', trigger: { type: 'always' }, labels: { mesh: 'on' } },
        { name: 'proxy', trigger: { type: 'labelSelector', matchLabels: { mesh: 'on' } }, containers: [{ name: 'proxy', image: 'envoy' }] },
      ],
    });
    const request = sleepPod();
    const { patched } = run(request, config);
    const again = evaluate({ ...request, object: patched }, config);
    assert.deepEqual(again.patch, [], `first pass: ${containersSummary(patched)}; second pass decisions ${JSON.stringify(again.decisions)}`);
  });

  test('does not add env on reinvocation to a container an earlier injection added', () => {
    const config = resolve({
      injections: [
        { name: 'proxy', trigger: { type: 'always' }, containers: [{ name: 'proxy', image: 'envoy' }], env: [{ name: 'MESH', value: 'on' }] },
        { name: 'logging', trigger: { type: 'always' }, env: [{ name: 'MESH', value: 'off' }] },
      ],
    });
    const request = sleepPod();
    const { result, patched } = run(request, config);
    const again = evaluate({ ...request, object: patched }, config);
    assert.deepEqual(
      again.patch,
      [],
      `first pass decisions ${JSON.stringify(result.decisions)} gave ${containersSummary(patched)}; reinvoked decisions ${JSON.stringify(again.decisions)}`,
    );
  });

  test('does not override on reinvocation a merge that conflicted with an earlier injection\'s merge', () => {
    const config = resolve({
      injections: [
        { name: 'a', trigger: { type: 'always' }, merges: [{ containerNames: ['sleep'], fields: { readinessProbe: { initialDelaySeconds: 10 } }, whenMissing: 'create' }] },
        { name: 'b', trigger: { type: 'always' }, merges: [{ containerNames: ['sleep'], fields: { readinessProbe: { periodSeconds: 5 } }, whenMissing: 'create' }] },
      ],
    });
    const request = sleepPod();
    const { result, patched } = run(request, config);
    const again = evaluate({ ...request, object: patched }, config);
    assert.deepEqual(again.patch, [], `first patch ${JSON.stringify(result.patch)}, warnings ${JSON.stringify(result.response.warnings)}`);
  });

  test('does not merge on reinvocation into a container another injection added', () => {
    const config = resolve({
      injections: [
        { name: 'proxy', trigger: { type: 'always' }, containers: [{ name: 'envoy', image: 'envoy' }] },
        { name: 'probe', trigger: { type: 'always' }, merges: [{ containerNames: ['envoy'], fields: { readinessProbe: { periodSeconds: 5 } }, whenMissing: 'create' }] },
      ],
    });
    const request = sleepPod();
    const { patched } = run(request, config);
    const again = evaluate({ ...request, object: patched }, config);
    assert.deepEqual(again.patch, [], `reinvoked decisions ${JSON.stringify(again.decisions)}`);
  });
});

describe('labels and annotations, on the counterexamples the properties found', () => {
  test('adds label "constructor" (a valid key that every JavaScript object also has) to a pod that has labels', () => {
    const config = resolve({ injections: [{ name: 'mesh', trigger: { type: 'always' }, labels: { constructor: 'mesh' } }] });
    const { result, patched } = run(sleepPod(), config);
    assert.equal(patched.metadata.labels.constructor, 'mesh', `labels ${JSON.stringify(patched.metadata.labels)}; warnings ${JSON.stringify(result.response.warnings)}`);
  });
});

describe('wrong types that only a client other than the apiserver sends, on the counterexamples the server fuzzing found', () => {
  const config = resolve({ injections: [{ name: 'envoy', trigger: { type: 'always' }, containers: [{ name: 'envoy', image: 'envoy' }] }] });

  for (const [key, value] of [
    ['sidecar-injector.io/inject', 5],
    ['sidecar-injector.io/inject', ['envoy']],
    ['sidecar-injector.io/status', { envoy: true }],
    ['sidecar-injector.io/status', true],
  ] as const) {
    test(`admits a pod whose ${key} annotation is ${JSON.stringify(value)} instead of a string`, () => {
      const request = sleepPod();
      request.object.metadata.annotations[key] = value;
      let result: MutationResult | undefined;
      assert.doesNotThrow(() => (result = evaluate(request, config)));
      assert.equal(result!.response.allowed, true);
      assert.equal(result!.response.uid, request.uid);
    });
  }

  test('rejects an AdmissionReview whose kind is nested 100 000 deep as a bad review, not with a RangeError', () => {
    const deep = JSON.parse('['.repeat(100_000) + ']'.repeat(100_000));
    for (const field of ['kind', 'apiVersion']) {
      const body = { apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', [field]: deep };
      assert.throws(() => decodeAdmissionReview(body), BadAdmissionReview, `${field} nested 100 000 deep`);
    }
  });
});
