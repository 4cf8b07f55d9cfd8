// In-process benchmarks of the engine: `evaluate` with the default config (resolved once), alone and
// with what the server does around it per request (decode the body, JSON.parse, decodeAdmissionReview,
// evaluate, JSON.stringify of the response). Run as its own process by run-benchmarks.ts:
//   node --import tsx test/bench/engine-bench.ts <result.json> [only-case-substring]
import * as fs from 'node:fs';
import { DEFAULT_INJECTIONS } from '../../app/default-injections';
import { resolveInjectorConfig } from '../../webhook/config';
import { admissionReviewResponse, decodeAdmissionReview, evaluate } from '../../webhook/engine';
import { loadReview, reviewNames } from '../support/recorded-reviews';
import { body, podWithVariables, reviewOfSize } from './reviews';
import { Distribution, MB, distribution } from './stats';

export type EngineMode = 'engine' | 'parse' | 'full';

export interface EngineCase {
  readonly name: string;
  readonly group: 'recorded' | 'large' | 'sweep' | 'overrides';
  readonly bytes: number;
  readonly mode: EngineMode;
  readonly patched: boolean;
  readonly iterations: number;
  /** Microseconds per iteration. */
  readonly us: Distribution;
}

export interface EngineResults {
  readonly cases: EngineCase[];
  readonly sweepVariables: Record<string, number>;
}

export const MODE_LABEL: Record<EngineMode, string> = {
  engine: 'evaluate() alone',
  parse: 'JSON.parse of the body alone',
  full: 'parse + decode + evaluate() + stringify',
};

export const SWEEP: readonly { label: string; bytes: number }[] = [
  { label: '100 KiB', bytes: 100 * 1024 },
  { label: '300 KiB', bytes: 300 * 1024 },
  { label: '1 MiB', bytes: 1 * MB },
  { label: '2 MiB', bytes: 2 * MB },
  { label: '3 MiB', bytes: 3 * MB },
];

const DEFAULT_CONFIG = resolveInjectorConfig({ injections: DEFAULT_INJECTIONS });
/** The default app with Envoy offering its cpu request (as the node suite's overrides variant): a Deployment's template is then judged as its pods. */
const overridesConfig = resolveInjectorConfig({
  injections: DEFAULT_INJECTIONS.map((injection) => (injection.name !== 'envoy' ? injection : { ...injection, overrides: [{ annotation: 'envoy.example.com/cpu-request', container: 'envoy', resource: 'requests.cpu', max: '1' }] })),
});
let sink = 0; // keeps results alive so nothing is optimized away

interface Budget {
  readonly warmupIterations: number;
  readonly warmupMs: number;
  readonly minIterations: number;
  readonly maxIterations: number;
  readonly maxMs: number;
}

const SMALL: Budget = { warmupIterations: 1500, warmupMs: 150, minIterations: 2000, maxIterations: 5_000, maxMs: 350 };
const LARGE: Budget = { warmupIterations: 15, warmupMs: 500, minIterations: 100, maxIterations: 400, maxMs: 2_500 };

function operation(mode: EngineMode, encoded: Buffer, config = DEFAULT_CONFIG): () => number {
  const request = decodeAdmissionReview(JSON.parse(encoded.toString('utf8'))).request;
  switch (mode) {
    case 'engine':
      return () => evaluate(request, config).patch.length;
    case 'parse':
      return () => (JSON.parse(encoded.toString('utf8')) as { kind: string }).kind.length;
    case 'full':
      return () => {
        const review = decodeAdmissionReview(JSON.parse(encoded.toString('utf8')));
        const result = evaluate(review.request, config);
        const text = JSON.stringify(admissionReviewResponse(review.apiVersion, result.response));
        return Buffer.byteLength(text) + result.decisions.length;
      };
  }
}

function measure(run: () => number, budget: Budget): { iterations: number; us: Distribution } {
  const warmupEnd = performance.now() + budget.warmupMs;
  for (let i = 0; i < budget.warmupIterations && performance.now() < warmupEnd; i++) sink += run();
  const samples = new Float64Array(budget.maxIterations);
  const end = performance.now() + budget.maxMs;
  let n = 0;
  while (n < budget.maxIterations) {
    const start = process.hrtime.bigint();
    sink += run();
    samples[n++] = Number(process.hrtime.bigint() - start) / 1e3;
    if (n >= budget.minIterations && performance.now() >= end) break;
    // A hard stop even below minIterations: twice the budget.
    if (performance.now() > end + budget.maxMs) break;
  }
  return { iterations: n, us: distribution(samples, n) };
}

function runCase(name: string, group: EngineCase['group'], encoded: Buffer, mode: EngineMode, budget: Budget, config = DEFAULT_CONFIG): EngineCase {
  const request = decodeAdmissionReview(JSON.parse(encoded.toString('utf8'))).request;
  const patched = evaluate(request, config).patch.length > 0;
  const { iterations, us } = measure(operation(mode, encoded, config), budget);
  return { name, group, bytes: encoded.length, mode, patched, iterations, us };
}

export function runEngineBench(only?: string): EngineResults {
  const cases: EngineCase[] = [];
  const wanted = (name: string) => !only || name.includes(only);
  const modes: EngineMode[] = ['engine', 'parse', 'full'];
  for (const name of reviewNames()) {
    if (!wanted(name)) continue;
    const encoded = body(loadReview(name));
    for (const mode of modes) cases.push(runCase(name, 'recorded', encoded, mode, SMALL));
  }
  if (wanted('pod-1500-env')) {
    const encoded = podWithVariables(1500).body;
    for (const mode of modes) cases.push(runCase('pod-1500-env', 'large', encoded, mode, LARGE));
  }
  const sweepVariables: Record<string, number> = {};
  for (const size of SWEEP) {
    const name = `sweep-${size.label.replace(' ', '')}`;
    if (!wanted(name)) continue;
    const built = reviewOfSize(size.bytes);
    sweepVariables[size.label] = built.variables;
    for (const mode of modes) cases.push(runCase(name, 'sweep', built.body, mode, LARGE));
  }
  // What a workload's override annotation costs (issue 46): the recorded Deployment with and without
  // one in its template, under a config whose Envoy (an injection of pods) offers it.
  for (const [name, annotations] of [['deployment-override-preview', { 'envoy.example.com/cpu-request': '5' }], ['deployment-no-override', {}]] as const) {
    if (!wanted(name)) continue;
    const review = structuredClone(loadReview('deployment-create-frontend')) as any;
    const template = review.request.object.spec.template;
    template.metadata = { ...template.metadata, annotations: { ...template.metadata?.annotations, ...annotations } };
    for (const mode of modes) cases.push(runCase(name, 'overrides', body(review), mode, SMALL, overridesConfig));
  }
  return { cases, sweepVariables };
}

if (require.main === module) {
  const out = process.argv[2];
  const results = runEngineBench(process.argv[3]);
  const text = JSON.stringify({ ...results, sink }, null, 1);
  if (out) fs.writeFileSync(out, text);
  else process.stdout.write(text + '\n');
}
