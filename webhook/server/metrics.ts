// Prometheus metrics through prom-client: the webhook's own series plus the standard process and
// Node.js ones (resident memory, heap, event-loop lag, GC). The hot path only bumps plain numbers
// (no label strings hashed per request); prom-client reads them when /metrics is scraped.
import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import type { DecisionReason, InjectionDecision, PodWarningReason, UnservedRevisionChooser } from '../engine';
import type { Logger } from './logger';
import type { MemoryBudget } from './memory-budget';

/** Upper bounds in seconds; sub-millisecond buckets because an admission should take well under 1 ms. */
const LATENCY_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];

export const REQUEST_OUTCOMES = ['patched', 'unchanged', 'bad_request', 'aborted', 'unsupported_media_type', 'too_large', 'shed', 'error'] as const;
export type RequestOutcome = (typeof REQUEST_OUTCOMES)[number];

/**
 * A histogram without labels whose observe() only bumps plain numbers (prom-client's Histogram
 * validates and hashes its labels on every observation). Registered with prom-client's registry,
 * which reads it, in its Histogram's shape, when /metrics is scraped.
 */
class PlainHistogram {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  private readonly counts: Float64Array;
  private sum = 0;
  private count = 0;

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly upperBounds: readonly number[],
  ) {
    this.counts = new Float64Array(upperBounds.length);
  }

  observe(value: number): void {
    this.sum += value;
    this.count++;
    const bounds = this.upperBounds;
    for (let i = 0; i < bounds.length; i++) {
      if (value <= bounds[i]) {
        this.counts[i]++;
        return;
      }
    }
  }

  get(): { name: string; help: string; type: string; aggregator: string; values: { labels: Record<string, string | number>; value: number; metricName: string }[] } {
    let cumulative = 0;
    const values: { labels: Record<string, string | number>; value: number; metricName: string }[] = this.upperBounds.map((le, i) => {
      cumulative += this.counts[i];
      return { labels: { le }, value: cumulative, metricName: `${this.name}_bucket` };
    });
    values.push({ labels: { le: '+Inf' }, value: this.count, metricName: `${this.name}_bucket` });
    values.push({ labels: {}, value: this.sum, metricName: `${this.name}_sum` });
    values.push({ labels: {}, value: this.count, metricName: `${this.name}_count` });
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }

  reset(): void {
    this.counts.fill(0);
    this.sum = 0;
    this.count = 0;
  }
}

/** Most decision objects counted apart before they are folded into the counts by name (each config
 * reload brings new ones; a config has one per injection and reason). */
const MAX_DECISION_COUNTERS = 1024;

const OUTCOME_INDEX = Object.fromEntries(REQUEST_OUTCOMES.map((outcome, i) => [outcome, i])) as Record<RequestOutcome, number>;

export class WebhookMetrics {
  readonly registry = new Registry();
  /** Answers per outcome, in REQUEST_OUTCOMES order. */
  private readonly requests = new Float64Array(REQUEST_OUTCOMES.length);
  /** Decisions by revision ('' for the config as loaded, which has none), injection and reason. */
  private readonly injections = new Map<string, Map<string, Map<DecisionReason, number>>>();
  /** Decisions counted by the engine's own decision objects, not yet folded into `injections`. */
  private readonly byDecision = new Map<InjectionDecision, { count: number; readonly revision: string }>();
  private readonly podWarnings = new Map<string, Map<PodWarningReason, number>>();
  /** Override values ignored, by the JSON of `[injection, annotation, reason]`: every part from the config or a fixed set, never from a request. */
  private readonly ignoredOverrides = new Map<string, number>();
  private readonly duration: PlainHistogram;
  private readonly reloads: Counter<'what' | 'result'>;
  lastConfigReloadSuccessful = 1;
  /** The serving certificate's notAfter, in Unix seconds; undefined (and no series) until one is read. */
  private certificateNotAfterSeconds?: number;
  /** Reviews answered from the review they repeat (countRepeatedReview). */
  repeatedReviews = 0;
  /** Admissions whose revision label names nothing served, by who chose (a fixed word, never the request's label). */
  readonly unservedRevisions: Record<UnservedRevisionChooser, number> = { namespace: 0, workload: 0, 'missing-revision': 0 };

