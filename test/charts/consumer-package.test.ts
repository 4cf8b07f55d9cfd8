// The package as a new user meets it: `npm pack`'s tarball installed into a fresh project made with
// `cdk8s init typescript-app`'s tsconfig (strict, no skipLibCheck), once with the oldest supported
// cdk8s, constructs and cdk8s-plus-27 pinned exactly and once with the newest. In each: one copy of
// constructs, a strict tsc, and `cdk8s synth` of the README's "Writing your own app" and of both
// examples/, exactly as written, writing the objects they describe.
import { before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { parseAllDocuments } from 'yaml';
import { loadInjectorConfig } from '../../webhook/config';
import { evaluate } from '../../webhook/engine';
import { assertValidManifest } from '../support/openapi-validator';
import { packTarball } from '../support/packed-package';
import { CLUSTER_CLIENT_RANGE } from '../../webhook/cli/cluster';
import { applyResponse, loadReview } from '../support/recorded-reviews';

const ROOT = path.resolve(__dirname, '../..');
const NPM = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const TSC = path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
const CDK8S_CLI = path.join(ROOT, 'node_modules', 'cdk8s-cli', 'bin', 'cdk8s');
/** The tsconfig `cdk8s init typescript-app` writes, from the cdk8s-cli this repository has. */
const INIT_TSCONFIG = path.join(ROOT, 'node_modules', 'cdk8s-cli', 'templates', 'typescript-app', 'tsconfig.json');
const PEERS = ['cdk8s', 'constructs', 'cdk8s-plus-27'] as const;
type PeerVersions = Record<(typeof PEERS)[number], string>;

const execFileAsync = promisify(execFile);

async function run(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = {}): Promise<string> {
  try {
    const { stdout } = await execFileAsync(command, args, { cwd, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024, env: { ...process.env, NO_COLOR: '1', ...env } });
    return stdout;
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string };
    throw new Error(`${path.basename(command)} ${args.join(' ')} (in ${cwd}) exited with ${failed.code}:\n${failed.stdout ?? ''}\n${failed.stderr ?? ''}`);
  }
}

/** The README's "Writing your own app" code block, as written. */
function readmeApp(): string {
  const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('## Writing your own app'));
  const block = /```ts\n([\s\S]*?)```/.exec(section);
  assert.ok(block, 'the README has a ```ts block under "Writing your own app"');
  return block[1];
}

/** The peer versions the package declares as the lowest it supports (its exact devDependencies). */
function oldestPeers(): PeerVersions {
  const manifest = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
  const versions = Object.fromEntries(PEERS.map((name) => [name, manifest.devDependencies[name]])) as PeerVersions;
  for (const name of PEERS) {
    assert.match(versions[name], /^\d+\.\d+\.\d+$/, `${name} is pinned exactly in devDependencies`);
    assert.equal(manifest.peerDependencies[name], `^${versions[name]}`, `${name}'s peer range starts at the version built against`);
  }
  return versions;
}

/** The newest version inside each peer range, as the registry (or the npm cache) knows it now. */
async function newestPeers(): Promise<PeerVersions> {
  const manifest = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
  const entries = await Promise.all(
    PEERS.map(async (name) => {
      const output = await run(NPM, ['view', `${name}@${manifest.peerDependencies[name]}`, 'version', '--json', '--prefer-offline'], os.tmpdir());
      const versions = JSON.parse(output) as string | string[];
      return [name, Array.isArray(versions) ? versions[versions.length - 1] : versions] as const;
    }),
  );
  return Object.fromEntries(entries) as PeerVersions;
}

