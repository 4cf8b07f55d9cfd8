// The per-admission log line's members: what admissionLogWriter reuses from the line before (the
// members of one workload) must never carry over into a line of another workload.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { InjectionDecision } from '../../webhook/engine';
import { type AdmissionLogFields, admissionLogWriter } from '../../webhook/server/admission-log';

const decision = (injection: string, reason: InjectionDecision['reason']): InjectionDecision => Object.freeze({ injection, reason });
const ENVOY = decision('envoy', 'injected');
const NGINX = decision('nginx', 'injected');
const NGINX_OUT = decision('nginx', 'out-of-scope');

const base: AdmissionLogFields = {
  uid: 'u-0',
  kind: 'Pod',
  namespace: 'shop',
  name: 'web-7d9f-',
  operation: 'CREATE',
  dryRun: false,
  decisions: [ENVOY, NGINX],
  warnings: 0,
  elapsedMs: 0.25,
};

/** The line's members as the fields say, written from nothing. */
function expected(fields: AdmissionLogFields): Record<string, unknown> {
  const injected = fields.decisions.filter((d) => d.reason === 'injected').map((d) => d.injection);
  const entry: Record<string, unknown> = { uid: fields.uid, kind: fields.kind, namespace: fields.namespace, name: fields.name, operation: fields.operation };
  for (const key of Object.keys(entry)) if (entry[key] === undefined) delete entry[key];
  return { ...entry, dryRun: fields.dryRun, injected, warnings: fields.warnings, durationMs: fields.elapsedMs };
}

test('each line says its own admission, whatever the line before it was', () => {
  const write = admissionLogWriter();
  const variants: Partial<AdmissionLogFields>[] = [
    {},
    { uid: 'u-1', elapsedMs: 0.5, warnings: 2 },
    { namespace: 'other' },
    { name: 'db-0' },
    { kind: 'Deployment', operation: 'UPDATE' },
    { dryRun: true },
    { decisions: [ENVOY, NGINX_OUT] },
    // The same decisions in a new array: the members are those of the line before, rightly.
    { decisions: [ENVOY, NGINX] },
    { decisions: [ENVOY] },
    { name: undefined, namespace: 'we"ird\u00e9' },
    {},
  ];
  // Every order of neighbours: each variant after each other one.
  for (const before of variants) {
    for (const now of variants) {
      write({ ...base, ...before, uid: 'before' });
      const fields = { ...base, ...now };
      const line = JSON.parse(`{"msg":"admission"${write(fields)}}`);
      delete line.msg;
      assert.deepEqual(line, expected(fields), `after ${JSON.stringify(before)}`);
    }
  }
});
