// Prometheus text exposition, by hand: three counters and a histogram do not need a client library,
// and the hot path stays a few map lookups.
import type { DecisionReason } from '../engine';

/** Upper bounds in seconds; sub-millisecond buckets because an admission should take well under 1 ms. */
const LATENCY_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];

export type RequestOutcome = 'patched' | 'unchanged' | 'bad_request' | 'aborted' | 'unsupported_media_type' | 'too_large' | 'error';

function escapeLabel(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

export class WebhookMetrics {
  private readonly requests = new Map<RequestOutcome, number>();
  private readonly injections = new Map<string, Map<DecisionReason, number>>();
  private readonly reloads = new Map<string, number>();
  private readonly bucketCounts = new Array<number>(LATENCY_BUCKETS.length).fill(0);
  private latencyCount = 0;
  private latencySum = 0;
  configLoaded = 0;
  lastConfigReloadSuccessful = 1;

  countRequest(outcome: RequestOutcome, seconds: number): void {
    this.requests.set(outcome, (this.requests.get(outcome) ?? 0) + 1);
    this.latencyCount++;
    this.latencySum += seconds;
    for (let i = 0; i < LATENCY_BUCKETS.length; i++) {
      if (seconds <= LATENCY_BUCKETS[i]) {
        this.bucketCounts[i]++;
        break;
      }
    }
  }

  countInjection(injection: string, reason: DecisionReason): void {
    let byReason = this.injections.get(injection);
    if (!byReason) this.injections.set(injection, (byReason = new Map()));
    byReason.set(reason, (byReason.get(reason) ?? 0) + 1);
  }

  countReload(what: 'config' | 'certificate', result: 'success' | 'failure'): void {
    const key = `${what}\u0000${result}`;
    this.reloads.set(key, (this.reloads.get(key) ?? 0) + 1);
  }

  render(): string {
    const lines: string[] = [];
    lines.push('# HELP sidecar_injector_admission_requests_total Admission requests answered, by outcome.');
    lines.push('# TYPE sidecar_injector_admission_requests_total counter');
    for (const [outcome, count] of this.requests) lines.push(`sidecar_injector_admission_requests_total{outcome="${outcome}"} ${count}`);
    lines.push('# HELP sidecar_injector_admission_duration_seconds Time from request received to response written.');
    lines.push('# TYPE sidecar_injector_admission_duration_seconds histogram');
    let cumulative = 0;
    LATENCY_BUCKETS.forEach((bound, i) => {
      cumulative += this.bucketCounts[i];
      lines.push(`sidecar_injector_admission_duration_seconds_bucket{le="${bound}"} ${cumulative}`);
    });
    lines.push(`sidecar_injector_admission_duration_seconds_bucket{le="+Inf"} ${this.latencyCount}`);
    lines.push(`sidecar_injector_admission_duration_seconds_sum ${this.latencySum}`);
    lines.push(`sidecar_injector_admission_duration_seconds_count ${this.latencyCount}`);
    lines.push('# HELP sidecar_injector_injections_total Injection decisions, by injection and reason.');
    lines.push('# TYPE sidecar_injector_injections_total counter');
    for (const [injection, byReason] of this.injections) {
      for (const [reason, count] of byReason) {
        lines.push(`sidecar_injector_injections_total{injection="${escapeLabel(injection)}",reason="${reason}"} ${count}`);
      }
    }
    lines.push('# HELP sidecar_injector_reloads_total Reloads of the mounted config and certificate, by result.');
    lines.push('# TYPE sidecar_injector_reloads_total counter');
    for (const [key, count] of this.reloads) {
      const [what, result] = key.split('\u0000');
      lines.push(`sidecar_injector_reloads_total{what="${what}",result="${result}"} ${count}`);
    }
    lines.push('# HELP sidecar_injector_config_last_reload_successful 1 if the last config (re)load succeeded, 0 if the last good config is still serving.');
    lines.push('# TYPE sidecar_injector_config_last_reload_successful gauge');
    lines.push(`sidecar_injector_config_last_reload_successful ${this.lastConfigReloadSuccessful}`);
    return lines.join('\n') + '\n';
  }
}