  constructor(budget?: MemoryBudget, logger?: Pick<Logger, 'droppedLines'>) {
    const registers = [this.registry];
    const metrics = this;
    collectDefaultMetrics({ register: this.registry });
    new Counter({
      name: 'sidecar_injector_admission_requests_total',
      help: 'Admission requests answered, by outcome ("shed": 429, over the memory budget).',
      labelNames: ['outcome'],
      registers,
      collect() {
        this.reset();
        REQUEST_OUTCOMES.forEach((outcome, i) => {
          if (metrics.requests[i] > 0) this.inc({ outcome }, metrics.requests[i]);
        });
      },
    });
    new Counter({
      name: 'sidecar_injector_repeated_reviews_total',
      help: 'Admission reviews that repeated an earlier one but for their uid (a ReplicaSet\'s pods), answered with its answer without being parsed or evaluated.',
      registers,
      collect() {
        this.reset();
        this.inc(metrics.repeatedReviews);
      },
    });
    new Counter({
      name: 'sidecar_injector_unserved_revision_total',
      help:
        'Admissions whose <prefix>/rev label (the namespace\'s or the object\'s) named no revision or tag the config serves, ' +
        'or that reached a revision the loaded config lacks ("missing-revision"): admitted with a warning, or refused (unservedRevision).',
      labelNames: ['chooser'],
      registers,
      collect() {
        this.reset();
        for (const [chooser, count] of Object.entries(metrics.unservedRevisions)) if (count > 0) this.inc({ chooser }, count);
      },
    });
    this.duration = new PlainHistogram('sidecar_injector_admission_duration_seconds', 'Time from request received to response written.', LATENCY_BUCKETS);
    // prom-client's registry reads any object with a name and get(); the type declares only its own metrics.
    this.registry.registerMetric(this.duration as never);
    new Counter({
      name: 'sidecar_injector_injections_total',
      help: 'Injection decisions, by injection and reason, and the revision that decided (no revision label for a config without revisions).',
      labelNames: ['injection', 'reason', 'revision'],
      registers,
      collect() {
        this.reset();
        metrics.foldDecisions();
        for (const [revision, byInjection] of metrics.injections) {
          for (const [injection, byReason] of byInjection) {
            for (const [reason, count] of byReason) this.inc(revision === '' ? { injection, reason } : { injection, reason, revision }, count);
          }
        }
      },
    });
    new Counter({
      name: 'sidecar_injector_pod_warnings_total',
      help: 'Warnings that an injection makes a pod worse (its QoS class changed, a Job that will not complete), and what an injection in audit mode would have added (reason audit), by injection and reason.',
      labelNames: ['injection', 'reason'],
      registers,
      collect() {
        this.reset();
        for (const [injection, byReason] of metrics.podWarnings) {
          for (const [reason, count] of byReason) this.inc({ injection, reason }, count);
        }
      },
    });
    new Counter({
      name: 'sidecar_injector_override_values_ignored_total',
      help: 'Override annotation values not used (the configured value applied), by injection, the offered annotation ("(not offered)" for a key no override offers, "(namespace)" when the namespace defaults were not known) and reason.',
      labelNames: ['injection', 'annotation', 'reason'],
      registers,
      collect() {
        this.reset();
        for (const [key, count] of metrics.ignoredOverrides) {
          const [injection, annotation, reason] = JSON.parse(key) as [string, string, string];
          this.inc({ injection, annotation, reason }, count);
        }
      },
    });
    this.reloads = new Counter({
      name: 'sidecar_injector_reloads_total',
      help: 'Reloads of the mounted config and certificate, by result.',
      labelNames: ['what', 'result'],
      registers,
    });
    // Every series from the start at 0: increase() sees the first failure only if the series existed before it.
    for (const what of ['config', 'certificate'] as const) for (const result of ['success', 'failure'] as const) this.reloads.inc({ what, result }, 0);
    new Gauge({
      name: 'sidecar_injector_config_last_reload_successful',
      help: '1 if the last config (re)load succeeded, 0 if the last good config is still serving.',
      registers,
      collect() {
        this.set(metrics.lastConfigReloadSuccessful);
      },
    });
    if (logger) {
      new Counter({
        name: 'sidecar_injector_log_lines_dropped_total',
        help: 'Log lines dropped because stdout was not read fast enough (more than 1 MiB waiting).',
        registers,
        collect() {
          this.reset();
          this.inc(logger.droppedLines);
        },
      });
    }
    if (budget) {
      new Gauge({
        name: 'sidecar_injector_memory_budget_bytes',
        help: 'Budget units the request bodies held at once may be charged (derived from the container memory limit): a body is charged by its JSON shape, at least its length; past it, 429.',
        registers,
        collect() {
          this.set(budget.sizing.budgetBytes);
        },
      });
      new Gauge({
        name: 'sidecar_injector_memory_budget_held_bytes',
        help: 'Budget units held right now by request bodies being read plus requests being processed (charged by JSON shape, at least their length).',
        registers,
        collect() {
          this.set(budget.held);
        },
      });
      new Gauge({
        name: 'sidecar_injector_memory_budget_peak_held_bytes',
        help: 'The most budget units held at once since start (request bodies charged by JSON shape, at least their length).',
        registers,
        collect() {
          this.set(budget.peakHeld);
        },
      });
    }
  }

