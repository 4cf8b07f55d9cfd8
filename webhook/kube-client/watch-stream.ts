// A watch's response read as the apiserver streams it: one JSON event a line, however the chunks fall
// (a line may span chunks, a chunk may hold many). What is held of an unfinished line is bounded: past
// `maxLineBytes` the stream is broken (no object the apiserver stores is that large). An ERROR event
// with code 410 means the resourceVersion is too old: list again. Shared by the webhook's namespace
// watch and the reconciler's pod watch.

import type { IncomingMessage } from 'node:http';

export class LineTooLong extends Error {
  constructor(readonly maxLineBytes: number) {
    super(`a line over ${maxLineBytes} bytes`);
    this.name = 'LineTooLong';
  }
}

/** The apiserver sent an ERROR event other than 410 (its Status's code, reason and message kept). */
export class WatchErrorEvent extends Error {
  constructor(
    readonly code: number,
    readonly reason: string,
    message: string,
  ) {
    super(message);
    this.name = 'WatchErrorEvent';
  }
}

/** One event of a watch (not ERROR), as the apiserver sent it. */
export interface WatchStreamEvent {
  readonly type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK';
  readonly object: any;
}

const EVENT_TYPES: readonly string[] = ['ADDED', 'MODIFIED', 'DELETED', 'BOOKMARK'];

class WatchLines {
  private pending: Buffer[] = [];
  private pendingBytes = 0;

  constructor(private readonly maxLineBytes: number) {}

  /** The lines this chunk ends (empty ones left out), joined with what came before. */
  push(chunk: Buffer): Buffer[] {
    const lines: Buffer[] = [];
    let start = 0;
    for (let newline = chunk.indexOf(10); newline !== -1; newline = chunk.indexOf(10, start)) {
      const line = this.pendingBytes === 0 ? chunk.subarray(start, newline) : Buffer.concat([...this.pending, chunk.subarray(start, newline)]);
      this.pending = [];
      this.pendingBytes = 0;
      start = newline + 1;
      if (line.length > 0) lines.push(line);
    }
    if (start < chunk.length) {
      this.pendingBytes += chunk.length - start;
      if (this.pendingBytes > this.maxLineBytes) throw new LineTooLong(this.maxLineBytes);
      this.pending.push(chunk.subarray(start));
    }
    return lines;
  }
}

/**
 * Reads a watch's (200) response to its end, each event to `onEvent` in order: `ended` when the
 * apiserver closes it, `gone` on an ERROR event with code 410. Throws LineTooLong, a SyntaxError for a
 * line that is not JSON, WatchErrorEvent for another ERROR event, or the stream's own error; the
 * response is destroyed whenever it stops before its end.
 */
export async function readWatchStream(response: IncomingMessage, maxLineBytes: number, onEvent: (event: WatchStreamEvent) => void): Promise<'gone' | 'ended'> {
  const lines = new WatchLines(maxLineBytes);
  try {
    for await (const chunk of response as AsyncIterable<Buffer>) {
      for (const line of lines.push(chunk)) {
        const event = JSON.parse(line.toString('utf8'));
        if (event?.type === 'ERROR') {
          if (event.object?.code === 410) {
            response.destroy();
            return 'gone';
          }
          throw new WatchErrorEvent(Number(event.object?.code ?? 0), String(event.object?.reason ?? 'ERROR'), String(event.object?.message ?? 'an error event'));
        }
        if (EVENT_TYPES.includes(event?.type)) onEvent({ type: event.type, object: event.object ?? {} });
      }
    }
  } catch (error) {
    response.destroy();
    throw error;
  }
  return 'ended';
}
