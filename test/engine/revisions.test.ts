// The engine under one revision's view of the config (issue 37): the revision's own containers, the
// revision recorded on the pod, nothing more on a second call; and the answer for a label that names
// nothing served, warned or refused, never silent.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { resolveInjectorConfig, revisionConfig } from '../../webhook/config';
import { evaluate, unservedRevisionAnswer } from '../../webhook/engine';
import { applyResponse, loadReview, podOf } from '../support/recorded-reviews';
import { ENVOY_V1, ENVOY_V2, revisionedConfig } from '../support/revision-fixtures';

const config = resolveInjectorConfig(revisionedConfig());

test("each revision injects its own Envoy and records itself; its own output is left alone", () => {
  for (const [revision, image] of [['r1', ENVOY_V1], ['r2', ENVOY_V2]] as const) {
    const review = loadReview('pod-create-sleep');
    const view = revisionConfig(config, revision)!;
    const first = evaluate(review.request, view);
    const pod = podOf(applyResponse(review.request.object, first.response));
    assert.equal(pod.spec.containers.find((c: any) => c.name === 'envoy').image, image);
    assert.equal(pod.metadata.annotations['sidecar-injector.io/revision'], revision);
    assert.equal(pod.metadata.annotations['sidecar-injector.io/status'], 'envoy');
    const again = evaluate({ ...review.request, object: pod }, view);
    assert.equal(again.response.patch, undefined, 'reinvoked on its own output, the revision changes nothing');
    // The other revision, called on this pod (a stale entry, a reinvocation), adds nothing either.
    const other = revisionConfig(config, revision === 'r1' ? 'r2' : 'r1')!;
    assert.equal(evaluate({ ...review.request, object: pod }, other).response.patch, undefined);
  }
});

test('without revisions the pod gets no revision annotation', () => {
  const review = loadReview('pod-create-sleep');
  const plain = resolveInjectorConfig({ injections: revisionedConfig().revisions![0].injections });
  const pod = podOf(applyResponse(review.request.object, evaluate(review.request, plain).response));
  assert.equal(pod.metadata.annotations['sidecar-injector.io/revision'], undefined);
  assert.equal(pod.metadata.annotations['sidecar-injector.io/status'], 'envoy');
});

test('a label naming nothing served is admitted with a warning that names it, or refused', () => {
  const review = loadReview('pod-create-sleep');
  review.request.object.metadata.labels = { ...review.request.object.metadata.labels, 'sidecar-injector.io/rev': 'canery' };
  const warned = unservedRevisionAnswer(review.request, config, 'workload').response;
  assert.equal(warned.allowed, true);
  assert.equal(warned.patch, undefined);
  assert.deepEqual(warned.warnings, ['label sidecar-injector.io/rev="canery" names no revision or tag this injector serves (served: r1, r2, stable, canary): admitted without sidecars']);
  const byNamespace = unservedRevisionAnswer(review.request, config, 'namespace').response;
  assert.match(byNamespace.warnings![0], /^namespace "shop" is labelled sidecar-injector\.io\/rev with no revision or tag this injector serves \(served: r1, r2, stable, canary\)/);
  const refusing = resolveInjectorConfig({ ...revisionedConfig(), unservedRevision: 'refuse' });
  const refused = unservedRevisionAnswer(review.request, refusing, 'workload').response;
  assert.equal(refused.allowed, false);
  assert.equal(refused.status!.code, 403);
  assert.match(refused.status!.message, /names no revision or tag this injector serves .*: refused$/);
  const missing = unservedRevisionAnswer(review.request, config, { revision: 'r9' }).response;
  assert.match(missing.warnings![0], /webhook entry for revision "r9" reached a replica whose loaded config does not have it/);
  // An opted-out pod gets nothing anyway: nothing to warn about.
  review.request.object.metadata.annotations = { 'sidecar-injector.io/inject': 'false' };
  assert.deepEqual(unservedRevisionAnswer(review.request, refusing, 'workload').response, { uid: review.request.uid, allowed: true });
});

test("a pod made from a template another revision injected records the revision of its own injection", () => {
  const withTemplateInjection = (image: string) => [
    { name: 'mesh-label', trigger: { type: 'always' as const }, targetKinds: ['Deployment' as const], annotations: { 'mesh.example.com/enrolled': 'true' } },
    { ...revisionedConfig().revisions![0].injections[0], containers: [{ name: 'envoy', image }] },
  ];
  const mixed = resolveInjectorConfig({
    injections: [],
    revisions: [{ name: 'r1', injections: withTemplateInjection(ENVOY_V1) }, { name: 'r2', injections: withTemplateInjection(ENVOY_V2) }],
    tags: [{ name: 'stable', revision: 'r2', default: true }],
  });
  const deployment = loadReview('deployment-create-frontend');
  const stored = applyResponse(deployment.request.object, evaluate(deployment.request, revisionConfig(mixed, 'r1')!).response);
  assert.equal(stored.spec.template.metadata.annotations['sidecar-injector.io/revision'], 'r1');
  const review = loadReview('pod-create-sleep');
  const fromTemplate = { ...review.request.object, metadata: { ...review.request.object.metadata, annotations: { ...stored.spec.template.metadata.annotations } } };
  const r2 = revisionConfig(mixed, 'r2')!;
  const pod = podOf(applyResponse(fromTemplate, evaluate({ ...review.request, object: fromTemplate }, r2).response));
  assert.equal(pod.metadata.annotations['sidecar-injector.io/revision'], 'r2');
  assert.equal(pod.spec.containers.find((c: any) => c.name === 'envoy').image, ENVOY_V2);
  assert.equal(evaluate({ ...review.request, object: pod }, r2).response.patch, undefined, 'and a second call changes nothing');
});
