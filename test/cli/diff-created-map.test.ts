// `diff` prints the patch the webhook answers, not the patch after the preview applied it: an
// operation into a map an earlier operation created (the hashes annotation after the status one)
// must not show up inside that earlier operation's value.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { evaluate } from '../../webhook/engine';
import { resolveInjectorConfig } from '../../webhook/config';
import { createRequestFor } from '../../webhook/fleet/admission-request';
import { describeRun, runCliProcess } from '../support/cli-process';
import { decodePatch } from '../support/recorded-reviews';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { makeTempDir } from '../support/synth-helpers';

test('diff -o json prints the webhook\'s own operations when one adds into a map another created', () => {
  const injections = [{ name: 'wait', trigger: { type: 'always' as const }, targetKinds: ['Deployment' as const], initContainers: [{ name: 'wait', image: 'busybox:1.36' }] }];
  const config = path.join(makeTempDir('diff-map'), 'config.json');
  fs.writeFileSync(config, JSON.stringify({ injections }));
  const deployment = {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'web', namespace: 'shop' },
    spec: { selector: { matchLabels: { app: 'web' } }, template: { metadata: { labels: { app: 'web' } }, spec: { containers: [{ name: 'app', image: 'nginx:1.27' }] } } },
  };
  const run = runCliProcess(['diff', '--config', config, '-f', '-', '-o', 'json'], { stdin: JSON.stringify(deployment) });
  assert.equal(run.status, 0, describeRun(run));
  const printed: any[] = JSON.parse(run.stdout)[0].patch;
  const answered = decodePatch(evaluate(createRequestFor(deployment, 'shop', 'u'), resolveInjectorConfig({ injections })).response);
  assert.deepEqual(printed, answered as any[]);
  assert.deepEqual(Object.keys(printed.find((operation) => operation.path === '/spec/template/metadata/annotations')?.value ?? {}), ['sidecar-injector.io/status']);
});
