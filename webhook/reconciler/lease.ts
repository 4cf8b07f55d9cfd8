// One replica acts at a time: it holds a coordination.k8s.io/v1 Lease and renews it every third of its
// duration. Another replica takes the Lease only once it has seen the same record unchanged for a whole
// duration, by its own clock (as client-go's leader election does: no clock comparison between nodes).
// A holder that fails to renew within the duration stops acting before anyone else may start: `held()`
// answers from its own last successful renewal, and every repair asks it first.

import type { Clock } from '../fleet/cluster';
import { type KubeApi, isConflict, isNotFound } from '../kube-client/kube-api';

export interface LeaseSettings {
  readonly namespace: string;
  readonly name: string;
  /** This replica's name (the pod's). */
  readonly identity: string;
  readonly durationSeconds: number;
}

/** A MicroTime as the API writes it: RFC 3339 with microseconds. */
const microTime = (ms: number) => new Date(ms).toISOString().replace(/Z$/, '000Z');

export class LeaderLease {
  /** When this replica last wrote the Lease as holder (its own clock); undefined: not the holder. */
  private renewedAt: number | undefined;
  /** The other holder's record as last seen, and when it was first seen so. */
  private observed: { holder: string; record: string; since: number } | undefined;

  constructor(
    private readonly api: KubeApi,
    private readonly clock: Clock,
    private readonly settings: LeaseSettings,
    private readonly onChange: (held: boolean, holder: string | undefined) => void = () => {},
  ) {}

  private get path(): string {
    return `/apis/coordination.k8s.io/v1/namespaces/${this.settings.namespace}/leases/${this.settings.name}`;
  }

  /** Whether this replica holds the Lease now: renewed within the duration (less a second of margin). */
  held(): boolean {
    return this.renewedAt !== undefined && this.clock.now() - this.renewedAt < (this.settings.durationSeconds - 1) * 1000;
  }

  /** Takes or renews the Lease; answers whether this replica holds it. Errors leave it not held. */
  async tryAcquireOrRenew(): Promise<boolean> {
    const before = this.held();
    try {
      const holds = await this.attempt();
      if (!holds) this.renewedAt = undefined;
      return holds;
    } catch (error) {
      // Not renewed: held() runs out on its own by the duration, as it must (the others wait that long).
      if (!isConflict(error)) throw error;
      return this.held();
    } finally {
      const after = this.held();
      if (after !== before) this.onChange(after, after ? this.settings.identity : this.observed?.holder);
    }
  }

  private async attempt(): Promise<boolean> {
    const now = this.clock.now();
    const { identity, durationSeconds } = this.settings;
    let lease: any;
    try {
      lease = await this.api.request('GET', this.path);
    } catch (error) {
      if (!isNotFound(error)) throw error;
      await this.api.request('POST', `/apis/coordination.k8s.io/v1/namespaces/${this.settings.namespace}/leases`, {
        body: {
          apiVersion: 'coordination.k8s.io/v1',
          kind: 'Lease',
          metadata: { name: this.settings.name, namespace: this.settings.namespace },
          spec: { holderIdentity: identity, leaseDurationSeconds: durationSeconds, acquireTime: microTime(now), renewTime: microTime(now), leaseTransitions: 0 },
        },
      });
      this.renewedAt = now;
      return true;
    }
    const spec = lease.spec ?? {};
    const holder = typeof spec.holderIdentity === 'string' ? spec.holderIdentity : '';
    if (holder !== identity && holder !== '') {
      const record = `${holder}\u0000${spec.renewTime ?? ''}\u0000${spec.leaseDurationSeconds ?? ''}`;
      if (this.observed?.record !== record) this.observed = { holder, record, since: now };
      const duration = (Number(spec.leaseDurationSeconds) || durationSeconds) * 1000;
      if (now - this.observed.since < duration) return false;
    }
    const taking = holder !== identity;
    await this.api.request('PUT', this.path, {
      body: {
        ...lease,
        spec: {
          ...spec,
          holderIdentity: identity,
          leaseDurationSeconds: durationSeconds,
          renewTime: microTime(now),
          ...(taking ? { acquireTime: microTime(now), leaseTransitions: (Number(spec.leaseTransitions) || 0) + 1 } : {}),
        },
      },
    });
    this.renewedAt = now;
    this.observed = undefined;
    return true;
  }

  /** Gives the Lease up (on SIGTERM), so the other replica takes it at once rather than after a duration. */
  async release(): Promise<void> {
    if (!this.held()) return;
    this.renewedAt = undefined;
    try {
      const lease = await this.api.request('GET', this.path);
      if (lease?.spec?.holderIdentity !== this.settings.identity) return;
      await this.api.request('PUT', this.path, { body: { ...lease, spec: { ...lease.spec, holderIdentity: '', renewTime: microTime(this.clock.now()) } } });
    } catch {
      // Not released: the other replica waits out the duration instead.
    }
  }
}