/** A command's exit code and output, whatever the code. */
interface Ran {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

function runForCode(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = {}): Promise<Ran> {
  return new Promise((resolve) => {
    execFile(command, args, { cwd, encoding: 'utf8', env: { ...process.env, NO_COLOR: '1', ...env } }, (error, stdout, stderr) => {
      resolve({ code: error ? ((error as { code?: number }).code ?? -1) : 0, stdout, stderr });
    });
  });
}

/** The CLI as the consumer has it (node_modules/.bin), without the optional cluster client. */
interface ConsumerCli {
  /** Whether npm installed @kubernetes/client-node (an optional dependency the user installs: it should not). */
  readonly clusterClientInstalled: boolean;
  /** `status` against a cluster: needs the client. */
  readonly status: Ran;
  /** `kubectl sidecar-injector status`, kubectl finding the plugin on PATH. */
  readonly pluginStatus: Ran;
  /** `status --stdin`: reads no cluster. */
  readonly stdinStatus: Ran;
  /** The same through kubectl. */
  readonly pluginStdinStatus: Ran;
  /** `explain` on a manifest. */
  readonly explain: Ran;
}

const KUBECTL = '/usr/bin/kubectl';

/** Runs the installed bins the way a user of the package does. */
async function consumerCli(dir: string): Promise<ConsumerCli> {
  const config = path.join(dir, 'injector-config.json');
  fs.writeFileSync(config, JSON.stringify({ injections: [{ name: 'envoy', trigger: { type: 'always' }, containers: [{ name: 'envoy', image: 'envoyproxy/envoy:v1.31.1' }] }] }));
  const pod = path.join(dir, 'pod.yaml');
  fs.writeFileSync(pod, 'apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec:\n  containers: [{name: app, image: app:1}]\n');
  const pods = JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [{ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'default' } }] });
  const stdinFile = path.join(dir, 'pods.json');
  fs.writeFileSync(stdinFile, pods);
  const bin = path.join(dir, 'node_modules', '.bin');
  // kubectl finds plugins on PATH, as an `npm install -g` puts the bin there; no kubeconfig is read before it hands over.
  const pluginEnv = { PATH: `${bin}${path.delimiter}${process.env.PATH ?? ''}`, KUBECONFIG: path.join(dir, 'no-kubeconfig') };
  const cli = path.join(bin, 'cdk8s-sidecar-injector');
  return {
    clusterClientInstalled: fs.existsSync(path.join(dir, 'node_modules', '@kubernetes', 'client-node')),
    status: await runForCode(cli, ['status', '--config', config, '--kubeconfig', path.join(dir, 'no-kubeconfig')], dir),
    pluginStatus: await runForCode(KUBECTL, ['sidecar-injector', 'status', '--config', config, '--kubeconfig', path.join(dir, 'no-kubeconfig')], dir, pluginEnv),
    stdinStatus: await runForCode(cli, ['status', '--config', config, '-f', stdinFile], dir),
    pluginStdinStatus: await runForCode(KUBECTL, ['sidecar-injector', 'status', '--config', config, '-f', stdinFile], dir, pluginEnv),
    explain: await runForCode(cli, ['explain', '--config', config, '-f', pod], dir),
  };
}

interface Synthesized {
  readonly versions: PeerVersions;
  /** What ended up in node_modules. */
  readonly installed: PeerVersions;
  /** Seconds each step took, for the test's diagnostics. */
  readonly seconds: Record<string, number>;
  readonly constructsCopies: string[];
  /** Output directory -> every object written there. */
  readonly outputs: Record<'readme' | 'seed' | 'platform', Record<string, any>[]>;
  readonly cli: ConsumerCli;
}

