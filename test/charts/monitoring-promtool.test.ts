// Prometheus' own tool on the rules: `promtool check rules` on every variant's rule file (syntax,
// the annotations' templates), and `promtool test rules` on a case per alert that fires it, with the
// labels it must carry, and one that must leave it quiet (test/support/promtool-cases.ts). Where
// promtool is not installed (Debian's `prometheus` package has it; .ci/run installs it), skipped with one line.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { stringify } from 'yaml';
import { ruleFileText } from '../../charts/monitoring/monitoring-rules';
import type { RuleGroup } from '../../charts/monitoring/rule-types';
import { MONITORING_VARIANTS, type MonitoringVariant, allVariants } from '../support/monitoring-variants';
import { ALERT_CASES, type AlertCase } from '../support/promtool-cases';
import { TIMED_CASES, type TimedCase, stepOf } from '../support/promtool-timed-cases';
import { makeTempDir } from '../support/synth-helpers';

function findPromtool(): string | undefined {
  if (process.env.PROMTOOL) return process.env.PROMTOOL;
  const found = spawnSync('sh', ['-c', 'command -v promtool'], { encoding: 'utf8' });
  return found.status === 0 ? found.stdout.trim() : undefined;
}

const promtool = findPromtool();
const skip = promtool ? false : 'promtool not found (Debian: apt-get install prometheus; or set PROMTOOL)';
if (skip) console.log(`monitoring promtool tests skipped: ${skip}`);
const variants = allVariants();
const INJECTOR = 'sidecar-injector/sidecar-injector';

function run(args: string[]): { status: number | null; output: string } {
  const result = spawnSync(promtool!, args, { encoding: 'utf8' });
  return { status: result.status, output: `${result.stdout}${result.stderr}` };
}

/** The groups without the annotations: promtool's tests compare an alert's annotations exactly, and these render `$value`. */
function withoutAnnotations(groups: readonly RuleGroup[]): Record<string, unknown>[] {
  return groups.map((group) => ({ ...group, rules: group.rules.map((rule) => ('alert' in rule ? { ...rule, annotations: undefined } : rule)) }));
}

/** A promtool test file: for each case, a test where it fires with its labels and one where it stays quiet. */
function promtoolTests(ruleFile: string, cases: readonly AlertCase[]): string {
  const tests = cases.flatMap((alertCase) => [
    {
      name: `${alertCase.alert} fires`,
      interval: '1m',
      input_series: alertCase.firing.input,
      alert_rule_test: [{ eval_time: alertCase.firing.at, alertname: alertCase.alert, exp_alerts: alertCase.firing.labels.map((labels) => ({ exp_labels: { ...labels, sidecar_injector: INJECTOR } })) }],
    },
    {
      name: `${alertCase.alert} stays quiet: ${alertCase.quiet.why}`,
      interval: '1m',
      input_series: alertCase.quiet.input,
      alert_rule_test: [{ eval_time: alertCase.quiet.at, alertname: alertCase.alert, exp_alerts: [] }],
    },
  ]);
  return stringify({ rule_files: [ruleFile], evaluation_interval: '1m', tests }, { lineWidth: 0 });
}

const duration = (seconds: number) => `${seconds}s`;

/** The alerts a timed case expects at `seconds`: those fired and not yet resolved. */
function expectedAt(timedCase: TimedCase, seconds: number): Record<string, string>[] {
  return timedCase.expect.filter((alert) => alert.firesAt <= seconds && (alert.resolvesAt === undefined || seconds < alert.resolvesAt)).map((alert) => ({ ...alert.labels, sidecar_injector: INJECTOR }));
}

/** A promtool test file: each timed case checked at every evaluation, `step` seconds apart (the cases' step), from 0 to its end. */
function timedTests(ruleFile: string, cases: readonly TimedCase[], step: number): string {
  const tests = cases.map((timedCase) => {
    const times: number[] = [];
    for (let seconds = 0; seconds <= timedCase.until; seconds += step) times.push(seconds);
    return {
      name: `${timedCase.alert}, ${timedCase.scenario}`,
      interval: duration(step),
      input_series: timedCase.input,
      alert_rule_test: times.map((seconds) => ({ eval_time: duration(seconds), alertname: timedCase.alert, exp_alerts: expectedAt(timedCase, seconds).map((labels) => ({ exp_labels: labels })) })),
    };
  });
  return stringify({ rule_files: [ruleFile], evaluation_interval: duration(step), tests }, { lineWidth: 0 });
}

