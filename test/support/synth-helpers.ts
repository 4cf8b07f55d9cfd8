// Synthesizing the construct and the default app in tests, and reading the result the way kubectl
// and the apiserver would: parsed YAML documents, looked up by kind, selectors evaluated.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after } from 'node:test';
import { App, Chart, Yaml } from 'cdk8s';
import { parseAllDocuments } from 'yaml';
import { SidecarInjector, SidecarInjectorProps, SidecarInjectorChart } from '../../charts/engine';
import { WebhookCertificate } from '../../charts/certificates/webhook-certificate';
import { DefaultAppOptions, synthDefaultApp } from '../../app/default-app';
import { LabelSelector, matchesLabelSelector } from '../../webhook/engine/label-selector';
import { testCertificate, testCertificateFor } from './test-certificate';

/** A synthesized Kubernetes object, as parsed from the YAML. */
export type Manifest = Record<string, any>;

export interface SynthesizedFiles {
  /** The output directory (removed when the test file ends). */
  readonly outdir: string;
  /** The `*.k8s.yaml` files written, as absolute paths. */
  readonly files: string[];
  /** Every object of every file, in file order. */
  readonly manifests: Manifest[];
  /** The text of every file, concatenated in file order. */
  readonly yamlText: string;
}

const tempDirs: string[] = [];
after(() => {
  for (const dir of tempDirs) fs.rmSync(dir, { recursive: true, force: true });
});

/** A fresh directory under the OS temp dir, removed when the test file ends. */
export function makeTempDir(label = 'synth'): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `sidecar-injector-${label}-`));
  tempDirs.push(dir);
  return dir;
}

/** Runs the default app (`npm run synth`) into `outdir` (a new temp dir when left out). */
export function synthDefaultAppToTemp(
  certificate: WebhookCertificate = testCertificate(),
  outdir = makeTempDir(),
  backend: Pick<DefaultAppOptions, 'backend' | 'admissionPolicyApiVersion'> = {},
): SynthesizedFiles {
  const files = synthDefaultApp({ outdir, certificate, ...backend }).sort();
  const manifests = files.flatMap((file) => Yaml.load(file) as Manifest[]);
  const yamlText = files.map((file) => fs.readFileSync(file, 'utf8')).join('');
  return { outdir, files, manifests, yamlText };
}

export interface SynthChartOptions {
  /** Id of the chart. @default 'sidecar-injector' */
  readonly chartId?: string;
  /** When set, the injector is a `SidecarInjector` with this id inside a plain `Chart`, instead of a
   * `SidecarInjectorChart`. */
  readonly constructId?: string;
}

export interface SynthesizedChart {
  readonly app: App;
  readonly injector: SidecarInjector;
  readonly manifests: Manifest[];
  readonly yamlText: string;
}

/**
 * Builds an App with one injector and synthesizes it in memory. Unless `props.certificate` is given,
 * uses cached test material for the injector's Service (so no RSA key is generated per call).
 */
export function synthChart(props: SidecarInjectorProps = {}, options: SynthChartOptions = {}): SynthesizedChart {
  const { app, injector } = buildChart(props, options);
  return { app, injector, ...synthesize(app) };
}

/** Builds (without synthesizing) an App with one injector; see synthChart. */
export function buildChart(props: SidecarInjectorProps = {}, options: SynthChartOptions = {}): { app: App; injector: SidecarInjector } {
  const certificate =
    props.certificate ?? testCertificateFor(props.serviceName ?? props.name ?? 'sidecar-injector', props.namespace ?? 'sidecar-injector');
  // The outdir is never written: synthesize() only calls synthYaml().
  const app = new App({ outdir: path.join(os.tmpdir(), 'sidecar-injector-never-written') });
  const chartId = options.chartId ?? 'sidecar-injector';
  let injector: SidecarInjector;
  if (options.constructId === undefined) {
    injector = new SidecarInjectorChart(app, chartId, { ...props, certificate }).injector;
  } else {
    injector = new SidecarInjector(new Chart(app, chartId), options.constructId, { ...props, certificate });
  }
  return { app, injector };
}

/** The app's YAML and its parsed objects. */
export function synthesize(app: App): { manifests: Manifest[]; yamlText: string } {
  const yamlText = app.synthYaml();
  const manifests = parseAllDocuments(yamlText)
    .map((document) => document.toJS() as Manifest | null)
    .filter((document): document is Manifest => document !== null);
  return { manifests, yamlText };
}

/** `Kind/namespace/name` of each object, for messages and comparisons. */
export function describeManifest(manifest: Manifest): string {
  const namespace = manifest.metadata?.namespace;
  return `${manifest.kind}/${namespace ? `${namespace}/` : ''}${manifest.metadata?.name}`;
}

/** The one object of `kind`; throws naming the kinds that were synthesized when there is not exactly one. */
export function findManifest(manifests: readonly Manifest[], kind: string): Manifest {
  const found = manifests.filter((manifest) => manifest.kind === kind);
  if (found.length !== 1) {
    throw new Error(`expected exactly one ${kind}, found ${found.length} among: ${manifests.map(describeManifest).join(', ')}`);
  }
  return found[0];
}

export interface SelectorRequirement {
  readonly key: string;
  readonly operator: string;
  readonly values?: readonly string[];
}

export interface Selector {
  readonly matchLabels?: Readonly<Record<string, string>> | null;
  readonly matchExpressions?: readonly SelectorRequirement[] | null;
}

/** Whether `labels` match `selector`, as the apiserver evaluates a webhook's namespace/object selector. */
export function selectorMatches(selector: Selector | undefined, labels: Readonly<Record<string, string>>): boolean {
  return !selector || matchesLabelSelector(selector as LabelSelector, labels);
}

/** The labels the apiserver puts on a namespace, plus `extra`. */
export function namespaceLabels(name: string, extra: Record<string, string> = {}): Record<string, string> {
  return { ...extra, 'kubernetes.io/metadata.name': name };
}