/** Makes the project, installs, compiles and synthesizes; returns what was found. */
async function consumerProject(dir: string, tarball: string, versions: PeerVersions): Promise<Synthesized> {
  fs.mkdirSync(path.join(dir, 'examples'), { recursive: true });
  const typesNode = JSON.parse(fs.readFileSync(path.join(ROOT, 'node_modules', '@types', 'node', 'package.json'), 'utf8')).version;
  fs.writeFileSync(
    path.join(dir, 'package.json'),
    JSON.stringify({ name: 'consumer', version: '1.0.0', private: true, dependencies: { ...versions, 'cdk8s-sidecar-injector': `file:${tarball}` }, devDependencies: { '@types/node': typesNode } }, null, 2),
  );
  fs.copyFileSync(INIT_TSCONFIG, path.join(dir, 'tsconfig.json'));
  fs.writeFileSync(path.join(dir, 'cdk8s.yaml'), 'language: typescript\napp: node main.js\n');
  fs.writeFileSync(path.join(dir, 'main.ts'), readmeApp());
  fs.cpSync(path.join(ROOT, 'examples'), path.join(dir, 'examples'), { recursive: true });

  const seconds: Record<string, number> = {};
  let started = Date.now();
  const lap = (step: string) => {
    seconds[step] = (Date.now() - started) / 1000;
    started = Date.now();
  };
  await run(NPM, ['install', '--prefer-offline', '--no-audit', '--no-fund', '--ignore-scripts', '--loglevel=error'], dir);
  lap('install');
  const installed = Object.fromEntries(
    PEERS.map((name) => [name, JSON.parse(fs.readFileSync(path.join(dir, 'node_modules', name, 'package.json'), 'utf8')).version]),
  ) as PeerVersions;
  const listed = await run(NPM, ['ls', 'constructs', '--all', '--parseable'], dir);
  const constructsCopies = [...new Set(listed.split('\n').filter((line) => line.endsWith(`${path.sep}constructs`)))];

  await run(process.execPath, [TSC, '-p', dir], dir);
  lap('tsc');
  // The README's app as `cdk8s synth` runs it (cdk8s.yaml); the examples with node, as `app.synth()`
  // writes them (one CLI start-up per app would only add time).
  await run(process.execPath, [CDK8S_CLI, 'synth', '--no-check-upgrade', '--output', 'out/readme'], dir);
  await run(process.execPath, ['examples/seed-injections/main.js'], dir, { CDK8S_OUTDIR: 'out/seed' });
  await run(process.execPath, ['examples/platform-chart/main.js'], dir, { CDK8S_OUTDIR: 'out/platform' });
  lap('synth');
  const read = (output: string) =>
    fs
      .readdirSync(path.join(dir, output))
      .filter((file) => file.endsWith('.k8s.yaml'))
      .sort()
      .flatMap((file) => parseAllDocuments(fs.readFileSync(path.join(dir, output, file), 'utf8')).map((document) => document.toJS()))
      .filter(Boolean);
  const cli = await consumerCli(dir);
  lap('cli');
  return { versions, installed, seconds, constructsCopies, outputs: { readme: read('out/readme'), seed: read('out/seed'), platform: read('out/platform') }, cli };
}

function kinds(objects: Record<string, any>[]): string[] {
  return objects.map((object) => `${object.kind}/${object.metadata.namespace ? `${object.metadata.namespace}/` : ''}${object.metadata.name}`).sort();
}

function injectorConfig(objects: Record<string, any>[], namespace: string) {
  const configMap = objects.find((object) => object.kind === 'ConfigMap' && object.metadata.namespace === namespace && object.data?.['config.json']);
  assert.ok(configMap, `a ConfigMap with config.json in ${namespace}, among ${kinds(objects).join(', ')}`);
  return loadInjectorConfig(configMap.data['config.json']);
}

const WEBHOOK_OBJECTS = (namespace: string, withNamespace = true) => [
  ...(withNamespace ? [`Namespace/${namespace}`] : []),
  `ConfigMap/${namespace}/sidecar-injector-config`,
  `Secret/${namespace}/sidecar-injector-tls`,
  `Deployment/${namespace}/sidecar-injector`,
  `Service/${namespace}/sidecar-injector`,
  `PodDisruptionBudget/${namespace}/sidecar-injector`,
  `NetworkPolicy/${namespace}/sidecar-injector`,
  `MutatingWebhookConfiguration/sidecar-injector.${namespace}`,
];