/** The props that set an alert's timing: a timed case's variant sets none of them. */
const TIMING_PROPS = ['evaluationInterval', 'alertAfter', 'keepFiringFor', 'staleAfter', 'rateWindow'];

describe('promtool', { skip }, () => {
  const dir = makeTempDir('promtool');

  test('checks every variant\'s rule file, annotations and all', () => {
    for (const variant of variants) {
      const file = path.join(dir, `${variant.name.replace(/\W+/g, '-')}.rules.yaml`);
      fs.writeFileSync(file, ruleFileText(variant.rules.groups));
      const result = run(['check', 'rules', file]);
      assert.equal(result.status, 0, `promtool check rules on ${variant.name}:\n${result.output}`);
    }
  });

  test('every alert of every variant has a case', () => {
    const covered = new Set(ALERT_CASES.map((alertCase) => alertCase.alert));
    const alerts = new Set(variants.flatMap((variant) => variant.rules.alerts.map(({ rule }) => rule.alert)));
    assert.deepEqual([...alerts].filter((alert) => !covered.has(alert)), [], 'alerts without a promtool case');
    for (const alertCase of ALERT_CASES) {
      assert.ok(alertCase.variant in MONITORING_VARIANTS, `${alertCase.alert}: no variant ${alertCase.variant}`);
      const variant = variants.find((candidate) => candidate.name === alertCase.variant)!;
      assert.ok(variant.rules.alerts.some(({ rule }) => rule.alert === alertCase.alert), `${alertCase.variant} has no ${alertCase.alert}`);
    }
  });

  for (const variantName of new Set(TIMED_CASES.map((timedCase) => timedCase.variant))) {
    test(`with the props' defaults, each counter alert fires and resolves when its case says, and at no other evaluation: ${variantName}`, () => {
      const set = TIMING_PROPS.filter((prop) => prop in (MONITORING_VARIANTS[variantName].monitoring ?? {}));
      assert.deepEqual(set, [], `${variantName} sets timing props`);
      const variant: MonitoringVariant = variants.find((candidate) => candidate.name === variantName)!;
      const slug = `timed-${variantName.replace(/\W+/g, '-')}`;
      const ruleFile = path.join(dir, `${slug}.stripped.rules.yaml`);
      fs.writeFileSync(ruleFile, stringify({ groups: withoutAnnotations(variant.rules.groups) }, { lineWidth: 0 }));
      const cases = TIMED_CASES.filter((timedCase) => timedCase.variant === variantName);
      // A test file has one evaluation interval: one file per step.
      for (const step of new Set(cases.map(stepOf))) {
        const testFile = path.join(dir, `${slug}.${step}s.test.yaml`);
        fs.writeFileSync(testFile, timedTests(path.basename(ruleFile), cases.filter((timedCase) => stepOf(timedCase) === step), step));
        const result = spawnSync(promtool!, ['test', 'rules', path.basename(testFile)], { encoding: 'utf8', cwd: dir });
        assert.equal(result.status, 0, `promtool test rules ${testFile}:\n${result.stdout}${result.stderr}`);
      }
    });
  }

  for (const variantName of new Set(ALERT_CASES.map((alertCase) => alertCase.variant))) {
    test(`fires and stays quiet as each case says: ${variantName}`, () => {
      const variant: MonitoringVariant = variants.find((candidate) => candidate.name === variantName)!;
      const slug = variantName.replace(/\W+/g, '-');
      const ruleFile = path.join(dir, `${slug}.stripped.rules.yaml`);
      fs.writeFileSync(ruleFile, stringify({ groups: withoutAnnotations(variant.rules.groups) }, { lineWidth: 0 }));
      const testFile = path.join(dir, `${slug}.test.yaml`);
      fs.writeFileSync(testFile, promtoolTests(path.basename(ruleFile), ALERT_CASES.filter((alertCase) => alertCase.variant === variantName)));
      const result = spawnSync(promtool!, ['test', 'rules', path.basename(testFile)], { encoding: 'utf8', cwd: dir });
      assert.equal(result.status, 0, `promtool test rules ${testFile}:\n${result.stdout}${result.stderr}`);
    });
  }
});
