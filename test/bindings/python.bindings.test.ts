// Each package's Python binding as a cdk8s Python user meets it: its wheel pip-installed into a venv beside
// cdk8s, cdk8s-plus-27 and constructs from PyPI, and apps/<pkg>/app.py run with that venv's python.
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { before, describe, it } from 'node:test';
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

const python = findTool([process.env.PYTHON, 'python3'], ['--version']);

for (const apps of bindingAppsToTest()) {
  const built = builtBindings(apps.key, 'python');
  const skip = !python ? 'python3 not found (PYTHON names another)' : typeof built === 'string' ? built : undefined;

  describe(`${apps.key} in Python`, { skip }, () => {
    const manifest = built as BindingsManifest;
    let venvPython: string;
    let reference: AppRun;

    before(() => {
      const wheel = manifest.python!.wheel;
      // PyPI's cdk8s, cdk8s-plus-27 and constructs at the versions the package was built against.
      const pins = Object.entries(manifest.dependencies).map(([name, version]) => `${name}==${version}`);
      const venv = consumerDir(`python-${apps.key}`, { wheel: fileHash(wheel), pins, python: mustRun(python!, ['--version'], '.') }, (dir) => {
        mustRun(python!, ['-m', 'venv', path.join(dir, 'venv')], dir);
        mustRun(path.join(dir, 'venv/bin/python'), ['-m', 'pip', 'install', '--disable-pip-version-check', '--no-input', '--quiet', wheel, ...pins], dir);
      });
      venvPython = path.join(venv, 'venv/bin/python');
      reference = runTypeScriptApp(manifest);
      assert.equal(reference.status, 0, `the TypeScript app failed:\n${reference.stderr}`);
    });

    it('synthesizes the same YAML as the TypeScript app', () => {
      const run = runApp(venvPython, [path.join(appsDir(apps.key), 'app.py')], appsDir(apps.key));
      assert.equal(run.status, 0, `app.py exited with ${run.status}:\n${run.stderr}`);
      assert.ok(Object.keys(run.synthesized).length > 0, 'app.py synthesized nothing');
      assert.ok(fs.existsSync(manifest.python!.wheel));
      assert.deepEqual(run.synthesized, reference.synthesized, describeSynthDifference('app.py', run.synthesized, reference.synthesized));
    });

    it('tells the user which prop is wrong and why, in a RuntimeError', (t) => {
      const run = runApp(venvPython, [path.join(appsDir(apps.key), 'app.py'), ...apps.badPropsArgs], appsDir(apps.key));
      const shown = shownError(run.stderr, 'RuntimeError: ', apps.badPropsMessage);
      t.diagnostic(`python shows: RuntimeError: ${shown}`);
      assert.notEqual(run.status, 0, 'app.py with bad props exited 0');
      assert.equal(shown, apps.badPropsMessage, `the traceback's RuntimeError; whole stderr:\n${run.stderr}`);
      assert.ok(run.stderr.trimEnd().endsWith(apps.badPropsMessage), 'the last thing the traceback prints');
    });
  });
}
