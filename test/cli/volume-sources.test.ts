// What `status` finds about injected volumes' sources: the pods are made by the webhook's engine from
// the recorded pod review, so the volumes are the ones a cluster would store.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Injection, resolveInjectorConfig } from '../../webhook/config';
import { evaluate } from '../../webhook/engine';
import { createRequestFor } from '../../webhook/fleet/admission-request';
import { describeVolumeSourceFinding, injectedVolumeSources, lookupKey, mergeVolumeNeeds, missingVolumeSources, VolumeSourceLookup } from '../../webhook/cli/volume-sources';
import { applyResponse, loadReview } from '../support/recorded-reviews';

const PAGE: Injection = {
  name: 'page',
  trigger: { type: 'always' },
  containers: [{ name: 'nginx', image: 'nginx:1.27', volumeMounts: [{ name: 'conf', mountPath: '/etc/nginx' }, { name: 'certs', mountPath: '/certs' }] }],
  volumes: [
    { name: 'conf', configMap: { name: '{{name}}-nginx' } },
    {
      name: 'certs',
      projected: { sources: [{ secret: { name: 'tls' } }, { configMap: { name: 'ca', optional: true } }] },
    },
  ],
};
const CLAIM: Injection = { name: 'claim', trigger: { type: 'labelSelector', matchLabels: { data: 'yes' } }, volumes: [{ name: 'shared-data', persistentVolumeClaim: { claimName: 'shared' } }] };
const CONFIG = resolveInjectorConfig({ injections: [PAGE, CLAIM] });

/** The recorded pod, named `name` in `namespace`, as the apiserver stores it after the webhook's patch. */
function injectedPod(namespace: string, name: string, labels: Record<string, string> = {}, phase = 'Pending'): any {
  const pod = loadReview('pod-create-sleep').request.object;
  pod.metadata = { ...pod.metadata, name, namespace, labels: { ...pod.metadata.labels, ...labels } };
  delete pod.metadata.generateName;
  const result = evaluate(createRequestFor(pod, namespace, 'test'), CONFIG);
  return { ...applyResponse(pod, result.response), status: { phase } };
}

test('each source an injected volume needs is looked for in the pod\'s own namespace, placeholders filled in as the pod has them, optional ones left out', () => {
  const pods = [injectedPod('shop', 'web', { data: 'yes' }), injectedPod('shop', 'api', {}, 'Running'), injectedPod('blog', 'web')];
  const needs = injectedVolumeSources(pods, CONFIG);
  assert.deepEqual(
    needs.map((need) => `${need.namespace} ${need.injection}/${need.volume} ${need.kind} ${need.name} pods=${need.pods.join('+')} pending=${need.pending.join('+')}`),
    [
      'blog page/certs Secret tls pods=web pending=web',
      'blog page/conf ConfigMap web-nginx pods=web pending=web',
      'shop claim/shared-data PersistentVolumeClaim shared pods=web pending=web',
      'shop page/certs Secret tls pods=web+api pending=web',
      'shop page/conf ConfigMap api-nginx pods=api pending=',
      'shop page/conf ConfigMap web-nginx pods=web pending=web',
    ],
  );
});

test('needs found a page of pods at a time, merged, are the needs of all the pods at once', () => {
  const pods = [injectedPod('shop', 'web', { data: 'yes' }), injectedPod('shop', 'api', {}, 'Running'), injectedPod('blog', 'web'), injectedPod('shop', 'db', { data: 'yes' })];
  const whole = injectedVolumeSources(pods, CONFIG);
  for (const size of [1, 2, 3]) {
    const pages = Array.from({ length: Math.ceil(pods.length / size) }, (_, index) => injectedVolumeSources(pods.slice(index * size, (index + 1) * size), CONFIG));
    assert.deepEqual(mergeVolumeNeeds(pages), whole, `pages of ${size} pods (actual) against all the pods at once (expected)`);
  }
  assert.deepEqual(mergeVolumeNeeds([]), []);
});

test('a pod whose own volume won the name is checked for its own source, and a pod without the injection for none', () => {
  const pod = injectedPod('shop', 'web');
  pod.spec.volumes = pod.spec.volumes.map((volume: any) => (volume.name === 'conf' ? { name: 'conf', configMap: { name: 'mine' } } : volume));
  const bare = loadReview('pod-create-sleep').request.object;
  const needs = injectedVolumeSources([pod, { ...bare, metadata: { ...bare.metadata, namespace: 'shop' } }], CONFIG);
  assert.deepEqual(needs.filter((need) => need.volume === 'conf').map((need) => need.name), ['mine']);
  assert.deepEqual(needs.flatMap((need) => need.pods), ['web', 'web']);
});

test('status reports a missing source with the pods waiting on it, and one it could not read as unknown, never as present', () => {
  const needs = injectedVolumeSources([injectedPod('shop', 'web'), injectedPod('blog', 'web', {}, 'Running')], CONFIG);
  const lookups = new Map<string, VolumeSourceLookup>([
    [lookupKey('shop', 'ConfigMap', 'web-nginx'), { found: false }],
    [lookupKey('shop', 'Secret', 'tls'), { error: 'secrets "tls" is forbidden: cannot get resource "secrets" in namespace "shop"' }],
    [lookupKey('blog', 'ConfigMap', 'web-nginx'), { found: true }],
    [lookupKey('blog', 'Secret', 'tls'), { found: false }],
  ]);
  assert.deepEqual(missingVolumeSources(needs, lookups).map(describeVolumeSourceFinding), [
    'page: volume certs needs Secret tls, missing in namespace blog (1 pod, 0 Pending: the kubelet cannot mount it)',
    'page: volume certs needs Secret tls in namespace shop, which could not be checked (secrets "tls" is forbidden: cannot get resource "secrets" in namespace "shop"; 1 pod)',
    'page: volume conf needs ConfigMap web-nginx, missing in namespace shop (1 pod, 1 Pending: the kubelet cannot mount it)',
  ]);
});
