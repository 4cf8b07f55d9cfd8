// Preview with revisions (issue 37): `inject`, `explain` and `diff` follow the webhook entry the
// apiserver would call (with --from), or the labels (with --config), and take --revision to preview a
// tag or revision whatever the labels say; a label naming nothing served previews as the webhook's warning.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import { parseAllDocuments } from 'yaml';
import { runCli } from '../../webhook/cli/program';
import { findManifest, makeTempDir, synthChart } from '../support/synth-helpers';
import { ENVOY_V1, ENVOY_V2, envoyInjection } from '../support/revision-fixtures';

const dir = makeTempDir('revisions-preview');
const { yamlText, manifests } = synthChart({
  revisions: [
    { name: 'r1', injections: [envoyInjection(ENVOY_V1)] },
    { name: 'r2', injections: [envoyInjection(ENVOY_V2)] },
  ],
  tags: [{ name: 'stable', revision: 'r1', default: true }, { name: 'canary', revision: 'r2' }],
});
const dist = path.join(dir, 'dist.yaml');
fs.writeFileSync(dist, yamlText);
const configFile = path.join(dir, 'config.json');
fs.writeFileSync(configFile, findManifest(manifests, 'ConfigMap').data['config.json']);
const podFile = (labels: Record<string, string>) => {
  const file = path.join(dir, `pod-${Object.values(labels).join('-') || 'plain'}.yaml`);
  fs.writeFileSync(file, JSON.stringify({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'web', namespace: 'shop', labels }, spec: { containers: [{ name: 'app', image: 'app:1' }] } }));
  return file;
};

async function cli(args: string[]) {
  let stdout = '';
  let stderr = '';
  const code = await runCli(args, { stdout: (text) => void (stdout += text), stderr: (text) => void (stderr += text), readStdin: () => '' });
  return { code, stdout, stderr };
}
const envoyImage = (stdout: string) => parseAllDocuments(stdout)[0].toJS().spec.containers.find((c: any) => c.name === 'envoy')?.image;

test('inject follows the entry the apiserver calls: the default tag, the namespace label, the pod label', async () => {
  const plain = podFile({});
  assert.equal(envoyImage((await cli(['inject', '-f', plain, '--from', dist, '--namespace-labels', 'injection=enabled'])).stdout), ENVOY_V1);
  assert.equal(envoyImage((await cli(['inject', '-f', plain, '--from', dist, '--namespace-labels', 'sidecar-injector.io/rev=canary'])).stdout), ENVOY_V2);
  const canary = podFile({ 'sidecar-injector.io/rev': 'canary' });
  assert.equal(envoyImage((await cli(['inject', '-f', canary, '--from', dist, '--namespace-labels', 'injection=enabled'])).stdout), ENVOY_V2);
  // --config has no webhook entries: the labels choose, as the entries would.
  assert.equal(envoyImage((await cli(['inject', '-f', canary, '--config', configFile])).stdout), ENVOY_V2);
  assert.equal(envoyImage((await cli(['inject', '-f', plain, '--config', configFile])).stdout), ENVOY_V1);
});

test('--revision previews a tag or a revision whatever the labels say; an unknown one is a usage error naming what is served', async () => {
  const plain = podFile({});
  assert.equal(envoyImage((await cli(['inject', '-f', plain, '--from', dist, '--namespace-labels', 'injection=enabled', '--revision', 'canary'])).stdout), ENVOY_V2);
  assert.equal(envoyImage((await cli(['inject', '-f', plain, '--config', configFile, '--revision', 'r1'])).stdout), ENVOY_V1);
  const wrong = await cli(['inject', '-f', plain, '--config', configFile, '--revision', 'r9']);
  assert.equal(wrong.code, 2);
  assert.match(wrong.stderr, /--revision "r9" names no revision or tag of the config \(served: r1, r2, stable, canary\)/);
});

test('explain names the revision and what chose it; a label naming nothing served previews the warning', async () => {
  const canary = podFile({ 'sidecar-injector.io/rev': 'canary' });
  const explained = await cli(['explain', '-f', canary, '--from', dist, '-o', 'json']);
  assert.equal(explained.code, 0, explained.stderr);
  const [object] = JSON.parse(explained.stdout);
  assert.equal(object.revision, 'r2 (webhook r2.workload.inject.sidecar-injector.sidecar-injector.svc)');
  assert.deepEqual(object.injected, ['envoy']);
  const typo = podFile({ 'sidecar-injector.io/rev': 'canery' });
  const text = (await cli(['explain', '-f', typo, '--from', dist])).stdout;
  assert.match(text, /revision: none: its sidecar-injector\.io\/rev label names nothing served/);
  assert.match(text, /label sidecar-injector\.io\/rev="canery" names no revision or tag this injector serves \(served: r1, r2, stable, canary\): admitted without sidecars/);
  const diff = await cli(['diff', '-f', canary, '--config', configFile, '-o', 'json']);
  assert.ok(JSON.stringify(JSON.parse(diff.stdout)).includes(ENVOY_V2));
});
