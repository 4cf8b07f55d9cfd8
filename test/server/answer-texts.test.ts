// The server's kept answer texts: the part of an AdmissionReview answer after the uid is reused for
// the same patch and warnings, and must never carry one answer's warnings or status into another.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { AdmissionResponse, MutationResult } from '../../webhook/engine';
import { AnswerTexts } from '../../webhook/server/answer-texts';

const result = (response: AdmissionResponse): MutationResult => ({ response, decisions: [], patch: [], podWarnings: [], overrides: [] });
const expected = (apiVersion: string, response: AdmissionResponse) => JSON.stringify({ apiVersion, kind: 'AdmissionReview', response });

test('each answer is the JSON of its own response, whatever was answered before', () => {
  const answers = new AnswerTexts();
  const patch = Buffer.from('[{"op":"add","path":"/metadata/labels/a","value":"b"}]').toString('base64');
  const responses: AdmissionResponse[] = [
    { uid: 'u1', allowed: true, patchType: 'JSONPatch', patch },
    { uid: 'u2', allowed: true, patchType: 'JSONPatch', patch, warnings: ['first warning'] },
    { uid: 'u3', allowed: true, patchType: 'JSONPatch', patch, warnings: ['first warning', 'second'] },
    { uid: 'u4', allowed: true, patchType: 'JSONPatch', patch, warnings: ['naïve ünïcode warning, "quoted"'] },
    { uid: 'u5', allowed: true },
    { uid: 'u6', allowed: true, warnings: ['no patch, a warning'] },
    { uid: 'u7', allowed: false, status: { code: 403, message: 'refused' } },
    { uid: 'u"8\\', allowed: true, patchType: 'JSONPatch', patch },
  ];
  // Twice over, in both orders: a kept text must only ever serve an equal patch and equal warnings.
  for (const order of [responses, [...responses].reverse(), responses]) {
    for (const response of order) {
      for (const apiVersion of ['admission.k8s.io/v1', 'admission.k8s.io/v1beta1']) {
        const answer = answers.answer(apiVersion, result(response));
        assert.equal(answer.text, expected(apiVersion, response), `uid ${response.uid}`);
        assert.equal(answer.bytes, Buffer.byteLength(answer.text), `uid ${response.uid}: the byte count`);
      }
    }
  }
});

test('the kept texts stay bounded under ever-new patches', () => {
  const answers = new AnswerTexts();
  for (let i = 0; i < 2000; i++) {
    const patch = Buffer.from(`[{"op":"add","path":"/metadata/labels/a","value":"${i}"}]`).toString('base64');
    const response: AdmissionResponse = { uid: `u${i}`, allowed: true, patchType: 'JSONPatch', patch };
    assert.equal(answers.answer('admission.k8s.io/v1', result(response)).text, expected('admission.k8s.io/v1', response));
  }
  assert.ok(answers.size <= 256, `at most 256 kept, saw ${answers.size}`);
});

test('the kept texts stay under 1 MiB with large patches', () => {
  const answers = new AnswerTexts();
  let largest = 0;
  for (let i = 0; i < 200; i++) {
    const patch = Buffer.from(`[{"op":"add","path":"/metadata/labels/a","value":"${String(i).padEnd(40_000, 'x')}"}]`).toString('base64');
    const response: AdmissionResponse = { uid: `u${i}`, allowed: true, patchType: 'JSONPatch', patch };
    assert.equal(answers.answer('admission.k8s.io/v1', result(response)).text, expected('admission.k8s.io/v1', response));
    largest = Math.max(largest, answers.keptBytes);
  }
  assert.ok(largest > 0 && largest <= 1024 * 1024, `kept at most 1 MiB, saw ${largest} bytes`);
});
