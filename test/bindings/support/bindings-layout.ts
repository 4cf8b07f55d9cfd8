// Where the bindings harness keeps its work, outputs and stamps, which packages it knows, and the manifest
// that `npm run bindings:build` writes for the tests to read. Shared by test/bindings/build-bindings.ts
// (the writer) and the language tests (the readers), so both agree on every path.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

export const REPO_ROOT = path.resolve(__dirname, '../../..');

/** `BINDINGS_CACHE`, else `$XDG_CACHE_HOME/cdk8s-sidecar-injector/bindings` (`~/.cache/...`). */
export const BINDINGS_CACHE =
  process.env.BINDINGS_CACHE ??
  path.join(process.env.XDG_CACHE_HOME ?? path.join(os.homedir(), '.cache'), 'cdk8s-sidecar-injector', 'bindings');

export const bindingsDirs = {
  /** One copy of each package (`work/<pkg>`), beside `work/node_modules` with the jsii dependencies from npm. */
  work: path.join(BINDINGS_CACHE, 'work'),
  /** jsii-pacmak's output per package: `out/<pkg>/{python,java,go,dotnet}` and `out/<pkg>/bindings.json`. */
  out: path.join(BINDINGS_CACHE, 'out'),
  /** A file:// Maven repository with the dependencies Maven Central does not serve (cdk8s-plus-27). */
  m2: path.join(BINDINGS_CACHE, 'm2'),
  /**
   * Maven's local repository for every build and test here (not ~/.m2): the package's version does not change
   * between builds, and Maven never fetches a release it already holds, so the tests clear our artifacts from
   * it before each resolve, which they may only do in a repository of their own.
   */
  mavenLocal: path.join(BINDINGS_CACHE, 'maven-local'),
  /** Go modules of the dependencies the Go module proxy does not serve (cdk8s, cdk8s-plus-27), for `replace`. */
  go: path.join(BINDINGS_CACHE, 'go'),
  /** One empty file per finished step, named for a hash of the step's inputs. */
  stamps: path.join(BINDINGS_CACHE, 'stamps'),
  /** Each step's full output; the build prints only a failing step's tail. */
  logs: path.join(BINDINGS_CACHE, 'logs'),
  /** What the tests install into: venvs and Maven/Go projects, keyed by what was built. */
  consumers: path.join(BINDINGS_CACHE, 'consumers'),
};

export const BINDING_TARGETS = ['python', 'java', 'go', 'dotnet'] as const;
export type BindingTarget = (typeof BINDING_TARGETS)[number];

/** A jsii library the harness can build: the toy fixture, or this repository's own package. */
export interface BindingsPackage {
  /** The `--package` name, also the name of its work, out and apps directories. */
  readonly key: string;
  /** The package root: its package.json has the `jsii` block. */
  readonly root: string;
  /** What is left out of the copy in work/<pkg>: build outputs and whatever jsii does not compile. */
  readonly copyExcludes: readonly string[];
  /** A command run in the root before the copy, for files the package ships but jsii does not make. */
  readonly prepare?: readonly string[];
}

export const BINDINGS_PACKAGES: Record<string, BindingsPackage> = {
  hello: {
    key: 'hello',
    root: path.join(REPO_ROOT, 'test/bindings/fixtures/hello'),
    copyExcludes: ['node_modules', 'lib', 'dist', 'tsconfig.json', '.jsii', 'tsconfig.tsbuildinfo'],
  },
  // This repository's own package, once its jsii conversion lands (a `jsii` block in package.json with
  // outdir dist-jsii, built from charts/index.ts through tsconfig.jsii.json). Until then its build stops
  // at "package.json has no jsii block". The webhook bundle is shipped in the package, so it is built first.
  'sidecar-injector': {
    key: 'sidecar-injector',
    root: REPO_ROOT,
    copyExcludes: [
      'node_modules', '.git', 'lib', 'dist', 'dist-jsii', 'build/api', 'cdk.out', '.webhook-run', '.certs',
      'test', 'examples', 'docs', '.jsii', 'tsconfig.tsbuildinfo',
    ],
    prepare: ['npm', 'run', '--silent', 'bundle'],
  },
};

/** What `npm run bindings:build` made for one package: read by the language tests. */
export interface BindingsManifest {
  readonly package: { readonly key: string; readonly name: string; readonly version: string; readonly dir: string };
  /** Versions of the jsii dependencies (from the lockfile's node_modules), the same in every language. */
  readonly dependencies: Record<string, string>;
  /** jsii-pacmak's version: the jsii runtime each binding requires (PyPI jsii, jsii-runtime, jsii-runtime-go). */
  readonly jsiiRuntimeVersion: string;
  readonly python?: { readonly wheel: string; readonly distName: string; readonly module: string };
  readonly java?: {
    readonly groupId: string;
    readonly artifactId: string;
    readonly version: string;
    readonly package: string;
    /** file:// repositories, the package's own first, then the dependencies'. */
    readonly repositories: readonly string[];
    /** Maven coordinates of the jsii dependencies, groupId:artifactId:version, in Central or in the repositories. */
    readonly dependencies: readonly string[];
  };
  readonly go?: {
    readonly module: string;
    readonly version: string;
    /** Every module served from a local directory: the package's own and the dependencies the proxy lacks. */
    readonly replace: Record<string, string>;
    /** Every module the package requires, with its version: the rest come from the proxy. */
    readonly require: Record<string, string>;
  };
  readonly dotnet?: { readonly dir: string; readonly codeOnly: true };
}

export function manifestPath(key: string): string {
  return path.join(bindingsDirs.out, key, 'bindings.json');
}

export function readManifest(key: string): BindingsManifest | undefined {
  const file = manifestPath(key);
  return fs.existsSync(file) ? (JSON.parse(fs.readFileSync(file, 'utf8')) as BindingsManifest) : undefined;
}
