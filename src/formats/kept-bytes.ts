// Bytes a stream watcher keeps for a later local count (the start of a completion, delta events'
// data), copied into one buffer per stream, made at the size given when the first piece comes,
// grown past it by a quarter at a time, and reused when emptied (reset). One buffer instead of a
// string per event: a string kept for the seconds a stream runs outlives young-generation
// collections, so the scavenger copies and promotes it, while a buffer's bytes are never moved.
// Pure: no I/O.

/** the top bit of a record's length word: its tag (records are far shorter than 2 GiB) */
const TAG_BIT = 0x80000000;

export class KeptBytes {
  private buffer: Buffer | null = null;
  /** bytes kept */
  length = 0;

  /** `bound`: the buffer's first size (about what the watcher keeps at most) */
  constructor(private readonly bound: number) {}

  /** Appends source[start, end). */
  append(source: Buffer, start = 0, end = source.length): void {
    const buffer = this.room(end - start);
    source.copy(buffer, this.length, start, end);
    this.length += end - start;
  }

  /**
   * Appends a record: the length of source[start, end) as 4 bytes (little-endian, its top bit the
   * record's one-bit `tag`), then those bytes.
   */
  appendRecord(source: Buffer, start: number, end: number, tag = false): void {
    const buffer = this.room(4 + end - start);
    buffer.writeUInt32LE(end - start + (tag ? TAG_BIT : 0), this.length);
    source.copy(buffer, this.length + 4, start, end);
    this.length += 4 + end - start;
  }

  /** Appends a record of the UTF-8 bytes of `text` (as appendRecord). */
  appendTextRecord(text: string): void {
    const bytes = Buffer.byteLength(text);
    const buffer = this.room(4 + bytes);
    buffer.writeUInt32LE(bytes, this.length);
    this.length += 4 + buffer.write(text, this.length + 4);
  }

  /** The length of the record at `at`; its bytes follow its 4 length bytes. */
  recordLength(at: number): number {
    return this.buffer!.readUInt32LE(at) & ~TAG_BIT;
  }

  /** The tag the record at `at` was appended with. */
  recordTag(at: number): boolean {
    return (this.buffer!.readUInt32LE(at) & TAG_BIT) !== 0;
  }

  toString(encoding: BufferEncoding, start = 0, end = this.length): string {
    return this.buffer === null ? '' : this.buffer.toString(encoding, start, end);
  }

  /** Empties what is kept; the buffer stays, for what is appended next. */
  reset(): void {
    this.length = 0;
  }

  /** Drops what is kept and the buffer. */
  clear(): void {
    this.buffer = null;
    this.length = 0;
  }

  /** The buffer, with room for `bytes` more. */
  private room(bytes: number): Buffer {
    const needed = this.length + bytes;
    const buffer = this.buffer;
    if (buffer !== null && needed <= buffer.length) return buffer;
    const next = buffer === null ? this.bound : buffer.length + (buffer.length >> 2);
    const grown = Buffer.allocUnsafeSlow(Math.max(needed, next));
    if (buffer !== null) buffer.copy(grown, 0, 0, this.length);
    this.buffer = grown;
    return grown;
  }
}
