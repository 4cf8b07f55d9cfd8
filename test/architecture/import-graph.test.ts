// The layering the README's layout table promises, checked on the source's own import graph (read with
// TypeScript's preProcessFile, so `import type`, re-exports and dynamic `import()` all count): no
// import circle anywhere in app/, charts/ or webhook/; the shared config imports nothing but re2js and
// Node's crypto; the engine nothing but the config; the fleet logic (judging pods, in-place plans and
// their rollout) nothing but those two, and neither the CLI nor the reconciler, which both import it
// and never each other; the in-cluster client nothing of ours; the reconciler no cluster client, CLI or
// YAML parser (it ships in a ConfigMap); the construct library never reaches the HTTPS server, the CLI
// or their packages; the server never reaches the constructs.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as ts from 'typescript';
import { REPO_ROOT } from '../support/markdown-docs';

const ROOTS = ['app', 'charts', 'webhook'];

interface SourceImports {
  /** Repository-relative paths of the source files it imports. */
  readonly local: string[];
  /** The packages it imports, as written (`node:fs`, `re2js`, `@kubernetes/client-node`). */
  readonly packages: string[];
}

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(path.join(REPO_ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
    const relative = path.posix.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(relative);
    return /\.(ts|mts)$/.test(entry.name) && !entry.name.endsWith('.d.ts') ? [relative] : [];
  });
}

function resolveLocal(from: string, specifier: string): string {
  const base = path.posix.normalize(path.posix.join(path.posix.dirname(from), specifier));
  for (const candidate of [base, `${base}.ts`, `${base}.mts`, `${base}/index.ts`]) {
    if (fs.existsSync(path.join(REPO_ROOT, candidate)) && fs.statSync(path.join(REPO_ROOT, candidate)).isFile()) return candidate;
  }
  // A relative import of a generated or non-TypeScript file (build output, JSON): keep it as written.
  return base;
}

function importGraph(): Map<string, SourceImports> {
  const graph = new Map<string, SourceImports>();
  for (const file of ROOTS.flatMap(sourceFiles)) {
    const info = ts.preProcessFile(fs.readFileSync(path.join(REPO_ROOT, file), 'utf8'), true, true);
    const local: string[] = [];
    const packages: string[] = [];
    for (const { fileName } of info.importedFiles) {
      if (fileName.startsWith('.')) local.push(resolveLocal(file, fileName));
      else packages.push(fileName);
    }
    graph.set(file, { local, packages });
  }
  return graph;
}

/** Every import circle, as the files of each strongly connected component (Tarjan), sorted. */
export function importCircles(edges: ReadonlyMap<string, readonly string[]>): string[][] {
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const circles: string[][] = [];
  const visit = (node: string): void => {
    index.set(node, counter);
    low.set(node, counter);
    counter++;
    stack.push(node);
    onStack.add(node);
    for (const next of edges.get(node) ?? []) {
      if (!edges.has(next)) continue;
      if (!index.has(next)) {
        visit(next);
        low.set(node, Math.min(low.get(node)!, low.get(next)!));
      } else if (onStack.has(next)) low.set(node, Math.min(low.get(node)!, index.get(next)!));
    }
    if (low.get(node) !== index.get(node)) return;
    const component: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      component.push(member);
    } while (member !== node);
    if (component.length > 1 || (edges.get(node) ?? []).includes(node)) circles.push(component.sort());
  };
  for (const node of edges.keys()) if (!index.has(node)) visit(node);
  return circles;
}

const isBuiltin = (name: string) => name.startsWith('node:') || require('node:module').builtinModules.includes(name);

interface LayerRule {
  readonly layer: string;
  /** Folders (repository-relative, with a trailing slash) its files may import from. */
  readonly mayImport: readonly string[];
  /** Whether a package import is allowed. */
  readonly packageAllowed: (name: string) => boolean;
}

const RULES: readonly LayerRule[] = [
  { layer: 'webhook/config/', mayImport: ['webhook/config/'], packageAllowed: (name) => name === 're2js' || name === 'node:crypto' },
  { layer: 'webhook/engine/', mayImport: ['webhook/config/', 'webhook/engine/'], packageAllowed: () => false },
  {
    layer: 'charts/',
    mayImport: ['charts/', 'webhook/config/', 'webhook/engine/', 'build/'],
    packageAllowed: (name) => !['express', 'prom-client', '@kubernetes/client-node', 'commander'].includes(name),
  },
  { layer: 'webhook/server/', mayImport: ['webhook/config/', 'webhook/engine/', 'webhook/kube-client/', 'webhook/server/'], packageAllowed: (name) => name !== '@kubernetes/client-node' },
  // The in-cluster client of the reconciler and the webhook's namespace watch: Node's HTTPS, nothing else.
  { layer: 'webhook/kube-client/', mayImport: ['webhook/kube-client/'], packageAllowed: () => false },
  // What the CLI and the reconciler share (judging pods, planning and carrying out in-place upgrades
  // through the cluster interfaces), so it reaches neither, nor a cluster client or a YAML parser.
  { layer: 'webhook/fleet/', mayImport: ['webhook/config/', 'webhook/engine/', 'webhook/fleet/'], packageAllowed: (name) => name === 'fast-json-patch' },
  // The commands (arguments, output, exit codes): the fleet's logic, never the reconciler's or the server's.
  {
    layer: 'webhook/cli/',
    mayImport: ['webhook/config/', 'webhook/engine/', 'webhook/fleet/', 'webhook/cli/', 'charts/version.ts'],
    packageAllowed: (name) => !['express', 'prom-client'].includes(name),
  },
  // The reconciler ships in a ConfigMap: the in-cluster client, no cluster client, CLI parser, YAML
  // parser or HTTP framework; the fleet's judgement (status, in-place plans) is shared with the CLI, not copied.
  {
    layer: 'webhook/reconciler/',
    mayImport: ['webhook/config/', 'webhook/engine/', 'webhook/fleet/', 'webhook/kube-client/', 'webhook/server/', 'webhook/reconciler/'],
    packageAllowed: (name) => !['@kubernetes/client-node', 'commander', 'express', 'yaml'].includes(name),
  },
];

