// The bytes of request bodies the server holds at once (being read, plus being parsed and answered),
// kept under a budget derived from the container's memory limit (webhook/config/runtime-settings.ts).
// A request that does not fit is shed with 429 before its body is read, so a flood of large reviews
// costs the bytes of the budget and no more, instead of an OOM kill of every replica at once.

import { MemorySizing, SMALL_BODY_BYTES } from '../config';

export class MemoryBudget {
  /** Bytes held by every request. */
  held = 0;
  /** Bytes held by requests over `SMALL_BODY_BYTES`, which may use only `largeBodyBytes` together. */
  heldLarge = 0;
  /** The most bytes held at once since start. */
  peakHeld = 0;

  constructor(readonly sizing: Pick<MemorySizing, 'budgetBytes' | 'largeBodyBytes'>) {}

  /**
   * Grows a request's hold from `current` bytes by `more` (all of a declared Content-Length at once,
   * or chunk by chunk for a body of unknown length). False, and nothing taken, when it does not fit.
   */
  take(current: number, more: number): boolean {
    const held = this.held + more;
    if (held > this.sizing.budgetBytes) return false;
    const after = current + more;
    if (after > SMALL_BODY_BYTES) {
      // Moving into the large class brings the bytes held so far along.
      const heldLarge = this.heldLarge + (current > SMALL_BODY_BYTES ? more : after);
      if (heldLarge > this.sizing.largeBodyBytes) return false;
      this.heldLarge = heldLarge;
    }
    this.held = held;
    if (held > this.peakHeld) this.peakHeld = held;
    return true;
  }

  /** Gives back everything a request held. */
  release(bytes: number): void {
    this.held -= bytes;
    if (bytes > SMALL_BODY_BYTES) this.heldLarge -= bytes;
  }
}

/** Budget bytes each JSON character outside a string costs beyond its own byte when parsed, the rest
 * 0: an object or array (~60 heap bytes, empty), a member or element (a pointer, and a property's hash
 * entry), a string (its two quotes, 2 each). Fitted over the worst shapes measured (runtime-settings.ts),
 * each under its charge. Inside a string these characters are text, which its length already pays for. */
const SHAPE_CHARGE = new Uint8Array(256);
SHAPE_CHARGE[0x7b] = 16; // {
SHAPE_CHARGE[0x5b] = 16; // [
SHAPE_CHARGE[0x2c] = 4; // ,
SHAPE_CHARGE[0x3a] = 24; // :
const STRING_CHARGE = 4; // "...": both quotes, charged as the string opens
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/**
 * The budget bytes a JSON body's shape costs beyond its length, chunk by chunk as it arrives: a loop
 * over the bytes (a few ns each), run only on bodies over UNSCANNED_BODY_BYTES. It follows strings
 * (escapes included, across chunk boundaries), so a long string of commas or braces, such as JSON
 * kept in an annotation, costs its length and no more.
 */
export class JsonShapeScanner {
  private inString = false;
  private escaped = false;

  charge(chunk: Uint8Array): number {
    let charge = 0;
    let inString = this.inString;
    let escaped = this.escaped;
    for (let i = 0; i < chunk.length; i++) {
      const byte = chunk[i];
      if (inString) {
        if (escaped) escaped = false;
        else if (byte === BACKSLASH) escaped = true;
        else if (byte === QUOTE) inString = false;
      } else if (byte === QUOTE) {
        inString = true;
        charge += STRING_CHARGE;
      } else charge += SHAPE_CHARGE[byte];
    }
    this.inString = inString;
    this.escaped = escaped;
    return charge;
  }
}
