// The one JSON line logged per admission: what it says, and how it is written without a second
// JSON.stringify of the same workload's fields.

import type { AdmissionRequest, InjectionDecision } from '../engine';
import { jsonString } from './json-text';
import { type Answered, type RequestLogFields } from './repeated-reviews';

/** The JSON list of the injections a result injected (config names: DNS labels, nothing to escape,
 * but written through jsonString all the same). */
function injectedNamesJson(decisions: readonly InjectionDecision[]): string {
  let text = '';
  for (const decision of decisions) if (decision.reason === 'injected') text += (text === '' ? '' : ',') + jsonString(decision.injection);
  return `[${text}]`;
}

/** `,"key":<JSON>` for a defined value, nothing for undefined (as JSON.stringify leaves it out). */
function member(key: string, value: string | undefined): string {
  return value === undefined ? '' : `,"${key}":${jsonString(value)}`;
}

/** What the line logged for each admission says, taken when the admission is answered. Only short
 * strings (bounded by `field`), numbers and the result's decisions: the logger keeps it until the
 * line is written, and none of the request may stay alive that long. */
export interface AdmissionLogFields {
  readonly uid: string | undefined;
  readonly kind: string | undefined;
  readonly namespace: string | undefined;
  readonly name: string | undefined;
  readonly operation: string | undefined;
  readonly dryRun: boolean;
  readonly decisions: readonly InjectionDecision[];
  readonly warnings: number;
  readonly elapsedMs: number;
}

export function requestLogFields(request: AdmissionRequest): RequestLogFields {
  const meta = (request.object?.metadata ?? {}) as Record<string, unknown>;
  return {
    kind: field(request.kind.kind),
    namespace: field(request.namespace),
    name: field(request.name) ?? field(meta.name) ?? field(meta.generateName),
    operation: field(request.operation),
    dryRun: request.dryRun === true,
  };
}

export function admissionLogFields(answered: Answered, uid: string | undefined, elapsedMs: number): AdmissionLogFields {
  const { kind, namespace, name, operation, dryRun } = answered.request;
  return { uid, kind, namespace, name, operation, dryRun, decisions: answered.decisions, warnings: answered.warnings?.length ?? 0, elapsedMs };
}

/** The members of an admission line from kind to injected, and the fields they were written from. */
interface WorkloadMembers {
  readonly fields: AdmissionLogFields;
  readonly text: string;
}

function sameWorkload(a: AdmissionLogFields, b: AdmissionLogFields): boolean {
  if (a.kind !== b.kind || a.namespace !== b.namespace || a.name !== b.name || a.operation !== b.operation || a.dryRun !== b.dryRun) return false;
  // Decisions are the engine's own objects, one per injection and reason: compared by identity.
  const x = a.decisions;
  const y = b.decisions;
  if (x.length !== y.length) return false;
  for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return false;
  return true;
}

/**
 * Writes the admission line's fields as JSON members without an object (when the logger flushes).
 * Admissions come in runs of one workload (a ReplicaSet's pods, each named by its generateName, and
 * the same injections), so the members from kind to injected are those of the line before more often
 * than not: they are kept for that one line and reused. One entry of short strings (`field` bounds
 * them), whatever the requests carry.
 */
export function admissionLogWriter(): (fields: AdmissionLogFields) => string {
  let last: WorkloadMembers | undefined;
  return (fields) => {
    let workload = last;
    if (workload === undefined || !sameWorkload(workload.fields, fields)) {
      const text =
        member('kind', fields.kind) +
        member('namespace', fields.namespace) +
        member('name', fields.name) +
        member('operation', fields.operation) +
        `,"dryRun":${fields.dryRun},"injected":${injectedNamesJson(fields.decisions)}`;
      last = workload = { fields, text };
    }
    return `${member('uid', fields.uid)}${workload.text},"warnings":${fields.warnings},"durationMs":${Math.round(fields.elapsedMs * 1e3) / 1e3}`;
  };
}

/** A log field from untrusted input: strings only, bounded. */
export function field(value: unknown): string | undefined {
  if (typeof value !== 'string' || value === '') return undefined;
  return value.length > 253 ? value.slice(0, 250) + '...' : value;
}
