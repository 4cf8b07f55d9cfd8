// The dry-run probe's verdicts: a pod from the template comes back with the injection as configured
// (go on), without it (the injector is not injecting: wait), or the template itself carries it from a
// template injection (a restart would make the same pods: say so, and wait).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { probeInjection } from '../../webhook/reconciler/injection-probe';
import { reconcilerHarness } from '../support/reconciler-harness';

const PREFIX = 'sidecar-injector.io';
const template = (annotations: Record<string, string> = {}) => ({ metadata: { labels: { app: 'web' }, annotations }, spec: { containers: [{ name: 'app', image: 'nginx:1.27' }] } });

test('the probe tells an injector that injects, one that does not, and a template that carries the injection from before', async () => {
  const { kube } = reconcilerHarness();
  const created = await kube.request('POST', '/api/v1/namespaces/apps/pods', { body: { apiVersion: 'v1', kind: 'Pod', metadata: { namespace: 'apps', name: 'x' }, spec: template().spec }, query: { dryRun: 'All' } });
  const hash = created.metadata.annotations[`${PREFIX}/injection-hashes`].split('=')[1];
  const expected = new Map([['envoy', hash]]);
  assert.equal(await probeInjection(kube, PREFIX, 'apps', 'web', template(), expected), undefined);
  assert.equal(kube.list('', 'pods', 'apps').length, 0, 'dry runs store nothing');
  kube.injectorUp = false;
  assert.match((await probeInjection(kube, PREFIX, 'apps', 'web', template(), expected))!, /came back without envoy as configured now: the injector is not injecting it$/);
  kube.injectorUp = true;
  const stale = template({ [`${PREFIX}/status`]: 'envoy', [`${PREFIX}/injection-hashes`]: 'envoy=000000000000' });
  assert.match((await probeInjection(kube, PREFIX, 'apps', 'web', stale, expected))!, /^its pod template carries envoy as injected before \(a template injection\): a restart makes the same pods/);
});