function layerViolations(graph: ReadonlyMap<string, SourceImports>, rules: readonly LayerRule[]): string[] {
  const violations: string[] = [];
  for (const [file, imports] of graph) {
    const rule = rules.find((candidate) => file.startsWith(candidate.layer));
    if (!rule) continue;
    for (const target of imports.local) {
      if (!rule.mayImport.some((folder) => target.startsWith(folder))) violations.push(`${file} imports ${target} (${rule.layer} may import only ${rule.mayImport.join(', ')})`);
    }
    for (const name of imports.packages) {
      if (!rule.packageAllowed(name) && !(rule.layer !== 'webhook/config/' && rule.layer !== 'webhook/engine/' && isBuiltin(name))) {
        violations.push(`${file} imports the package ${name}, which ${rule.layer} must not`);
      }
    }
  }
  return violations;
}

describe('the import graph of app/, charts/ and webhook/', () => {
  const graph = importGraph();

  test('reads every source file and its imports', () => {
    assert.ok(graph.size >= 60, `only ${graph.size} source files found`);
    assert.ok(graph.get('charts/index.ts')!.local.includes('charts/sidecar-injector.ts'));
    assert.ok(graph.get('webhook/server/webhook-server.ts')!.packages.some((name) => name.startsWith('node:')));
  });

  test('has no import circle', () => {
    const edges = new Map([...graph].map(([file, imports]) => [file, imports.local]));
    assert.deepEqual(importCircles(edges), []);
  });

  test('keeps each layer to what it may import', () => {
    assert.deepEqual(layerViolations(graph, RULES), []);
  });
});

describe('the checks themselves', () => {
  test('find a circle of three files and a file importing itself, and nothing in a tree', () => {
    const circle = new Map([
      ['a.ts', ['b.ts']],
      ['b.ts', ['c.ts']],
      ['c.ts', ['a.ts', 'd.ts']],
      ['d.ts', []],
      ['e.ts', ['e.ts']],
    ]);
    assert.deepEqual(importCircles(circle), [['a.ts', 'b.ts', 'c.ts'], ['e.ts']]);
    assert.deepEqual(importCircles(new Map([['a.ts', ['b.ts', 'c.ts']], ['b.ts', ['c.ts']], ['c.ts', []]])), []);
  });

  test('report the engine reaching the server and the config importing a package', () => {
    const graph = new Map<string, SourceImports>([
      ['webhook/engine/mutate.ts', { local: ['webhook/server/logger.ts', 'webhook/config/index.ts'], packages: [] }],
      ['webhook/config/index.ts', { local: [], packages: ['yaml', 're2js'] }],
      ['charts/index.ts', { local: ['webhook/config/index.ts'], packages: ['express', 'node:fs'] }],
    ]);
    assert.deepEqual(layerViolations(graph, RULES), [
      'webhook/engine/mutate.ts imports webhook/server/logger.ts (webhook/engine/ may import only webhook/config/, webhook/engine/)',
      'webhook/config/index.ts imports the package yaml, which webhook/config/ must not',
      'charts/index.ts imports the package express, which charts/ must not',
    ]);
  });

  test('report the reconciler and the CLI reaching each other, and the fleet reaching either or the YAML parser', () => {
    const graph = new Map<string, SourceImports>([
      ['webhook/reconciler/reconciler.ts', { local: ['webhook/fleet/status-report.ts', 'webhook/cli/status-command.ts'], packages: [] }],
      ['webhook/cli/day-two-commands.ts', { local: ['webhook/fleet/in-place-plan.ts', 'webhook/reconciler/lease.ts'], packages: ['commander'] }],
      ['webhook/fleet/in-place-plan.ts', { local: ['webhook/cli/preview.ts', 'webhook/reconciler/pod-client.ts', 'webhook/config/index.ts'], packages: ['fast-json-patch', 'yaml'] }],
      ['webhook/kube-client/kube-api.ts', { local: ['webhook/server/logger.ts'], packages: ['node:https'] }],
    ]);
    assert.deepEqual(layerViolations(graph, RULES), [
      'webhook/reconciler/reconciler.ts imports webhook/cli/status-command.ts (webhook/reconciler/ may import only webhook/config/, webhook/engine/, webhook/fleet/, webhook/kube-client/, webhook/server/, webhook/reconciler/)',
      'webhook/cli/day-two-commands.ts imports webhook/reconciler/lease.ts (webhook/cli/ may import only webhook/config/, webhook/engine/, webhook/fleet/, webhook/cli/, charts/version.ts)',
      'webhook/fleet/in-place-plan.ts imports webhook/cli/preview.ts (webhook/fleet/ may import only webhook/config/, webhook/engine/, webhook/fleet/)',
      'webhook/fleet/in-place-plan.ts imports webhook/reconciler/pod-client.ts (webhook/fleet/ may import only webhook/config/, webhook/engine/, webhook/fleet/)',
      'webhook/fleet/in-place-plan.ts imports the package yaml, which webhook/fleet/ must not',
      'webhook/kube-client/kube-api.ts imports webhook/server/logger.ts (webhook/kube-client/ may import only webhook/kube-client/)',
    ]);
  });
});
