// The CLI answers as a kubectl plugin: kubectl runs `kubectl-sidecar_injector` from PATH for
// `kubectl sidecar-injector ...` (a dash in a plugin's name is an underscore in its file's name), and
// the plugin prints what the command prints. The package installs the file as a second bin.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import { KUBECTL_PLUGIN_FILE, KUBECTL_PLUGIN_NAME, PROGRAM_NAME, programNameFor } from '../../webhook/cli/program';
import { CLI_MAIN, REPO_ROOT, describeRun, runCliProcess } from '../support/cli-process';
import { makeTempDir } from '../support/synth-helpers';

const KUBECTL = '/usr/bin/kubectl';
const kubectlMissing = fs.existsSync(KUBECTL) ? false : `skipped: no ${KUBECTL}`;

test('package.json installs the command and the kubectl plugin from the same file', () => {
  const manifest = JSON.parse(fs.readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8'));
  assert.deepEqual(manifest.bin, { [PROGRAM_NAME]: 'lib/webhook/cli/main.js', [KUBECTL_PLUGIN_FILE]: 'lib/webhook/cli/main.js' });
  assert.equal(programNameFor('/usr/local/bin/kubectl-sidecar_injector'), KUBECTL_PLUGIN_NAME);
  assert.equal(programNameFor('/usr/local/lib/node_modules/cdk8s-sidecar-injector/lib/webhook/cli/main.js'), PROGRAM_NAME);
  assert.equal(programNameFor(undefined), PROGRAM_NAME);
});

test('kubectl finds kubectl-sidecar_injector on PATH, lists it, and the plugin prints what the command prints', { skip: kubectlMissing }, () => {
  const dir = makeTempDir('kubectl-plugin');
  const bin = path.join(dir, 'bin');
  fs.mkdirSync(bin);
  // What npm's bin link does, from the sources: a file of the plugin's name that runs the CLI's main.
  fs.writeFileSync(path.join(bin, KUBECTL_PLUGIN_FILE), `#!/usr/bin/env -S ${process.execPath} --import tsx\nrequire(${JSON.stringify(CLI_MAIN)});\n`, { mode: 0o755 });
  const config = path.join(dir, 'config.json');
  fs.writeFileSync(config, JSON.stringify({ injections: [{ name: 'envoy', trigger: { type: 'always' }, containers: [{ name: 'envoy', image: 'envoyproxy/envoy:v1.31.1' }] }] }));
  const pod = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'web', namespace: 'shop' }, spec: { containers: [{ name: 'app', image: 'app:1' }] } };
  const stdin = JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [{ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'shop' } }, pod] });
  const env = { ...process.env, PATH: `${bin}${path.delimiter}${process.env.PATH ?? ''}`, KUBECONFIG: path.join(dir, 'none') };
  const kubectl = (args: string[]) => {
    const run = spawnSync(KUBECTL, args, { cwd: REPO_ROOT, env, input: stdin, encoding: 'utf8', timeout: 60_000 });
    return { status: run.status, stdout: run.stdout, stderr: run.stderr };
  };

  const listed = kubectl(['plugin', 'list']);
  assert.match(listed.stdout, new RegExp(`${bin.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}/${KUBECTL_PLUGIN_FILE}`), describeRun(listed));

  const args = ['status', '--config', config, '--stdin'];
  const direct = runCliProcess(args, { stdin });
  const plugin = kubectl(['sidecar-injector', ...args]);
  assert.equal(direct.status, 4, describeRun(direct));
  assert.deepEqual(plugin, direct, `kubectl sidecar-injector ${args.join(' ')}:\n${describeRun(plugin)}`);
  assert.match(plugin.stdout, /envoy: missing from 1 pod/);

  const help = kubectl(['sidecar-injector', '--help']);
  assert.equal(help.status, 0, describeRun(help));
  assert.match(help.stdout, /^Usage: kubectl sidecar-injector \[options\] \[command\]/, 'usage names the command as it was called');
});
