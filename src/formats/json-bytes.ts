// JSON written straight into bytes, for text that is kept only as bytes until it is written out: the
// access log's batches and a billing batch's usage rows. Writing a line or a row this way makes no
// string on the JS heap (the line's pieces are copied in as they are), so a settled call leaves
// nothing for the garbage collector to copy while its batch waits.

const QUOTE = 0x22;
const MAX_UINT32 = 0xffffffff;

/** Bytes with a write position; it grows (doubling, keeping what was written) when asked for room it lacks. */
export class ByteWriter {
  bytes: Buffer;
  length = 0;

  /** a capacity to allocate, or bytes to fill again from the start */
  constructor(capacity: number | Buffer) {
    this.bytes = typeof capacity === 'number' ? Buffer.allocUnsafeSlow(capacity) : capacity;
  }

  get room(): number { return this.bytes.length - this.length; }

  /** Makes room for `count` more bytes. */
  reserve(count: number): void {
    if (this.length + count <= this.bytes.length) return;
    const grown = Buffer.allocUnsafeSlow(Math.max(this.bytes.length * 2, this.length + count));
    this.bytes.copy(grown, 0, 0, this.length);
    this.bytes = grown;
  }

  /** One byte (within reserved room). */
  byte(value: number): void {
    this.bytes[this.length++] = value;
  }

  /** ASCII text with nothing to escape, such as field names and punctuation (within reserved room). */
  ascii(text: string): void {
    const bytes = this.bytes;
    let at = this.length;
    for (let index = 0; index < text.length; index += 1) bytes[at++] = text.charCodeAt(index);
    this.length = at;
  }

  /** A number as JSON.stringify writes it: null for NaN and the infinities (within reserved room: at most 24 bytes). */
  number(value: number): void {
    if (value >= 0 && value <= MAX_UINT32 && value % 1 === 0) { this.uint32(value); return; }
    if (Number.isSafeInteger(value) && value > 0) {
      // above 2^32 (a time in ms): the digits above the last nine, then those nine, each part in uint32 arithmetic
      const high = Math.floor(value / 1e9);
      this.uint32(high);
      this.nineDigits(value - high * 1e9);
      return;
    }
    this.ascii(Number.isFinite(value) ? String(value) : 'null');
  }

  private uint32(value: number): void {
    let count = 1;
    for (let limit = 10; count < 10 && value >= limit; limit *= 10) count += 1;
    const end = this.length + count;
    let at = end;
    let rest = value;
    do {
      const next = (rest / 10) >>> 0;
      this.bytes[--at] = 0x30 + rest - next * 10;
      rest = next;
    } while (rest > 0);
    this.length = end;
  }

  /** 0 ≤ value < 10^9, zero-padded to nine digits */
  private nineDigits(value: number): void {
    let at = this.length + 9;
    this.length = at;
    let rest = value;
    for (let index = 0; index < 9; index += 1) {
      const next = (rest / 10) >>> 0;
      this.bytes[--at] = 0x30 + rest - next * 10;
      rest = next;
    }
  }

  /** Bytes already encoded (within reserved room). */
  copy(source: Buffer): void {
    source.copy(this.bytes, this.length);
    this.length += source.length;
  }

  /** Any text as UTF-8 (makes its own room). */
  text(text: string): void {
    this.reserve(text.length * 3);
    this.length += this.bytes.write(text, this.length);
  }

  /** The bytes written so far (a view, not a copy). */
  view(): Buffer {
    return this.bytes.subarray(0, this.length);
  }
}

/** Bytes a number() can take at most ("-1.2345678901234567e-123" and the like). */
export const MAX_NUMBER_BYTES = 24;

/**
 * Strings as JSON string literals in UTF-8 (quotes and escapes as JSON.stringify writes them),
 * remembered for the few values a log repeats: model, channel and route names, end reasons. The map
 * is bounded and starts over when full; strings longer than `maxLength` are encoded each time.
 */
export class JsonStringBytes {
  private readonly encoded = new Map<string, Buffer>();

  constructor(private readonly limit = 1_000, private readonly maxLength = 200) {}

  of(value: string): Buffer {
    let encoded = this.encoded.get(value);
    if (encoded !== undefined) return encoded;
    encoded = plainAscii(value) ? quoted(value) : Buffer.from(JSON.stringify(value), 'utf8');
    if (value.length <= this.maxLength) {
      if (this.encoded.size >= this.limit) this.encoded.clear();
      this.encoded.set(value, encoded);
    }
    return encoded;
  }
}

/** printable ASCII without a quote or a backslash: its JSON is itself in quotes */
function plainAscii(value: string): boolean {
  for (let index = 0; index < value.length; index += 1) {
    const code = value.charCodeAt(index);
    if (code < 0x20 || code > 0x7e || code === QUOTE || code === 0x5c) return false;
  }
  return true;
}

function quoted(value: string): Buffer {
  const bytes = Buffer.allocUnsafe(value.length + 2);
  bytes[0] = QUOTE;
  bytes.write(value, 1, 'latin1');
  bytes[value.length + 1] = QUOTE;
  return bytes;
}
