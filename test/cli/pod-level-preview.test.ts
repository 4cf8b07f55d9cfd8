// `explain` and `inject` preview what the injection does to a pod that sets pod-level resources: the
// pod's spec.resources as the webhook raises it, and the warning that says by how much.
import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import { parseAllDocuments } from 'yaml';
import { runCli } from '../../webhook/cli/program';
import { websitePod } from '../support/pod-level-resources';
import { synthDefaultAppToTemp } from '../support/synth-helpers';

let dist: string;
before(() => {
  dist = synthDefaultAppToTemp().outdir;
});

async function run(args: string[], stdin: string): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const code = await runCli(args, { stdout: (text) => void (stdout += text), stderr: (text) => void (stderr += text), readStdin: () => stdin });
  return { code, stdout, stderr };
}

const WEBSITE_POD = websitePod();
const WARNING = `injection "envoy" adds its containers' requests and limits to the pod's spec.resources (podResources "add"): requests cpu 1→1100m; limits cpu 1→1100m; requests memory 100Mi→228Mi; limits memory 200Mi→456Mi`;

test("inject prints the website's pod with spec.resources raised by Envoy's, and the warning on stderr", async () => {
  const injected = await run(['inject', '-f', '-', '--from', dist, '--namespace-labels', 'injection=enabled'], JSON.stringify(WEBSITE_POD));
  assert.equal(injected.code, 0, injected.stderr);
  const [pod] = parseAllDocuments(injected.stdout).map((document) => document.toJS());
  assert.deepEqual(pod.spec.resources, { limits: { cpu: '1100m', memory: '456Mi' }, requests: { cpu: '1100m', memory: '228Mi' } });
  assert.ok(injected.stderr.includes(WARNING), injected.stderr);
});

test('explain lists the same warning beside the decisions', async () => {
  const explained = await run(['explain', '-o', 'json', '-f', '-', '--from', dist, '--namespace-labels', 'injection=enabled'], JSON.stringify(WEBSITE_POD));
  assert.equal(explained.code, 0, explained.stderr);
  const [object] = JSON.parse(explained.stdout);
  assert.deepEqual(object.injected, ['envoy']);
  assert.deepEqual(object.warnings, [WARNING]);
});