describe('the packed package in a fresh cdk8s project', { timeout: 300_000 }, () => {
  const results: Partial<Record<'oldest' | 'newest', Synthesized>> = {};
  let failure: unknown;
  let packSeconds = 0;
  let packedFiles: string[] = [];
  let filesLinkingMaps: string[] = [];
  let packedLicense = '';
  let packedAssembly: { schema?: string; version?: string; types?: Record<string, unknown> } = {};

  before(async () => {
    const work = fs.mkdtempSync(path.join(os.tmpdir(), 'sidecar-injector-consumer-'));
    try {
      const started = Date.now();
      const tarball = packTarball();
      packSeconds = (Date.now() - started) / 1000;
      const unpacked = path.join(work, 'unpacked');
      fs.mkdirSync(unpacked);
      await run('tar', ['-xzf', tarball, '-C', unpacked], work);
      const packageDir = path.join(unpacked, 'package');
      const files = fs.readdirSync(packageDir, { recursive: true, encoding: 'utf8' }).filter((file) => fs.statSync(path.join(packageDir, file)).isFile());
      packedFiles = files.map((file) => file.split(path.sep).join('/'));
      filesLinkingMaps = files
        .filter((file) => /\.(js|d\.ts)$/.test(file) && /[#@] sourceMappingURL=/.test(fs.readFileSync(path.join(packageDir, file), 'utf8')))
        .map((file) => file.split(path.sep).join('/'));
      packedLicense = fs.existsSync(path.join(packageDir, 'LICENSE')) ? fs.readFileSync(path.join(packageDir, 'LICENSE'), 'utf8') : '';
      packedAssembly = fs.existsSync(path.join(packageDir, '.jsii')) ? JSON.parse(fs.readFileSync(path.join(packageDir, '.jsii'), 'utf8')) : {};
      const [oldest, newest] = [oldestPeers(), await newestPeers()];
      // Both projects at once: the installs wait on the network and the cache more than on the CPU.
      const [a, b] = await Promise.all([
        consumerProject(path.join(work, 'oldest'), tarball, oldest),
        consumerProject(path.join(work, 'newest'), tarball, newest),
      ]);
      results.oldest = a;
      results.newest = b;
    } catch (error) {
      failure = error;
    } finally {
      fs.rmSync(work, { recursive: true, force: true });
    }
  });

  test('the tarball ships the schemas, LICENSE, CHANGELOG and the jsii assembly, its own dependencies bundled, and no source map of its own or link to one', () => {
    if (failure) throw failure;
    // The bundled dependencies (node_modules/) are as their authors publish them, maps and sources included.
    const names = packedFiles.filter((file) => !file.startsWith('node_modules/'));
    for (const file of ['LICENSE', 'CHANGELOG.md', 'API.md', 'README.md', '.jsii', 'engine.js', 'engine.d.ts', 'lib/charts/index.js', 'lib/charts/index.d.ts', 'lib/charts/engine.js', 'lib/charts/schema/kubernetes-schemas.json']) {
      assert.ok(names.includes(file), `${file} is in the package`);
    }
    const manifest = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
    assert.equal(packedAssembly.schema, 'jsii/0.10.0', 'the .jsii assembly, what Construct Hub reads');
    assert.equal(packedAssembly.version, manifest.version);
    assert.ok(packedAssembly.types?.['cdk8s-sidecar-injector.SidecarInjector'], 'the assembly holds the construct');
    assert.ok(manifest.keywords.includes('cdk8s'), 'Construct Hub lists cdk8s libraries by the cdk8s keyword');
    for (const dependency of Object.keys(manifest.dependencies)) {
      assert.ok(packedFiles.includes(`node_modules/${dependency}/package.json`), `${dependency} is bundled (jsii takes only jsii libraries as dependencies)`);
    }
    assert.deepEqual(names.filter((file) => file.endsWith('.map')), [], 'no .map files');
    assert.deepEqual(names.filter((file) => file.endsWith('.ts') && !file.endsWith('.d.ts')), [], 'no .ts sources');
    assert.deepEqual(filesLinkingMaps.filter((file) => !file.startsWith('node_modules/')), [], 'no file links to a source map the package does not ship');
    assert.equal(packedLicense, fs.readFileSync(path.join(ROOT, 'LICENSE'), 'utf8'), 'the Apache-2.0 LICENSE');
  });

  for (const variant of ['oldest', 'newest'] as const) {
    describe(`with the ${variant} supported cdk8s, constructs and cdk8s-plus-27`, () => {
      const result = (): Synthesized => {
        if (failure) throw failure;
        return results[variant]!;
      };

      test('installs the exact pins, with one copy of constructs', (t) => {
        const { versions, installed, constructsCopies, seconds } = result();
        t.diagnostic(`peers ${JSON.stringify(installed)}; npm pack ${packSeconds}s, ${JSON.stringify(seconds)}`);
        assert.deepEqual(installed, versions, 'node_modules holds exactly the pinned peers');
        assert.equal(constructsCopies.length, 1, `npm ls constructs lists ${constructsCopies.length} copies (${versions.constructs} pinned):\n${constructsCopies.join('\n')}`);
      });

      test('without the optional cluster client: synth works, status prints what to install and exits 2, inject/explain and status on a file work, also as kubectl sidecar-injector', () => {
        const { cli } = result();
        const describe = (ran: Ran) => `exit ${ran.code}\n--- stdout\n${ran.stdout}\n--- stderr\n${ran.stderr}`;
        assert.equal(cli.clusterClientInstalled, false, 'npm does not install the cluster client');
        const range = CLUSTER_CLIENT_RANGE;
        const installLine = `error: status and rollout read the cluster through @kubernetes/client-node, an optional dependency that is not installed: npm install @kubernetes/client-node@${range}\n`;
        for (const [what, ran] of [['cdk8s-sidecar-injector status', cli.status], ['kubectl sidecar-injector status', cli.pluginStatus]] as const) {
          assert.equal(ran.code, 2, `${what}: ${describe(ran)}`);
          assert.equal(ran.stderr, installLine, `${what}: one line saying what to install`);
          assert.equal(ran.stdout, '', what);
        }
        assert.equal(cli.stdinStatus.code, 0, describe(cli.stdinStatus));
        assert.match(cli.stdinStatus.stdout, /no pod has or owes an injection/);
        assert.deepEqual(cli.pluginStdinStatus, cli.stdinStatus, 'kubectl sidecar-injector prints what the command prints');
        assert.equal(cli.explain.code, 0, describe(cli.explain));
        assert.match(cli.explain.stdout, /envoy/);
      });

      test("the README's app compiles under the init template's strict tsconfig and synthesizes the injector", () => {
        const objects = result().outputs.readme;
        assert.deepEqual(kinds(objects), WEBHOOK_OBJECTS('platform-injector').sort());
        for (const object of objects) assertValidManifest(object);
        const config = injectorConfig(objects, 'platform-injector');
        assert.deepEqual(config.injections.map((injection) => injection.name), ['otel', 'debug']);
        assert.deepEqual((config.injections[0].initContainers![0] as any).resources, { requests: { cpu: '50m', memory: '64Mi' } });
        assert.equal((config.injections[0].initContainers![0] as any).restartPolicy, 'Always');
        const webhookConfiguration = objects.find((object) => object.kind === 'MutatingWebhookConfiguration')!;
        assert.equal(webhookConfiguration.metadata.annotations?.['argocd.argoproj.io/sync-wave'], '1');
        assert.equal(webhookConfiguration.webhooks[0].failurePolicy, 'Fail');
      });

      test('examples/seed-injections synthesizes the four seed injections', () => {
        const objects = result().outputs.seed;
        assert.deepEqual(kinds(objects), WEBHOOK_OBJECTS('sidecar-injector').sort());
        for (const object of objects) assertValidManifest(object);
        const config = injectorConfig(objects, 'sidecar-injector');
        assert.deepEqual(config.injections.map((injection) => injection.name), ['envoy', 'wait-for-it', 'nginx-sidecar', 'probe-defaults']);
        assert.deepEqual((config.injections[0].containers![0] as any).resources, { requests: { cpu: '100m', memory: '128Mi' }, limits: { memory: '256Mi' } });
      });

      test('examples/platform-chart puts the injector beside the cdk8s-plus objects, and its typed sidecar injects a valid pod', () => {
        const objects = result().outputs.platform;
        assert.deepEqual(kinds(objects), [...WEBHOOK_OBJECTS('platform'), 'Namespace/shop', 'Deployment/shop/shop'].sort());
        for (const object of objects) assertValidManifest(object);
        const webhookPods = objects.find((object) => object.kind === 'Deployment' && object.metadata.namespace === 'platform')!.spec.template.spec;
        assert.deepEqual(webhookPods.tolerations, [{ key: 'node-role.kubernetes.io/infra', operator: 'Exists', effect: 'NoSchedule' }]);

        const config = injectorConfig(objects, 'platform');
        const shipper = config.injections[0].containers![0] as any;
        assert.deepEqual(shipper.readinessProbe.httpGet.port, 'metrics', 'the IntOrString port is plain JSON');
        assert.deepEqual(shipper.resources.requests, { cpu: '20m', memory: '32Mi' }, 'the Quantities are plain JSON');
        // The shop Deployment as the apiserver would send it to the webhook.
        const shop = objects.find((object) => object.kind === 'Deployment' && object.metadata.name === 'shop')!;
        const request = { ...loadReview('deployment-create-frontend').request, name: 'shop', namespace: 'shop', object: shop };
        const mutated = applyResponse(shop, evaluate(request, config).response) as any;
        assert.deepEqual(mutated.spec.template.spec.containers.map((container: any) => container.name), ['shop', 'log-shipper']);
        assertValidManifest(mutated);
      });
    });
  }
});
