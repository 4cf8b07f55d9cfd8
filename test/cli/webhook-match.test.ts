// Whether the apiserver calls the webhook: rules, namespaceSelector and objectSelector, as the CLI and
// the package's matchWebhook evaluate them, on the synthesized webhook configuration and on hand-made
// rules that probe the apiserver's matching semantics.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { matchWebhook, matchWebhookConfiguration, MutatingWebhook, type MutatingWebhookConfiguration } from '../../charts/engine';
import { webhookCalledFor } from '../../webhook/engine/webhook-match';
import { synthChart, findManifest } from '../support/synth-helpers';

const podCreate = { group: '', version: 'v1', resource: 'pods', operation: 'CREATE', namespace: 'shop' };

describe('the synthesized webhook configuration, as the apiserver matches it', () => {
  const configuration = findManifest(
    synthChart({ injections: [{ name: 'envoy', trigger: { type: 'always' }, targetKinds: ['Pod', 'Job'], containers: [{ name: 'envoy', image: 'envoy' }] }] }).manifests,
    'MutatingWebhookConfiguration',
  );
  const [webhook] = configuration.webhooks;

  test('a pod created in a namespace labelled injection=enabled is sent', () => {
    const [match] = matchWebhookConfiguration(configuration, { ...podCreate, namespaceLabels: { injection: 'enabled' } });
    assert.equal(match.called, true, match.reason);
    assert.equal(match.webhook, webhook.name);
  });

  test('a pod in a namespace without the label is not sent, and the reason names the missing label', () => {
    const match = matchWebhook(webhook, podCreate);
    assert.equal(match.called, false);
    assert.equal(match.namespaceSelector.matches, false);
    assert.equal(match.reason, 'namespace "shop" is not selected: needs label injection=enabled (namespace "shop" has no label injection)');
  });

  test('kube-system and the injector namespace are excluded even when labelled, by the name label the apiserver sets', () => {
    for (const namespace of ['kube-system', 'kube-public', 'kube-node-lease', 'sidecar-injector']) {
      const match = matchWebhook(webhook, { ...podCreate, namespace, namespaceLabels: { injection: 'enabled' } });
      assert.equal(match.called, false, `${namespace}: ${match.reason}`);
      assert.match(match.reason, new RegExp(`excludes kubernetes.io/metadata.name in .* \\(namespace "${namespace}" has kubernetes.io/metadata.name=${namespace}\\)`));
    }
  });

  test("the webhook's own pods are excluded by the objectSelector", () => {
    const match = matchWebhook(webhook, { ...podCreate, namespaceLabels: { injection: 'enabled' }, objectLabels: { 'sidecar-injector.io/webhook': 'true' } });
    assert.equal(match.called, false);
    assert.match(match.objectSelector.reason, /excludes objects labelled sidecar-injector.io\/webhook/);
  });

  test('rules: pods only on CREATE, Jobs on CREATE and UPDATE, Deployments not at all when no injection targets them', () => {
    const labelled = { namespaceLabels: { injection: 'enabled' } };
    assert.equal(matchWebhook(webhook, { ...podCreate, ...labelled, operation: 'UPDATE' }).rules.matches, false, 'pods are not sent on UPDATE');
    const job = { ...podCreate, ...labelled, group: 'batch', resource: 'jobs' };
    assert.equal(matchWebhook(webhook, job).called, true);
    assert.equal(matchWebhook(webhook, { ...job, operation: 'UPDATE' }).called, true);
    const deployment = matchWebhook(webhook, { ...podCreate, ...labelled, group: 'apps', resource: 'deployments' });
    assert.equal(deployment.called, false);
    assert.equal(deployment.reason, 'no rule covers CREATE deployments (apps/v1)');
  });
});

