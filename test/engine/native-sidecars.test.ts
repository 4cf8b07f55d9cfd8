// A sidecar added as a regular container keeps a Job's pod running, so the Job never completes. An
// injection can place its containers as native sidecars (init containers with restartPolicy Always)
// for Job pods or for every pod, first or last among the init containers; otherwise the response warns.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { DEFAULT_INJECTIONS } from '../../app/default-injections';
import { Injection, InjectorConfig, SidecarInjectorPropsError, resolveInjectorConfig } from '../../charts/engine';
import { evaluate } from '../../webhook/engine';
import { assertValidManifest } from '../support/openapi-validator';
import { applyResponse, loadReview, names, podOf } from '../support/recorded-reviews';
import { buildChart } from '../support/synth-helpers';

const JOB_OWNER = { apiVersion: 'batch/v1', kind: 'Job', name: 'nightly', uid: '6f1d7f7e-8d25-4c8e-9d1a-0c7d0c1e2a11', controller: true, blockOwnerDeletion: true };

/**
 * The recorded pod `sleep` (init container `setup`, containers `sleep` and `helper`), owned by a Job as
 * the Job controller creates it. No Job-owned pod was recorded, so the owner reference is added here.
 */
function jobOwnedPod() {
  const request = loadReview('pod-create-sleep').request;
  request.object.metadata.ownerReferences = [JOB_OWNER];
  return request;
}

function run(request: any, config: InjectorConfig) {
  const resolved = resolveInjectorConfig(config);
  const result = evaluate(request, resolved);
  const object = applyResponse(request.object, result.response);
  assertValidManifest(object);
  const again = evaluate({ ...request, object }, resolved);
  assert.deepEqual(again.patch, [], `reinvocation patched again: ${JSON.stringify(again.patch)}`);
  const pod = podOf(object);
  return { ...result, pod, warnings: result.response.warnings ?? [], summary: `containers [${names(pod.spec.containers)}], initContainers [${names(pod.spec.initContainers)}]` };
}

const proxy = (overrides: Partial<Injection> = {}): Injection => ({
  name: 'proxy',
  trigger: { type: 'always' },
  containers: [{ name: 'proxy', image: 'example.com/proxy:1.0' }],
  ...overrides,
});

describe('the default app\'s envoy', () => {
  test('in a pod a Job owns: envoy and sidecar-nginx are native sidecars, last among the init containers, and nothing warns about the Job', () => {
    const result = run(jobOwnedPod(), { injections: DEFAULT_INJECTIONS });
    assert.deepEqual(names(result.pod.spec.initContainers), ['setup', 'envoy', 'sidecar-nginx'], result.summary);
    assert.deepEqual(names(result.pod.spec.containers), ['sleep', 'helper'], result.summary);
    assert.deepEqual(result.pod.spec.initContainers.slice(1).map((container: { restartPolicy?: string }) => container.restartPolicy), ['Always', 'Always']);
    assert.deepEqual(result.podWarnings.filter((warning) => warning.reason === 'job-never-completes'), [], JSON.stringify(result.warnings));
  });

  test('in any other pod: a regular container, as seed 000 has it', () => {
    const result = run(loadReview('pod-create-sleep').request, { injections: DEFAULT_INJECTIONS });
    assert.deepEqual(names(result.pod.spec.containers), ['sleep', 'helper', 'envoy', 'sidecar-nginx'], result.summary);
    assert.deepEqual(names(result.pod.spec.initContainers), ['setup'], result.summary);
  });
});

