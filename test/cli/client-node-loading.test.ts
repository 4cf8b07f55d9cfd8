// @kubernetes/client-node (large, ESM) is loaded only when a command reads a cluster: never by the
// construct library's entry point, the CLI's program, or `status` on stdin. A module loader hook
// records every resolution of it; connecting to a cluster is the control that the hook sees it.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import { CLUSTER_CLIENT_PACKAGE, CLUSTER_CLIENT_RANGE } from '../../webhook/cli/cluster';
import { REPO_ROOT } from '../support/cli-process';
import { makeTempDir } from '../support/synth-helpers';

test('the construct entry point, the CLI program and status --stdin never load @kubernetes/client-node; connecting does', () => {
  const dir = makeTempDir('client-node-loading');
  const log = path.join(dir, 'resolved.log');
  fs.writeFileSync(
    path.join(dir, 'hooks.mjs'),
    "import { appendFileSync } from 'node:fs';\n" +
      'export async function resolve(specifier, context, next) {\n' +
      "  if (specifier.startsWith('@kubernetes/client-node')) appendFileSync(process.env.CLIENT_NODE_LOG, specifier + '\\n');\n" +
      '  return next(specifier, context);\n}\n',
  );
  fs.writeFileSync(path.join(dir, 'register.mjs'), "import { register } from 'node:module';\nregister(new URL('./hooks.mjs', import.meta.url));\n");
  fs.writeFileSync(path.join(dir, 'config.json'), JSON.stringify({ injections: [{ name: 'envoy', trigger: { type: 'always' }, containers: [{ name: 'envoy', image: 'envoy:1' }] }] }));
  const script = `
    const fs = require('node:fs');
    const seen = () => fs.existsSync(${JSON.stringify(log)});
    require('./charts/index.ts');
    const { runCli } = require('./webhook/cli/program.ts');
    const io = { stdout: () => {}, stderr: () => {}, readStdin: () => JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [] }) };
    (async () => {
      const code = await runCli(['status', '--config', ${JSON.stringify(path.join(dir, 'config.json'))}, '--stdin'], io);
      const before = seen();
      await require('./webhook/cli/cluster.ts').connect('/nonexistent/kubeconfig').catch(() => {});
      console.log(JSON.stringify({ code, before, after: seen() }));
    })();`;
  const run = spawnSync(process.execPath, ['--import', path.join(dir, 'register.mjs'), '--import', 'tsx', '-e', script], {
    cwd: REPO_ROOT,
    encoding: 'utf8',
    env: { ...process.env, CLIENT_NODE_LOG: log },
    timeout: 60_000,
  });
  assert.equal(run.status, 0, run.stderr);
  assert.deepEqual(JSON.parse(run.stdout.trim().split('\n').pop()!), { code: 0, before: false, after: true }, run.stderr);
});

test('the cluster client is no dependency nor peer (jsii takes every peer for a jsii library), built against the lowest version the missing-client message names', () => {
  const manifest = JSON.parse(fs.readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8'));
  assert.equal(manifest.dependencies[CLUSTER_CLIENT_PACKAGE], undefined, 'not a dependency: a project that only synthesizes does not install it');
  assert.equal(manifest.peerDependencies[CLUSTER_CLIENT_PACKAGE], undefined, 'no peer: jsii would look for its .jsii assembly');
  assert.equal(`^${manifest.devDependencies[CLUSTER_CLIENT_PACKAGE]}`, CLUSTER_CLIENT_RANGE, 'built and tested against the lowest version of the range');
});

test('without the cluster client, status and rollout say in one line what to install and exit 2; status on stdin works', () => {
  const dir = makeTempDir('client-node-missing');
  // Resolution of the package fails as it does where it is not installed.
  fs.writeFileSync(
    path.join(dir, 'hooks.mjs'),
    'export async function resolve(specifier, context, next) {\n' +
      "  if (specifier.startsWith('@kubernetes/client-node')) { const error = new Error(`Cannot find package '@kubernetes/client-node' imported from ${context.parentURL}`); error.code = 'ERR_MODULE_NOT_FOUND'; throw error; }\n" +
      '  return next(specifier, context);\n}\n',
  );
  fs.writeFileSync(path.join(dir, 'register.mjs'), "import { register } from 'node:module';\nregister(new URL('./hooks.mjs', import.meta.url));\n");
  const config = path.join(dir, 'config.json');
  fs.writeFileSync(config, JSON.stringify({ injections: [{ name: 'envoy', trigger: { type: 'always' }, containers: [{ name: 'envoy', image: 'envoy:1' }] }] }));
  const run = (args: string[], input = '') =>
    spawnSync(process.execPath, ['--import', path.join(dir, 'register.mjs'), '--import', 'tsx', path.join(REPO_ROOT, 'webhook/cli/main.ts'), ...args], { cwd: REPO_ROOT, encoding: 'utf8', input, timeout: 60_000 });
  const line = `error: status and rollout read the cluster through @kubernetes/client-node, an optional dependency that is not installed: npm install @kubernetes/client-node@${CLUSTER_CLIENT_RANGE}\n`;
  for (const args of [['status', '--config', config], ['rollout', '--config', config], ['rollout', '--in-place', '--config', config]]) {
    const result = run(args);
    assert.equal(result.status, 2, `${args.join(' ')}: ${result.stderr}`);
    assert.equal(result.stderr, line, args.join(' '));
  }
  const stdin = run(['status', '--config', config, '--stdin'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [] }));
  assert.equal(stdin.status, 0, stdin.stderr);
});
