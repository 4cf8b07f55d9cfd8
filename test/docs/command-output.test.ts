// The command output shown in docs/preview-explain.md is what the command prints: each
// `$ npx cdk8s-sidecar-injector ...` line of a ```console block is run (through tsx, as `npm run cli`
// does) in a directory holding the page's own app.yaml, the files its `$ cat` lines show, and dist/
// from the default app, and must print exactly the lines that follow it.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import MarkdownIt from 'markdown-it';
import { spawnSync } from 'node:child_process';
import { pathToFileURL } from 'node:url';
import { CLI_MAIN, CliRun, describeRun } from '../support/cli-process';
import { REPO_ROOT } from '../support/markdown-docs';
import { makeTempDir, synthDefaultAppToTemp } from '../support/synth-helpers';

const PAGE = 'docs/preview-explain.md';
const COMMAND = '$ npx cdk8s-sidecar-injector ';

interface Fence {
  readonly language: string;
  readonly line: number;
  readonly content: string;
}

interface ShownRun {
  readonly line: number;
  readonly args: string[];
  readonly stdout: string;
  readonly stderr?: string;
}

const fences: Fence[] = new MarkdownIt({ html: true })
  .parse(fs.readFileSync(path.join(REPO_ROOT, PAGE), 'utf8'), {})
  .filter((token) => token.type === 'fence' && token.map)
  .map((token) => ({ language: token.info.trim(), line: token.map![0] + 1, content: token.content }));

/** The commands the page shows and what it says they print; `$ cat` lines become input files. */
function shownRuns(files: Map<string, string>): ShownRun[] {
  const runs: ShownRun[] = [];
  fences.forEach((fence, index) => {
    if (fence.language !== 'console') return;
    const lines = fence.content.replace(/\n$/, '').split('\n');
    for (let start = 0; start < lines.length; start++) {
      if (!lines[start].startsWith('$ ')) continue;
      let end = start + 1;
      while (end < lines.length && !lines[end].startsWith('$ ')) end++;
      const output = lines.slice(start + 1, end).join('\n');
      const command = lines[start];
      if (command.startsWith('$ cat ')) files.set(command.slice('$ cat '.length), `${output}\n`);
      else if (command.startsWith(COMMAND)) {
        const args = command.slice(COMMAND.length).split(/\s+/);
        if (output !== '') runs.push({ line: fence.line + 1 + start, args, stdout: `${output}\n` });
        else {
          // A command with a long output shows it below: stdout in the next fence, stderr in the one after.
          const [stdout, stderr] = [fences[index + 1], fences[index + 2]];
          assert.ok(stdout && stderr, `${PAGE}:${fence.line + 1 + start}: "${command}" shows no output, and no two fences follow with its stdout and stderr`);
          runs.push({ line: fence.line + 1 + start, args, stdout: stdout.content, stderr: stderr.content });
        }
      } else assert.fail(`${PAGE}:${fence.line + 1 + start}: a console line the test cannot run: ${command}`);
    }
  });
  return runs;
}

/** Runs the CLI as `npm run cli` does, in `cwd`, so paths in its messages are the page's relative ones. */
function runCliIn(cwd: string, args: readonly string[]): CliRun {
  // tsx by its file URL: `--import tsx` would be looked up from cwd, a temp dir without node_modules.
  const tsx = pathToFileURL(require.resolve('tsx', { paths: [REPO_ROOT] })).href;
  const result = spawnSync(process.execPath, ['--import', tsx, CLI_MAIN, ...args], { cwd, encoding: 'utf8', timeout: 60_000 });
  if (result.error) throw result.error;
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

describe(`the command output in ${PAGE}`, () => {
  const files = new Map<string, string>();
  const firstConsole = fences.findIndex((fence) => fence.language === 'console');
  const app = fences[firstConsole - 1];
  assert.ok(app && app.language === 'yaml', `${PAGE}: a yaml fence (app.yaml) comes right before the first console block`);
  files.set('app.yaml', app.content);
  const runs = shownRuns(files);
  const dir = makeTempDir('preview-docs');
  synthDefaultAppToTemp(undefined, path.join(dir, 'dist'));
  for (const [name, text] of files) fs.writeFileSync(path.join(dir, name), text);

  test('shows inject, explain and diff', () => {
    assert.deepEqual([...new Set(runs.map((run) => run.args[0]))].sort(), ['diff', 'explain', 'inject']);
  });

  for (const shown of runs) {
    test(`${PAGE}:${shown.line}: ${shown.args.join(' ')} prints what the page shows`, () => {
      const run = runCliIn(dir, shown.args);
      assert.equal(run.status, 0, describeRun(run));
      assert.equal(run.stdout, shown.stdout, `stdout differs from ${PAGE}:${shown.line}; paste the real output`);
      if (shown.stderr !== undefined) assert.equal(run.stderr, shown.stderr, `stderr differs from ${PAGE}:${shown.line}; paste the real output`);
    });
  }
});
