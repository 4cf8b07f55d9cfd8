// The CLI applies the webhook's patch to the user's YAML document so comments survive; it must give the
// very object fast-json-patch gives, or decline so the CLI prints the object afresh.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { applyPatch, type Operation } from 'fast-json-patch';
import { parseDocument } from 'yaml';
import { patchYamlDocument } from '../../webhook/cli/yaml-patch';

const source = [
  '# a pod',
  'apiVersion: v1',
  'kind: Pod',
  'metadata: { name: p, annotations: { a/b: x } }',
  'spec:',
  '  containers:',
  '    - name: app # mine',
  '      image: busybox',
  '',
].join('\n');

test('add operations on maps and lists give the object fast-json-patch gives, comments kept', () => {
  const operations: Operation[] = [
    { op: 'add', path: '/spec/containers/-', value: { name: 'envoy', image: 'envoy', env: [{ name: 'FLAG', value: 'on' }] } },
    { op: 'add', path: '/spec/containers/0/env', value: [{ name: 'ZIP', value: '01234' }] },
    { op: 'add', path: '/spec/initContainers', value: [{ name: 'init', image: 'busybox' }] },
    { op: 'add', path: '/spec/containers/1', value: { name: 'between', image: 'b' } },
    { op: 'add', path: '/metadata/annotations/sidecar-injector.io~1status', value: 'envoy' },
  ];
  const document = parseDocument(source);
  const expected = applyPatch(document.toJS(), operations, true, false).newDocument;
  const patched = patchYamlDocument(document, operations);
  assert.ok(patched, 'every add operation applies');
  assert.equal(JSON.stringify(patched.toJS()), JSON.stringify(expected), 'same object, same key order');
  const text = patched.toString();
  assert.match(text, /^# a pod\n/);
  assert.match(text, /- name: app # mine\n/);
  assert.match(text, /value: "on"/, 'an injected string YAML 1.1 would read as a boolean is quoted');
  assert.match(text, /value: "01234"/);
  assert.equal(document.toString(), parseDocument(source).toString(), 'the original document is not changed');
});

test('operations it cannot apply on the document are declined', () => {
  const document = parseDocument(source);
  assert.equal(patchYamlDocument(document, [{ op: 'remove', path: '/spec' }]), undefined, 'not an add');
  assert.equal(patchYamlDocument(document, [{ op: 'add', path: '/spec/containers/5', value: {} }]), undefined, 'index past the end');
  assert.equal(patchYamlDocument(document, [{ op: 'add', path: '/spec/missing/x', value: 1 }]), undefined, 'no such parent');
  assert.equal(patchYamlDocument(document, [{ op: 'add', path: '', value: {} }]), undefined, 'the whole document');
});
