// The package's public API is documented: typedoc fails on any export without a description
// (typedoc.json: validation.notDocumented, treatValidationWarningsAsErrors), and API.md is the
// reference typedoc generates from the current sources (`npm run docs` regenerates it).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

const ROOT = path.resolve(__dirname, '../..');

test('every export has a description, and API.md (the jsii API) and docs/api/engine.md (the engine subpath) are what typedoc generates from the sources', () => {
  const out = fs.mkdtempSync(path.join(os.tmpdir(), 'sidecar-injector-api-'));
  try {
    // typedoc's "exports" do not include bin/typedoc: find it beside its package.json (which they do export).
    const typedocBin = path.join(path.dirname(require.resolve('typedoc/package.json', { paths: [ROOT] })), 'bin', 'typedoc');
    for (const [options, committedFile] of [['typedoc.json', 'API.md'], ['typedoc.engine.json', 'docs/api/engine.md']] as const) {
      const dir = path.join(out, options);
      const typedoc = spawnSync(process.execPath, [typedocBin, '--options', options, '--out', dir], {
        cwd: ROOT,
        encoding: 'utf8',
        env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0' },
      });
      const log = `${typedoc.stdout}${typedoc.stderr}`;
      const undocumented = log.split('\n').filter((line) => line.includes('does not have any documentation'));
      assert.deepEqual(undocumented, [], `${options}: exports without a description (${undocumented.length}); add a JSDoc sentence to each`);
      assert.equal(typedoc.status, 0, `${options}: typedoc failed:\n${log}`);
      const generated = fs.readFileSync(path.join(dir, 'API.md'), 'utf8');
      const committed = fs.existsSync(path.join(ROOT, committedFile)) ? fs.readFileSync(path.join(ROOT, committedFile), 'utf8') : '';
      assert.ok(generated === committed, `${committedFile} is out of date: run \`npm run docs\` and commit it`);
    }
  } finally {
    fs.rmSync(out, { recursive: true, force: true });
  }
});
