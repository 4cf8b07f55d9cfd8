import * as fs from 'node:fs';
import { synthChart } from '../test/support/synth-helpers';
import { WebhookServer } from '../charts/webhook-server';
import { ENVOY_V1, envoyInjection } from '../test/support/revision-fixtures';
const out = process.argv[2];
const cases: Record<string, any> = {
  plain: { injections: [envoyInjection(ENVOY_V1)] },
  rec: { injections: [envoyInjection(ENVOY_V1)], reconciler: {} },
  recInPlace: { injections: [envoyInjection(ENVOY_V1)], reconciler: { outdated: 'in-place', resources: { limits: { memory: '300Mi' } } }, server: WebhookServer.fromBundle() },
  recPolicy: { injections: [envoyInjection(ENVOY_V1)], reconciler: { missing: 'report' }, backend: 'admissionPolicy' },
};
fs.mkdirSync(out, { recursive: true });
for (const [name, props] of Object.entries(cases)) {
  const { manifests } = synthChart(props);
  const cleaned = manifests.filter((m) => m.kind !== 'Secret').map((m) => JSON.parse(JSON.stringify(m, (k, v) => (k === 'caBundle' || k === 'checksum/tls' ? '<tls>' : v))));
  fs.writeFileSync(`${out}/${name}.json`, JSON.stringify(cleaned, null, 1));
}
