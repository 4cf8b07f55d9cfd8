// An admission request's body as the text JSON.parse reads, without the members the webhook never
// reads: each `"managedFields":[...]`, the apiserver's record of which manager set which field. Every
// object a controller or kubectl makes carries it, and it is the most object-dense part of a review
// (a quarter of the recorded pod's bytes, nested objects of "f:..." keys): passed over by a byte scan,
// it costs neither V8's parser nor its garbage collector.
//
// Nothing the engine reads is lost: it reads named fields and string-valued labels and annotations,
// never a member named managedFields, and it answers with a patch, so the object the apiserver stores
// keeps every byte. The scan follows strings and escapes, so text that only looks like the member (in
// an annotation's value, say) is left alone. The member is passed over, not checked: malformed JSON
// inside it (which no apiserver sends) is not reported.

import { SMALL_BODY_BYTES } from '../config';

const KEY = Buffer.from('"managedFields":[');
/**
 * What is searched for: the key's end. Its first byte, a capital F, is rare in a review, where a quote
 * (the key's own first byte) starts every other token: the search's first-byte scan stops far less
 * often (callgrind: the two searches through the recorded pod's body, about 10,600 instructions with
 * the whole key, 2,900 with this). The bytes before it are compared after a hit.
 */
const KEY_END = KEY.subarray(KEY.indexOf('Fields'));
const KEY_START = KEY.length - KEY_END.length;

/** Whether `KEY` is at `at` in `body`, given that its last `KEY_END.length` bytes are. */
function keyStartsAt(body: Buffer, at: number): boolean {
  for (let i = 0; i < KEY_START; i++) if (body[at + i] !== KEY[i]) return false;
  return true;
}
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACE = 0x7d;
const CLOSE_BRACKET = 0x5d;

/**
 * The index just past the `]` that closes the array whose `[` is at `open - 1`, or -1 when the body
 * ends first (a cut-off body: left to JSON.parse to report). One byte read per step, the length read
 * once: about a tenth fewer instructions than a loop reading `body.length` and the byte at `i` again
 * (callgrind, the recorded pod's 1.3 KB member), and this loop is most of the scan's cost.
 */
function arrayEnd(body: Buffer, open: number): number {
  const length = body.length;
  let depth = 1;
  let i = open;
  while (i < length) {
    const byte = body[i++];
    if (byte === QUOTE) {
      // To the closing quote, over escapes (a backslash and the byte after it).
      let inner = body[i++];
      while (inner !== QUOTE) {
        if (inner === BACKSLASH) i++;
        if (i >= length) return -1;
        inner = body[i++];
      }
    } else if (byte === OPEN_BRACKET || byte === OPEN_BRACE) depth++;
    else if ((byte === CLOSE_BRACKET || byte === CLOSE_BRACE) && --depth === 0) return i;
  }
  return -1;
}

/** Where the kept bytes of a body are gathered, reused by every call (one at a time: the scan and the
 * decoding are synchronous). Grown to the largest body seen, at most SMALL_BODY_BYTES: part of the
 * server's own memory. */
let gathered = Buffer.allocUnsafeSlow(8 * 1024);

/**
 * `body`'s bytes without its `"managedFields":[...]` members (in compact JSON, as the apiserver writes
 * it): `body` itself when it has none, else a view of the gathered bytes, valid until the next call.
 * The repeated-review key is taken over these bytes: the apiserver stamps each manager's entry with the
 * second it wrote it, so a ReplicaSet's pods created across a second boundary differed there alone,
 * and the answer, made from these bytes, never depends on them. The bytes around the members are
 * gathered into one buffer and decoded once by the caller: joining decoded pieces instead made a rope
 * string that JSON.parse then copied flat again: 3.5 KB more young-generation allocation per admission
 * of the recorded pod, for about the same instructions. The cuts are at ASCII bytes outside strings, so
 * no UTF-8 sequence is split.
 */
export function reviewBytes(body: Buffer): Buffer {
  /** Where the kept bytes go (`gathered`, or for a body larger than it may grow, a buffer of its own),
   * and how many are there; undefined until the first member is found. */
  let into: Buffer | undefined;
  let kept = 0;
  /** Where the bytes still to copy start. */
  let from = 0;
  for (let hit = body.indexOf(KEY_END, KEY_START + 1); hit >= 0; hit = body.indexOf(KEY_END, hit + KEY_END.length)) {
    const at = hit - KEY_START;
    if (!keyStartsAt(body, at)) continue;
    // A member only: a quote after `{` or `,` opens a key (inside a string it would be escaped).
    const before = body[at - 1];
    if (before !== COMMA && before !== OPEN_BRACE) continue;
    const end = arrayEnd(body, at + KEY.length);
    if (end < 0) break;
    // With one of its commas: `,"managedFields":[...]` or `"managedFields":[...],`.
    let start = at;
    let next = end;
    if (before === COMMA) start = at - 1;
    else if (body[end] === COMMA) next = end + 1;
    if (into === undefined) {
      if (body.length > SMALL_BODY_BYTES) into = Buffer.allocUnsafe(body.length);
      else {
        if (gathered.length < body.length) gathered = Buffer.allocUnsafeSlow(body.length);
        into = gathered;
      }
    }
    kept += body.copy(into, kept, from, start);
    from = next;
    hit = next - KEY_END.length;
  }
  if (into === undefined) return body;
  kept += body.copy(into, kept, from);
  return into.subarray(0, kept);
}