  /** An admission answered for a revision label that names nothing served. */
  countUnservedRevision(chooser: UnservedRevisionChooser): void {
    this.unservedRevisions[chooser]++;
  }

  /** An admission review answered with the answer to an earlier one it repeats (repeated-reviews.ts). */
  countRepeatedReview(): void {
    this.repeatedReviews++;
  }

  countRequest(outcome: RequestOutcome, seconds: number): void {
    this.requests[OUTCOME_INDEX[outcome]]++;
    this.duration.observe(seconds);
  }


  /**
   * Counts a result's decisions. The engine makes each decision object once per injection and reason
   * (per config) and hands out the same one on every request, so a decision is counted by its object:
   * one Map lookup and an increment, where counting by injection name and reason took three Map
   * operations per decision. Folded into the counts by name when scraped, and once MAX_DECISION_COUNTERS
   * objects are counted apart (configs reloaded again and again), so the table stays small.
   */
  countDecisions(decisions: readonly InjectionDecision[], revision = ''): void {
    for (const decision of decisions) {
      const counter = this.byDecision.get(decision);
      if (counter !== undefined && counter.revision === revision) {
        counter.count++;
        continue;
      }
      // One decision object under two revisions (a view that shares it): counted by name for this one.
      if (counter !== undefined) {
        this.countByName(revision, decision, 1);
        continue;
      }
      if (this.byDecision.size >= MAX_DECISION_COUNTERS) this.foldDecisions();
      this.byDecision.set(decision, { count: 1, revision });
    }
  }

  private foldDecisions(): void {
    for (const [decision, counter] of this.byDecision) this.countByName(counter.revision, decision, counter.count);
    this.byDecision.clear();
  }

  private countByName(revision: string, decision: InjectionDecision, count: number): void {
    let byInjection = this.injections.get(revision);
    if (!byInjection) this.injections.set(revision, (byInjection = new Map()));
    let byReason = byInjection.get(decision.injection);
    if (!byReason) byInjection.set(decision.injection, (byReason = new Map()));
    byReason.set(decision.reason, (byReason.get(decision.reason) ?? 0) + count);
  }

  countPodWarning(injection: string, reason: PodWarningReason): void {
    let byReason = this.podWarnings.get(injection);
    if (!byReason) this.podWarnings.set(injection, (byReason = new Map()));
    byReason.set(reason, (byReason.get(reason) ?? 0) + 1);
  }

  /** Counts an override value not used. The labels come from the config (or are fixed words), so the series stay few. */
  countIgnoredOverride(injection: string, annotation: string, reason: string): void {
    const key = JSON.stringify([injection || '(none)', annotation, reason]);
    this.ignoredOverrides.set(key, (this.ignoredOverrides.get(key) ?? 0) + 1);
  }

