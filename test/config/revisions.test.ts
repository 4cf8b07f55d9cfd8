// Revisions and tags in the one config (issue 37): validated as injections are, each revision under
// `revisions[N].`; tags resolve to revisions; every way a tag or the default can be wrong is named.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  chosenRevision,
  defaultRevision,
  injectorConfigIssues,
  loadInjectorConfig,
  resolveInjectorConfig,
  revisionChoosers,
  revisionConfig,
  revisionConfigs,
  servedChoosers,
} from '../../webhook/config';
import { ENVOY_V1, ENVOY_V2, envoyInjection, revisionedConfig } from '../support/revision-fixtures';

const messages = (input: unknown) => injectorConfigIssues(input).map((issue) => `${issue.path}: ${issue.message}`);

test('two revisions may add a container of the same name; the resolved config round-trips', () => {
  assert.deepEqual(messages(revisionedConfig()), []);
  const resolved = resolveInjectorConfig(revisionedConfig());
  assert.deepEqual(resolved.injections, []);
  assert.deepEqual(resolved.revisions!.map((revision) => revision.injections[0].targetKinds), [['Pod'], ['Pod']]);
  assert.equal(resolved.unservedRevision, 'warn');
  assert.deepEqual(loadInjectorConfig(JSON.stringify(resolved)), resolved);
  // The same container twice inside one revision is still refused.
  const clash = revisionedConfig();
  (clash.revisions as any)[0].injections.push({ ...envoyInjection(ENVOY_V2), name: 'envoy-two' });
  assert.deepEqual(messages(clash), ['revisions[0].injections[1].containers[0].name: container name "envoy" is already injected by injections[0].containers[0]']);
});

test('a tag leads to its revision, a revision name to itself, anything else nowhere', () => {
  const config = resolveInjectorConfig(revisionedConfig());
  assert.equal(chosenRevision(config, 'stable'), 'r1');
  assert.equal(chosenRevision(config, 'canary'), 'r2');
  assert.equal(chosenRevision(config, 'r1'), 'r1');
  assert.equal(chosenRevision(config, 'r3'), undefined);
  assert.equal(chosenRevision(config, undefined), undefined);
  assert.equal(defaultRevision(config), 'r1');
  assert.deepEqual(revisionChoosers(config, 'r2'), ['r2', 'canary']);
  assert.deepEqual(servedChoosers(config), ['r1', 'r2', 'stable', 'canary']);
  const promoted = resolveInjectorConfig(revisionedConfig('r2'));
  assert.equal(defaultRevision(promoted), 'r2');
  assert.deepEqual(revisionChoosers(promoted, 'r1'), ['r1']);
});

test("a revision's view is a config of its own, the same object every time", () => {
  const config = resolveInjectorConfig(revisionedConfig());
  const r2 = revisionConfig(config, 'r2')!;
  assert.equal(r2.revision, 'r2');
  assert.equal(r2.annotationPrefix, config.annotationPrefix);
  assert.equal((r2.injections[0].containers![0] as any).image, ENVOY_V2);
  assert.equal(revisionConfig(config, 'r2'), r2);
  assert.equal(revisionConfig(config, 'stable'), undefined, 'a tag is not a revision');
  assert.deepEqual(revisionConfigs(config).map((view) => view.revision), ['r1', 'r2']);
  const plain = resolveInjectorConfig({ injections: [envoyInjection(ENVOY_V1)] });
  assert.deepEqual(revisionConfigs(plain), [plain]);
});

test('every way tags and revisions can be wrong fails, naming the field and the reason', () => {
  const base = revisionedConfig();
  const cases: [string, unknown, string[]][] = [
    ['a tag naming no revision', { ...base, tags: [{ name: 'stable', revision: 'r1', default: true }, { name: 'canary', revision: 'r3' }] }, ['tags[1].revision: tag "canary" names no revision: "r3" is not one of r1, r2']],
    [
      'two defaults',
      { ...base, tags: [{ name: 'stable', revision: 'r1', default: true }, { name: 'canary', revision: 'r2', default: true }] },
      ['tags: "stable" and "canary" are all marked default: exactly one tag is the default'],
    ],
    ['no default', { ...base, tags: [{ name: 'canary', revision: 'r2' }] }, ['tags: no tag is the default: mark one default: true, so the namespaces the injector is enabled in get a revision']],
    ['no tags', { ...base, tags: undefined }, ['tags: no tag: give one tag with default: true, so the namespaces the injector is enabled in get a revision (revisions: r1, r2)']],
    [
      'a tag with the name of a revision',
      { ...base, tags: [{ name: 'r2', revision: 'r1', default: true }] },
      ['tags[0].name: tag "r2" has the name of a revision: the label "r2" could not tell which is meant, and revision "r2" could not be chosen by name'],
    ],
    ['a duplicate revision', { ...base, revisions: [base.revisions![0], base.revisions![0]], tags: [{ name: 'stable', revision: 'r1', default: true }] }, ['revisions[1].name: duplicate revision name "r1" (also revisions[0])']],
    ['a bad revision name', { ...base, revisions: [{ ...base.revisions![0], name: 'R1' }, base.revisions![1]], tags: [{ name: 'stable', revision: 'r2', default: true }] }, [
      'revisions[0].name: "R1" must consist of lower case alphanumeric characters or "-", and start and end with an alphanumeric character',
    ]],
    ['injections beside revisions', { ...base, injections: [envoyInjection(ENVOY_V1)] }, ['injections: give the injections inside revisions, not beside them: with revisions, every pod gets exactly one revision']],
    ['tags without revisions', { injections: [], tags: [{ name: 'stable', revision: 'r1', default: true }] }, ['tags: tags point at revisions: give revisions too']],
    ['an unknown unservedRevision', { ...base, unservedRevision: 'drop' }, ['unservedRevision: "drop" is not one of warn, refuse']],
    ['a bad injection inside a revision', { ...base, revisions: [{ name: 'r1', injections: [{ name: 'envoy', trigger: { type: 'sometimes' } }] }, base.revisions![1]] }, [
      'revisions[0].injections[0].trigger.type: string "sometimes" is not one of always, requested, annotation, labelSelector',
    ]],
  ];
  for (const [what, input, expected] of cases) {
    const got = messages(input);
    for (const message of expected) assert.ok(got.includes(message), `${what}: expected ${JSON.stringify(message)} among ${JSON.stringify(got, null, 1)}`);
  }
});
