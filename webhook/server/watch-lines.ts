// A watch's stream cut into its lines (one JSON event each), however the chunks fall: a line may span
// chunks, a chunk may hold many. What is held of an unfinished line is bounded: past `maxLineBytes`
// the stream is broken (no object the apiserver stores is that large), and `push` throws.

export class LineTooLong extends Error {
  constructor(readonly maxLineBytes: number) {
    super(`a line over ${maxLineBytes} bytes`);
    this.name = 'LineTooLong';
  }
}

export class WatchLines {
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
