// Each package's Go binding as a cdk8s Go user meets it: a module whose go.mod requires it and points at the
// generated module with `replace` (as for the dependencies the Go proxy lacks), the rest from the proxy;
// apps/<pkg>/main.go built with go build and run.
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { before, describe, it } from 'node:test';
import { hashTree } from './build-bindings';
import {
  AppRun,
  appsDir,
  bindingAppsToTest,
  builtBindings,
  consumerDir,
  describeSynthDifference,
  fileHash,
  findTool,
  mustRun,
  runApp,
  shownError,
  runTypeScriptApp,
} from './support/binding-apps';
import { BindingsManifest } from './support/bindings-layout';

const go = findTool([process.env.GO, 'go'], ['version']);
const GO_ENV = { GOTOOLCHAIN: 'local', GOFLAGS: '-mod=mod' };

function goModOf(manifest: BindingsManifest): string {
  const { module, version, require, replace } = manifest.go!;
  const required = { [module]: version, ...require };
  return [
    `module example.com/${manifest.package.key}-app`,
    '',
    'go 1.25',
    '',
    'require (',
    ...Object.entries(required).map(([name, at]) => `\t${name} ${at}`),
    ')',
    '',
    ...Object.entries(replace).map(([name, dir]) => `replace ${name} => ${dir}`),
    '',
  ].join('\n');
}

for (const apps of bindingAppsToTest()) {
  const built = builtBindings(apps.key, 'go');
  const skip = !go ? 'go not found (GO names another)' : typeof built === 'string' ? built : undefined;

  describe(`${apps.key} in Go`, { skip }, () => {
    const manifest = built as BindingsManifest;
    let binary: string;
    let reference: AppRun;

    before(() => {
      const main = path.join(appsDir(apps.key), 'main.go');
      const inputs = { modules: Object.values(manifest.go!.replace).map((dir) => hashTree(dir, [])), main: fileHash(main), goMod: goModOf(manifest), build: '-trimpath' };
      const project = consumerDir(`go-${apps.key}`, inputs, (dir) => {
        fs.writeFileSync(path.join(dir, 'go.mod'), goModOf(manifest));
        fs.copyFileSync(main, path.join(dir, 'main.go'));
        mustRun(go!, ['mod', 'tidy'], dir, GO_ENV);
        mustRun(go!, ['build', '-trimpath', '-o', 'app', '.'], dir, GO_ENV);
      });
      binary = path.join(project, 'app');
      reference = runTypeScriptApp(manifest);
      assert.equal(reference.status, 0, `the TypeScript app failed:\n${reference.stderr}`);
    });

    it('synthesizes the same YAML as the TypeScript app', () => {
      const run = runApp(binary, [], appsDir(apps.key));
      assert.equal(run.status, 0, `main.go exited with ${run.status}:\n${run.stderr}`);
      assert.ok(Object.keys(run.synthesized).length > 0, 'main.go synthesized nothing');
      assert.deepEqual(run.synthesized, reference.synthesized, describeSynthDifference('main.go', run.synthesized, reference.synthesized));
    });

    it('tells the user which prop is wrong and why, in a panic', (t) => {
      const run = runApp(binary, [...apps.badPropsArgs], appsDir(apps.key));
      const panic = run.stderr.split('\n').find((line) => line.startsWith('panic:')) ?? '';
      const shown = shownError(run.stderr, 'panic: ', apps.badPropsMessage);
      t.diagnostic(`go shows: ${panic}${shown?.includes('\n') ? shown.slice(shown.indexOf('\n')) : ''}`);
      assert.notEqual(run.status, 0, 'main.go with bad props exited 0');
      assert.equal(shown, apps.badPropsMessage, `the panic's message; whole stderr:\n${run.stderr}`);
    });
  });
}
