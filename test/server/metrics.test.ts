// Injection decisions are counted by the engine's own decision objects (metrics.ts countDecisions) and
// reported by injection name and reason: the same totals as counting by name, whatever objects carry them.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { InjectionDecision } from '../../webhook/engine';
import { WebhookMetrics } from '../../webhook/server/metrics';

async function injectionSeries(metrics: WebhookMetrics): Promise<Record<string, number>> {
  const text = await metrics.render();
  const series: Record<string, number> = {};
  for (const match of text.matchAll(/^sidecar_injector_injections_total\{injection="([^"]+)",reason="([^"]+)"\} (\d+)$/gm)) series[`${match[1]}/${match[2]}`] = Number(match[3]);
  return series;
}

describe('WebhookMetrics.countDecisions', () => {
  test('decisions are reported by injection and reason, summed over the objects that carry them, across scrapes', async () => {
    const metrics = new WebhookMetrics();
    const envoyInjected: InjectionDecision = Object.freeze({ injection: 'envoy', reason: 'injected' });
    const nginxOptedOut: InjectionDecision = Object.freeze({ injection: 'nginx', reason: 'opted-out' });
    // The same injection and reason from a reloaded config: another object.
    const envoyInjectedAgain: InjectionDecision = Object.freeze({ injection: 'envoy', reason: 'injected' });
    metrics.countDecisions([envoyInjected, nginxOptedOut]);
    metrics.countDecisions([envoyInjected, nginxOptedOut]);
    metrics.countDecisions([envoyInjectedAgain]);
    assert.deepEqual(await injectionSeries(metrics), { 'envoy/injected': 3, 'nginx/opted-out': 2 });
    metrics.countDecisions([envoyInjected]);
    assert.deepEqual(await injectionSeries(metrics), { 'envoy/injected': 4, 'nginx/opted-out': 2 }, 'counts go on from the last scrape');
  });

  test('a revision\'s decisions carry its name in a revision label; the config without revisions has none', async () => {
    const metrics = new WebhookMetrics();
    const r1: InjectionDecision = Object.freeze({ injection: 'envoy', reason: 'injected' });
    const r2: InjectionDecision = Object.freeze({ injection: 'envoy', reason: 'injected' });
    const plain: InjectionDecision = Object.freeze({ injection: 'envoy', reason: 'opted-out' });
    metrics.countDecisions([r1], 'r1');
    metrics.countDecisions([r1], 'r1');
    metrics.countDecisions([r2], 'r2');
    // One object counted under another revision too (a view that shares it) stays apart by revision.
    metrics.countDecisions([r1], 'r2');
    metrics.countDecisions([plain]);
    const series = (await metrics.render()).split('\n').filter((line) => line.startsWith('sidecar_injector_injections_total{')).sort();
    assert.deepEqual(series, [
      'sidecar_injector_injections_total{injection="envoy",reason="injected",revision="r1"} 2',
      'sidecar_injector_injections_total{injection="envoy",reason="injected",revision="r2"} 2',
      'sidecar_injector_injections_total{injection="envoy",reason="opted-out"} 1',
    ]);
  });

  test('decision objects beyond the bound are folded into the totals, none lost', async () => {
    const metrics = new WebhookMetrics();
    // Far more distinct objects than are kept apart (a config reloaded thousands of times).
    for (let i = 0; i < 5000; i++) metrics.countDecisions([Object.freeze({ injection: `i${i % 3}`, reason: 'injected' }), Object.freeze({ injection: 'x', reason: 'no-change' })]);
    assert.deepEqual(await injectionSeries(metrics), { 'i0/injected': 1667, 'i1/injected': 1667, 'i2/injected': 1666, 'x/no-change': 5000 });
    assert.ok((metrics as unknown as { byDecision: Map<unknown, unknown> }).byDecision.size <= 1024, 'the table of decision objects stays bounded');
  });
});