  /** Series of the namespace defaults table: namespaces and bytes kept, namespaces not kept, whether listed. */
  watchNamespaceDefaults(table: { readonly size: { entries: number; bytes: number; overflowed: number; synced: boolean } }): void {
    const series: [string, string, (size: typeof table.size) => number][] = [
      ['sidecar_injector_namespace_defaults_entries', 'Namespaces whose override defaults the webhook keeps.', (size) => size.entries],
      ['sidecar_injector_namespace_defaults_bytes', 'Bytes the namespace defaults table holds (bounded).', (size) => size.bytes],
      ['sidecar_injector_namespace_defaults_not_kept', 'Namespaces whose override defaults did not fit the table: admissions there warn that the defaults are unknown.', (size) => size.overflowed],
      ['sidecar_injector_namespace_defaults_synced', '1 once the namespaces have been listed.', (size) => (size.synced ? 1 : 0)],
    ];
    for (const [name, help, read] of series) {
      new Gauge({
        name,
        help,
        registers: [this.registry],
        collect() {
          this.set(read(table.size));
        },
      });
    }
  }

  /** Series of the webhook port's connection table: connections open, and closed by the server by reason. */
  watchConnections(table: { readonly size: number; readonly closed: Readonly<Record<string, number>>; readonly streams?: number; readonly streamsReset?: Readonly<Record<string, number>> }): void {
    if (table.streamsReset !== undefined) {
      const reset = table.streamsReset;
      new Gauge({
        name: 'sidecar_injector_http2_streams_in_flight',
        help: 'HTTP/2 streams in flight on the webhook port, across every session (capped at the connection cap).',
        registers: [this.registry],
        collect() {
          this.set(table.streams ?? 0);
        },
      });
      new Counter({
        name: 'sidecar_injector_http2_streams_reset_total',
        help: 'HTTP/2 streams the server reset with their session kept, by reason: "slow_body" after answering 408 to a body slower than the minimum rate, "evicted" a stream waiting on its client (for its body, or to read its answer) to make room at the stream cap, "refused" a new stream at the cap while every other was being answered (REFUSED_STREAM, which a client may retry).',
        labelNames: ['reason'],
        registers: [this.registry],
        collect() {
          this.reset();
          for (const [reason, count] of Object.entries(reset)) this.inc({ reason }, count);
        },
      });
    }
    new Gauge({
      name: 'sidecar_injector_connections_open',
      help: 'Connections open on the webhook port.',
      registers: [this.registry],
      collect() {
        this.set(table.size);
      },
    });
    new Counter({
      name: 'sidecar_injector_connections_closed_total',
      help: 'Connections the server closed on the webhook port, by reason: "evicted" to make room at the cap, "displaced" at the cap for a new connection of its own source, which holds more than its fair share, "over_share" at accept at the cap, before the TLS handshake, for a source over its share that may not displace one now, "silent" after 120 s without a byte, "slow_body" for a body slower than the minimum rate (408), "reset_flood" an HTTP/2 session whose client reset its own unanswered streams faster than allowed (rapid reset).',
      labelNames: ['reason'],
      registers: [this.registry],
      collect() {
        this.reset();
        for (const [reason, count] of Object.entries(table.closed)) this.inc({ reason }, count);
      },
    });
  }

  /**
   * The serving certificate now in use expires at `notAfter`. Its series appears with the first
   * certificate: a gauge read before would say 0, an expiry long past.
   */
  serveCertificateUntil(notAfter: Date): void {
    if (this.certificateNotAfterSeconds === undefined) {
      const metrics = this;
      new Gauge({
        name: 'sidecar_injector_serving_certificate_expiration_timestamp_seconds',
        help: 'When the serving certificate in use expires (its notAfter), in Unix seconds.',
        registers: [this.registry],
        collect() {
          this.set(metrics.certificateNotAfterSeconds!);
        },
      });
    }
    this.certificateNotAfterSeconds = notAfter.getTime() / 1000;
  }

  countReload(what: 'config' | 'certificate', result: 'success' | 'failure'): void {
    this.reloads.inc({ what, result });
  }

  /** Requests answered with `outcome` so far. */
  requestCount(outcome: RequestOutcome): number {
    return this.requests[OUTCOME_INDEX[outcome]];
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  /** The Prometheus text exposition of every series. */
  render(): Promise<string> {
    return this.registry.metrics();
  }
}
