// @kubernetes/client-node (large, ESM) is loaded only when a command reads a cluster: never by the
// construct library's entry point, the CLI's program, or `status` on stdin. A module loader hook
// records every resolution of it; connecting to a cluster is the control that the hook sees it.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
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
