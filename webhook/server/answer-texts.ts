// The AdmissionReview answer as text, its tail after the uid kept in a small bounded cache.

import type { AdmissionResponse, MutationResult } from '../engine';
import { jsonString } from './json-text';

/**
 * The AdmissionReview answers, written as text: the base64 patch and the warnings go in as they are
 * instead of through a second JSON.stringify of the whole envelope. Everything after the uid is the
 * same for every request with the same patch and warnings (the engine hands out the same patch string
 * for a patch seen before, and its warnings are few and mostly the same), so that part is kept, with
 * its byte length, in a small cache: an answer is then three strings joined, and its Content-Length is
 * added up instead of counted by walking 1.6 KB of text.
 */
export class AnswerTexts {
  private readonly tails = new Map<string, { warnings: readonly string[] | undefined; text: string; bytes: number }[]>();
  private entries = 0;
  private bytes = 0;
  /** Bounds of what is kept: it is part of the server's own memory (MEMORY_RESERVED_BYTES), never
   * request memory, so it stays small; past either bound it starts over empty. */
  private static readonly MAX_ENTRIES = 256;
  private static readonly MAX_BYTES = 1024 * 1024;
  private static readonly MAX_TAIL_BYTES = 64 * 1024;

  /** Tails kept, and their bytes (for tests of the bounds). */
  get size(): number {
    return this.entries;
  }

  get keptBytes(): number {
    return this.bytes;
  }

  /** The answer's text and its length in bytes. */
  answer(apiVersion: string, result: MutationResult): { text: string; bytes: number } {
    return AnswerTexts.joined(apiVersion, result.response.uid, this.tail(result.response));
  }

  /** An answer from its uid and its tail (`tail`, kept from the answer to a review it repeats). */
  static joined(apiVersion: string, uid: string, tail: { readonly text: string; readonly bytes: number }): { text: string; bytes: number } {
    const head = `{"apiVersion":"${apiVersion}","kind":"AdmissionReview","response":{"uid":${jsonString(uid)}`;
    return { text: head + tail.text, bytes: Buffer.byteLength(head) + tail.bytes };
  }

  /** Everything of an answer after its uid, with its length in bytes. */
  tail(response: AdmissionResponse): { text: string; bytes: number } {
    if (response.allowed !== true || response.status !== undefined) return AnswerTexts.measured(AnswerTexts.tailText(response));
    const key = response.patch ?? '';
    const warnings = response.warnings;
    const known = this.tails.get(key);
    if (known !== undefined) for (const entry of known) if (sameWarnings(entry.warnings, warnings)) return entry;
    const entry = { warnings: warnings && [...warnings], ...AnswerTexts.measured(AnswerTexts.tailText(response)) };
    if (entry.bytes > AnswerTexts.MAX_TAIL_BYTES) return entry;
    if (this.entries >= AnswerTexts.MAX_ENTRIES || this.bytes + entry.bytes > AnswerTexts.MAX_BYTES) {
      this.tails.clear();
      this.entries = 0;
      this.bytes = 0;
      this.tails.set(key, [entry]);
    } else if (known === undefined) this.tails.set(key, [entry]);
    else known.push(entry);
    this.entries++;
    this.bytes += entry.bytes;
    return entry;
  }

  private static tailText(response: AdmissionResponse): string {
    let text = `,"allowed":${response.allowed}`;
    if (response.patch !== undefined) text += `,"patchType":"JSONPatch","patch":"${response.patch}"`;
    if (response.warnings !== undefined) text += `,"warnings":${JSON.stringify(response.warnings)}`;
    if (response.status !== undefined) text += `,"status":${JSON.stringify(response.status)}`;
    return text + '}}';
  }

  private static measured(text: string): { text: string; bytes: number } {
    return { text, bytes: Buffer.byteLength(text) };
  }
}

function sameWarnings(a: readonly string[] | undefined, b: readonly string[] | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