describe('a regular container in a Job\'s pod', () => {
  test('is added, and the response warns that the Job will not complete, with a countable reason', () => {
    const result = run(jobOwnedPod(), { injections: [proxy()] });
    assert.deepEqual(names(result.pod.spec.containers), ['sleep', 'helper', 'proxy'], result.summary);
    assert.deepEqual(result.podWarnings.map(({ injection, reason }) => ({ injection, reason })), [{ injection: 'proxy', reason: 'job-never-completes' }]);
    assert.ok(
      result.warnings.some((text) => /injection "proxy" adds container "proxy" to a Job's pod as a regular container: the Job will not complete.*nativeSidecars: "jobs"/.test(text)),
      `warnings: ${JSON.stringify(result.warnings)}`,
    );
  });

  test('in a Job\'s pod template (recorded Job and CronJob): warned as well', () => {
    for (const review of ['job-create-batch-once', 'cronjob-create-nightly']) {
      const result = run(loadReview(review).request, { injections: [proxy({ targetKinds: ['Job', 'CronJob'] })] });
      assert.deepEqual(result.podWarnings.map((warning) => warning.reason), ['job-never-completes'], review);
    }
  });

  test('a pod no Job owns gets no such warning', () => {
    const result = run(loadReview('pod-create-sleep').request, { injections: [proxy()] });
    assert.deepEqual(result.podWarnings, []);
  });
});

describe('nativeSidecars', () => {
  test('"jobs" places the containers in a Job\'s and a CronJob\'s pod template as native sidecars, creating the list', () => {
    for (const review of ['job-create-batch-once', 'cronjob-create-nightly']) {
      const result = run(loadReview(review).request, { injections: [proxy({ targetKinds: ['Job', 'CronJob'], nativeSidecars: 'jobs' })] });
      assert.deepEqual(result.pod.spec.initContainers, [{ name: 'proxy', image: 'example.com/proxy:1.0', restartPolicy: 'Always' }], review);
      assert.deepEqual(result.podWarnings, [], review);
    }
  });

  test('"always" places them as native sidecars in every pod', () => {
    const result = run(loadReview('pod-create-demoapp').request, { injections: [proxy({ nativeSidecars: 'always' })] });
    assert.deepEqual(names(result.pod.spec.containers), ['demoapp'], result.summary);
    assert.deepEqual(result.pod.spec.initContainers, [{ name: 'proxy', image: 'example.com/proxy:1.0', restartPolicy: 'Always' }]);
  });

  test('position "first" puts them before the pod\'s own init containers, and merges into those still land on the right one', () => {
    const result = run(jobOwnedPod(), {
      injections: [
        proxy({ nativeSidecars: 'jobs', nativeSidecarPosition: 'first', containers: [{ name: 'proxy', image: 'example.com/proxy:1.0' }, { name: 'logs', image: 'example.com/logs:1.0' }] }),
        { name: 'setup-policy', trigger: { type: 'always' }, merges: [{ containerNames: ['setup'], fields: { terminationMessagePolicy: 'FallbackToLogsOnError' } }] },
      ],
    });
    assert.deepEqual(names(result.pod.spec.initContainers), ['proxy', 'logs', 'setup'], result.summary);
    assert.equal(result.pod.spec.initContainers[2].terminationMessagePolicy, 'FallbackToLogsOnError');
    assert.equal(result.pod.spec.initContainers[0].terminationMessagePolicy, undefined, 'the merge stays on "setup"');
  });

  test('position "first" in a pod without init containers creates the list', () => {
    const request = loadReview('pod-create-demoapp').request;
    request.object.metadata.ownerReferences = [JOB_OWNER];
    const result = run(request, { injections: [proxy({ nativeSidecars: 'jobs', nativeSidecarPosition: 'first' })] });
    assert.deepEqual(names(result.pod.spec.initContainers), ['proxy']);
  });

  test('an injection\'s own init containers stay regular init containers', () => {
    const result = run(jobOwnedPod(), {
      injections: [proxy({ nativeSidecars: 'jobs', initContainers: [{ name: 'proxy-init', image: 'example.com/proxy-init:1.0' }] })],
    });
    assert.deepEqual(names(result.pod.spec.initContainers), ['setup', 'proxy', 'proxy-init'], result.summary);
    assert.equal(result.pod.spec.initContainers[2].restartPolicy, undefined);
  });
});

describe('native sidecar options that make no sense fail synth, naming the prop path', () => {
  function issuesOf(injection: Injection) {
    try {
      buildChart({ injections: [injection] });
    } catch (error) {
      if (error instanceof SidecarInjectorPropsError) return error.issues;
      throw error;
    }
    assert.fail('expected synth to fail');
  }

  test('nativeSidecars on an injection without containers', () => {
    const issues = issuesOf({ name: 'init', trigger: { type: 'always' }, initContainers: [{ name: 'init', image: 'busybox:1.36' }], nativeSidecars: 'jobs' });
    assert.deepEqual(issues.map((issue) => issue.path), ['injections[0].nativeSidecars']);
  });

  test('nativeSidecarPosition without nativeSidecars', () => {
    const issues = issuesOf(proxy({ nativeSidecarPosition: 'first' }));
    assert.deepEqual(issues.map((issue) => `${issue.path}: ${issue.message}`), ['injections[0].nativeSidecarPosition: only applies with nativeSidecars "jobs" or "always"']);
  });

  test('a value that is not one of the choices', () => {
    const issues = issuesOf(proxy({ nativeSidecars: 'sometimes' as never }));
    assert.deepEqual(issues.map((issue) => `${issue.path}: ${issue.message}`), ['injections[0].nativeSidecars: string "sometimes" is not one of never, jobs, always']);
  });
});
