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

const KEY = Buffer.from('"managedFields":[');
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACE = 0x7d;
const CLOSE_BRACKET = 0x5d;

/**
 * The index just past the `]` that closes the array whose `[` is at `open - 1`, or -1 when the body
 * ends first (a cut-off body: left to JSON.parse to report).
 */
function arrayEnd(body: Buffer, open: number): number {
  let depth = 1;
  for (let i = open; i < body.length; i++) {
    const byte = body[i];
    if (byte === QUOTE) {
      // To the closing quote, over escapes.
      for (i++; i < body.length; i++) {
        const inner = body[i];
        if (inner === BACKSLASH) i++;
        else if (inner === QUOTE) break;
      }
    } else if (byte === OPEN_BRACKET || byte === OPEN_BRACE) depth++;
    else if ((byte === CLOSE_BRACKET || byte === CLOSE_BRACE) && --depth === 0) return i + 1;
  }
  return -1;
}

/** `body` as UTF-8 text, without its `"managedFields":[...]` members (in compact JSON, as the apiserver writes it). */
export function reviewText(body: Buffer): string {
  let text = '';
  /** Where the text still to copy starts. */
  let from = 0;
  for (let at = body.indexOf(KEY); at > 0; at = body.indexOf(KEY, at + KEY.length)) {
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
    text += body.toString('utf8', from, start);
    from = next;
    at = next - KEY.length;
  }
  return from === 0 ? body.toString('utf8') : text + body.toString('utf8', from);
}
