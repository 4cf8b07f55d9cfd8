// Kubernetes Events on the objects the reconciler judges, where app teams look (`kubectl describe`,
// `kubectl get events`): why pods miss a sidecar, why nothing is done yet, what was done. One Event
// per object, reason and message, sent again only after `repeatAfterMs`: a pass every 30 s does not
// bury a namespace in copies. The table of what was sent is keyed by what pods carry (names), so it is
// bounded in bytes, checked before each insert; past the bound the oldest entries go first.

import { randomBytes } from 'node:crypto';
import type { Clock } from '../fleet/cluster';
import { RECONCILER_WRITES } from '../config';
import type { KubeApi } from '../kube-client/kube-api';

export interface EventTarget {
  /** Left out when unknown rather than guessed (an Event's involvedObject may omit it). */
  readonly apiVersion?: string;
  readonly kind: string;
  readonly namespace: string;
  readonly name: string;
  readonly uid?: string;
}

/** The reasons the reconciler writes, fixed words (they also label its metrics). */
export type EventReason =
  | 'SidecarsMissing'
  | 'SidecarsOutdated'
  | 'WaitingForInjector'
  | 'WaitingForDisruptionBudget'
  | 'WaitingForRollout'
  | 'RestartedForSidecars'
  | 'UpgradedSidecarsInPlace'
  | 'NotRepaired'
  | 'RepairFailed';

export const EVENT_COMPONENT = RECONCILER_WRITES.eventComponent;
/** Longest message written; the apiserver's own limit is 1 KiB for `note`, and longer says no more. */
const MAX_MESSAGE = 1000;
/** The sent-Events table's bound: keys are at most ~1.3 KiB (names and a message), so about 3,000 entries. */
export const SENT_EVENTS_MAX_BYTES = 4 * 1024 * 1024;

/** What one entry of the sent-Events table costs: the key's UTF-16 and the Map entry around it. */
const entryBytes = (key: string) => key.length * 2 + 64;

export class EventRecorder {
  private readonly sent = new Map<string, number>();
  private bytes = 0;
  /** Events that could not be written (RBAC, a full namespace quota): counted, never fatal. */
  failures = 0;

  constructor(
    private readonly api: KubeApi,
    private readonly clock: Clock,
    private readonly instance: string,
    private readonly repeatAfterMs = 15 * 60_000,
  ) {}

  /** Writes the Event unless the same one was written within `repeatAfterMs`; answers whether it wrote. */
  async record(target: EventTarget, type: 'Normal' | 'Warning', reason: EventReason, message: string): Promise<boolean> {
    const note = message.length > MAX_MESSAGE ? `${message.slice(0, MAX_MESSAGE - 3)}...` : message;
    const key = `${target.namespace}/${target.kind}/${target.name}\u0000${reason}\u0000${note}`;
    const now = this.clock.now();
    const last = this.sent.get(key);
    if (last !== undefined && now - last < this.repeatAfterMs) return false;
    this.remember(key, now);
    const time = new Date(now).toISOString().replace(/\.\d{3}Z$/, 'Z');
    try {
      await this.api.request('POST', `/api/v1/namespaces/${target.namespace}/events`, {
        body: {
          apiVersion: 'v1',
          kind: 'Event',
          metadata: { name: `${target.name.slice(0, 200)}.${randomBytes(8).toString('hex')}`, namespace: target.namespace },
          involvedObject: { ...(target.apiVersion !== undefined ? { apiVersion: target.apiVersion } : {}), kind: target.kind, namespace: target.namespace, name: target.name, ...(target.uid ? { uid: target.uid } : {}) },
          type,
          reason,
          message: note,
          source: { component: EVENT_COMPONENT },
          reportingComponent: EVENT_COMPONENT,
          reportingInstance: this.instance,
          action: reason,
          firstTimestamp: time,
          lastTimestamp: time,
          count: 1,
        },
      });
      return true;
    } catch {
      this.failures++;
      return false;
    }
  }

  private remember(key: string, now: number): void {
    const size = entryBytes(key);
    if (this.sent.has(key)) {
      this.sent.delete(key);
      this.bytes -= size;
    }
    while (this.bytes + size > SENT_EVENTS_MAX_BYTES && this.sent.size > 0) {
      const oldest = this.sent.keys().next().value as string;
      this.sent.delete(oldest);
      this.bytes -= entryBytes(oldest);
    }
    this.sent.set(key, now);
    this.bytes += size;
  }

  /** Entries and estimated bytes of the sent-Events table (for tests and metrics). */
  get size(): { entries: number; bytes: number } {
    return { entries: this.sent.size, bytes: this.bytes };
  }
}
