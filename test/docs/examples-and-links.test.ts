// The docs cannot rot: every ```ts block in README.md, CONTRIBUTING.md, examples/ and docs/ compiles against
// the package as a consumer imports it (`from 'cdk8s-sidecar-injector'`), and every relative link and
// #anchor in them resolves. The same checks run first on broken copies, so they are known to fail.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import {
  MarkdownDocument,
  danglingLinks,
  exampleDiagnostics,
  headingAnchors,
  languageBlocks,
  pythonBlocks,
  repositoryDocuments,
  repositoryFiles,
  typescriptBlocks,
} from '../support/markdown-docs';

const documents = repositoryDocuments();

describe('the examples in the docs', () => {
  test('every ts block compiles against the public entry point', () => {
    const blocks = documents.flatMap(typescriptBlocks);
    const compiled = blocks.filter((block) => !block.fragment);
    assert.ok(compiled.length >= 5, `found only ${compiled.length} ts blocks to compile in ${documents.map((d) => d.file).join(', ')}`);
    const fragments = blocks.filter((block) => block.fragment).map((block) => `${block.file}:${block.line}`);
    assert.ok(fragments.length <= 3, `fragments are the exception, not the rule; marked: ${fragments.join(', ')}`);
    const diagnostics = exampleDiagnostics(blocks);
    assert.deepEqual(diagnostics, [], `examples that do not compile:\n${diagnostics.join('\n')}`);
  });

  test('every python block parses, and imports from cdk8s_sidecar_injector only what the jsii entry exports', (t) => {
    const blocks = documents.flatMap(pythonBlocks);
    assert.ok(blocks.length >= 2, `found only ${blocks.length} python blocks (the README's and docs/own-injections.md's)`);
    const entry = fs.readFileSync(path.join(__dirname, '../../charts/index.ts'), 'utf8');
    const exported = new Set([...entry.matchAll(/export (?:type )?\{([^}]*)\}/g)].flatMap((m) => m[1].split(',').map((name) => name.trim()).filter(Boolean)));
    for (const [, name] of fs.readFileSync(path.join(__dirname, '../../charts/api/choices.ts'), 'utf8').matchAll(/export enum (\w+)/g)) exported.add(name);
    for (const block of blocks) {
      for (const [, names] of block.code.matchAll(/from cdk8s_sidecar_injector import ([^\n]+)/g)) {
        for (const name of names.split(',').map((n) => n.trim())) assert.ok(exported.has(name), `${block.file}:${block.line}: ${name} is not exported by charts/index.ts`);
      }
    }
    const probe = spawnSync('python3', ['--version'], { encoding: 'utf8' });
    if (probe.error) return t.skip('python3 not found: the python blocks are not parsed');
    for (const block of blocks) {
      const parsed = spawnSync('python3', ['-c', 'import ast, sys; ast.parse(sys.stdin.read())'], { input: block.code, encoding: 'utf8' });
      assert.equal(parsed.status, 0, `${block.file}:${block.line} does not parse:\n${parsed.stderr}`);
    }
  });

  test('every java and go block is an excerpt of the app the bindings tests run in that language', () => {
    const apps = { java: 'Main.java', go: 'main.go' } as const;
    let count = 0;
    for (const [language, file] of Object.entries(apps)) {
      const app = fs.readFileSync(path.join(__dirname, '../bindings/apps/sidecar-injector', file), 'utf8');
      for (const block of documents.flatMap((document) => languageBlocks(document, language))) {
        count++;
        assert.ok(app.includes(block.code), `${block.file}:${block.line}: the ${language} block is not in test/bindings/apps/sidecar-injector/${file}, which the bindings tests run`);
      }
    }
    assert.ok(count >= 2, `found ${count} java and go blocks (docs/java-go.md has one of each)`);
  });

  test('a broken example fails, named by its file and line, and a fragment is left alone', () => {
    const broken: MarkdownDocument = {
      file: 'docs/broken.md',
      text: [
        '# Broken',
        '',
        '```ts',
        "import { SidecarInjector, Trigger } from 'cdk8s-sidecar-injector';",
        'const injector: SidecarInjector = undefined;',
        "injector.addInjection({ name: 'x', trigger: Trigger.sometimes() });",
        '```',
        '',
        '```ts fragment',
        'certificates: WebhookCertificates.generated(),',
        '```',
        '',
        '```ts',
        "import { NoSuchExport } from 'cdk8s-sidecar-injector';",
        '```',
      ].join('\n'),
    };
    const diagnostics = exampleDiagnostics(typescriptBlocks(broken));
    assert.ok(diagnostics.some((d) => d.startsWith('docs/broken.md:5:7: error TS2322')), `undefined is not an injector, at line 5:\n${diagnostics.join('\n')}`);
    assert.ok(diagnostics.some((d) => d.startsWith('docs/broken.md:6:') && d.includes("'sometimes'")), `the unknown trigger type, at line 6:\n${diagnostics.join('\n')}`);
    assert.ok(diagnostics.some((d) => d.startsWith('docs/broken.md:14:') && d.includes('NoSuchExport')), `the missing export, at line 14:\n${diagnostics.join('\n')}`);
    assert.ok(!diagnostics.some((d) => d.startsWith('docs/broken.md:10:')), `the fragment is not compiled:\n${diagnostics.join('\n')}`);
  });
});

describe('the links in the docs', () => {
  test('every relative link and #anchor resolves', () => {
    const problems = danglingLinks(documents, repositoryFiles.read, repositoryFiles.exists);
    assert.deepEqual(problems, [], `links that do not resolve:\n${problems.join('\n')}`);
  });

  test('anchors are the slugs GitHub makes of the headings, duplicates numbered', () => {
    const anchors = headingAnchors({ file: 'x.md', text: '# Props (`SidecarInjectorProps`)\n\n## Applying `dist/` to a cluster\n\n## Options\n\n## Options\n' });
    assert.deepEqual([...anchors], ['props-sidecarinjectorprops', 'applying-dist-to-a-cluster', 'options', 'options-1']);
  });

  test('a missing file, a missing heading and a link out of the repository are each reported with file and line', () => {
    const broken: MarkdownDocument = {
      file: 'docs/broken.md',
      text: [
        '# Broken',
        '',
        'See [the guide](missing.md), the [README](../README.md#no-such-heading)',
        'and [here](#broken), [nowhere](#nowhere), [outside](../../etc/passwd), [a site](https://example.com/#x).',
        '',
        '| page | in a table |',
        '| --- | --- |',
        '| [ok](../README.md#layout) | [gone](../README.md#gone) |',
      ].join('\n'),
    };
    const problems = danglingLinks([broken], repositoryFiles.read, repositoryFiles.exists);
    assert.deepEqual(problems, [
      'docs/broken.md:3: link "missing.md" points to docs/missing.md, which does not exist',
      'docs/broken.md:3: link "../README.md#no-such-heading" points to #no-such-heading, which is no heading of README.md',
      'docs/broken.md:4: link "#nowhere" points to #nowhere, which is no heading of docs/broken.md',
      'docs/broken.md:4: link "../../etc/passwd" points outside the repository',
      'docs/broken.md:8: link "../README.md#gone" points to #gone, which is no heading of README.md',
    ]);
  });
});