describe('rule matching follows the apiserver', () => {
  const rule = (fields: object): MutatingWebhook => ({ name: 'w.example.com', rules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['pods'], ...fields }] });

  test('"*" matches every resource but no subresource; "pods/*" matches pods and their subresources', () => {
    assert.equal(matchWebhook(rule({ resources: ['*'] }), podCreate).rules.matches, true);
    assert.equal(matchWebhook(rule({ resources: ['*'] }), { ...podCreate, subresource: 'status' }).rules.matches, false);
    assert.equal(matchWebhook(rule({ resources: ['pods/*'] }), { ...podCreate, subresource: 'status' }).rules.matches, true);
    assert.equal(matchWebhook(rule({ resources: ['*/*'] }), { ...podCreate, subresource: 'ephemeralcontainers' }).rules.matches, true);
    assert.equal(matchWebhook(rule({ resources: ['pods'] }), { ...podCreate, subresource: 'status' }).rules.matches, false);
  });

  test('scope Cluster does not match namespaced objects', () => {
    assert.equal(matchWebhook(rule({ scope: 'Cluster' }), podCreate).rules.matches, false);
    assert.equal(matchWebhook(rule({ scope: 'Namespaced' }), podCreate).rules.matches, true);
  });

  test('another version of the same resource matches under matchPolicy Equivalent (the default), not under Exact', () => {
    const v2 = { ...podCreate, version: 'v2' };
    const equivalent = matchWebhook(rule({}), v2);
    assert.equal(equivalent.rules.matches, true);
    assert.match(equivalent.rules.reason, /matchPolicy: Equivalent/);
    assert.equal(matchWebhook({ ...rule({}), matchPolicy: 'Exact' }, v2).rules.matches, false);
  });

  test('a missing or empty selector selects everything; null parts are allowed', () => {
    assert.equal(matchWebhook({ ...rule({}), namespaceSelector: {}, objectSelector: { matchLabels: null, matchExpressions: null } }, podCreate).called, true);
  });

  test('every unmet requirement is named, not only the first', () => {
    const webhook: MutatingWebhook = {
      ...rule({}),
      objectSelector: { matchLabels: { team: 'a' }, matchExpressions: [{ key: 'tier', operator: 'In', values: ['web', 'api'] }, { key: 'legacy', operator: 'DoesNotExist' }] },
    };
    const match = matchWebhook(webhook, { ...podCreate, objectLabels: { team: 'b', legacy: 'yes' } });
    assert.equal(
      match.objectSelector.reason,
      'the object is not selected: needs label team=a (the object has team=b); needs label tier in (web, api) (the object has no label tier); excludes objects labelled legacy (the object has legacy=yes)',
    );
  });
});

describe("webhookCalledFor (status's and the reconciler's per-pod check) agrees with matchWebhookConfiguration", () => {
  const rules = [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['pods'] }];
  const configuration: MutatingWebhookConfiguration = {
    webhooks: [
      { name: 'a.example.com', rules, namespaceSelector: { matchLabels: { injection: 'enabled' } }, objectSelector: { matchExpressions: [{ key: 'skip', operator: 'DoesNotExist' }] } },
      { name: 'b.example.com', rules, namespaceSelector: { matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'In', values: ['team-b'] }] }, objectSelector: { matchLabels: { app: 'b' } } },
      { name: 'c.example.com', rules: [{ ...rules[0], operations: ['UPDATE'] }] },
      { name: 'd.example.com', rules: [{ ...rules[0], scope: 'Cluster' }] },
    ],
  };
  const namespaces: [string, Record<string, string> | undefined][] = [
    ['shop', { injection: 'enabled' }],
    ['team-b', {}],
    ['team-b', { injection: 'enabled' }],
    ['plain', {}],
    ['unknown', undefined],
  ];
  const objects: Record<string, string>[] = [{}, { skip: 'yes' }, { app: 'b' }, { app: 'b', skip: '' }];

  test('for every namespace and object labels, asked twice (the second answer from what it remembers)', () => {
    const called = webhookCalledFor(configuration, { group: '', version: 'v1', resource: 'pods', operation: 'CREATE' });
    let calledCount = 0;
    for (const round of [1, 2]) {
      for (const [namespace, namespaceLabels] of namespaces) {
        for (const objectLabels of objects) {
          const expected = matchWebhookConfiguration(configuration, { ...podCreate, namespace, namespaceLabels, objectLabels }).some((match) => match.called);
          assert.equal(called(namespace, namespaceLabels, objectLabels), expected, `round ${round}: ${namespace} ${JSON.stringify(namespaceLabels)} ${JSON.stringify(objectLabels)}`);
          if (expected) calledCount++;
        }
      }
    }
    // Both outcomes are covered, so agreement is not all-false.
    assert.ok(calledCount > 0 && calledCount < 2 * namespaces.length * objects.length, `${calledCount} called`);
  });

  test('one labels object given for two namespaces is judged for each', () => {
    const called = webhookCalledFor(configuration, { group: '', version: 'v1', resource: 'pods', operation: 'CREATE' });
    const shared = {};
    assert.equal(called('team-b', shared, { app: 'b' }), true);
    assert.equal(called('plain', shared, { app: 'b' }), false);
  });
});
