// Completion text of a forwarded OpenAI stream, for counting tokens locally when the upstream
// reports no usage. Not extracted per event: the forwarded events are copied into a small buffer
// (KeptBytes, COPY_BATCH_BYTES); the text is extracted from that copy in one scan when the next
// event would not fit (the buffer is then reused), on demand, or once `maxBytes` of events were
// seen, after which only the extracted text (a few percent of the event bytes) stays and the
// forwarded size is counted. Counts are scaled by forwarded / kept bytes (an estimate either way).
// A copy rather than a reference to each forwarded chunk: a chunk is a view of the upstream
// socket's read buffer, and holding it held that whole buffer for the stream's life. The copy is
// a batch rather than all `maxBytes`: an open stream holds it until its bound, and thousands of
// streams opening at once hold it together.
import { KeptBytes } from './kept-bytes';

const EXTRACT_BATCH_BYTES = 64 * 1024;
/** the copy's size: events are extracted from it whenever the next would not fit */
const COPY_BATCH_BYTES = 1024;
/** slices up to this long are copies in V8 (a longer one refers to its source string) */
const SHORT_SLICE_CHARS = 12;
/** the opening quote of the string values extractText collects (module-level: one scan at a time, lastIndex reset before each) */
const CONTENT_VALUE = /content": ?"/g;
const CONTENT_ONLY = [CONTENT_VALUE];
const CONTENT_AND_ARGUMENTS = [CONTENT_VALUE, /arguments": ?"/g];

export class CompletionTextSample {
  private readonly maxBytes: number;
  /** copies of the forwarded events since the last batch was extracted; [0, extractedBytes) already scanned; dropped at the bound */
  private readonly kept: KeptBytes;
  private extractedBytes = 0;
  /** event bytes copied so far (the copy itself is dropped once it reaches maxBytes) */
  private keptBytes = 0;
  private forwardedBytes = 0;
  /** raw UTF-8 bytes as latin1 strings, see extractText */
  private textParts: string[] = [];
  /** a part may be a slice of the string it was extracted from (V8 copies short slices; longer ones refer to their source) */
  private slicedParts = false;
  private textBytes = 0;
  /** tool calls were streamed: their `arguments` count as completion text too */
  withArguments = false;

  constructor(maxBytes: number) {
    this.maxBytes = maxBytes;
    this.kept = new KeptBytes(Math.min(maxBytes, COPY_BATCH_BYTES));
  }

  /** Records forwarded bytes (whole events); copies them while under the bound. */
  add(output: Buffer): void {
    this.forwardedBytes += output.length;
    if (this.keptBytes >= this.maxBytes) return;
    this.keptBytes += output.length;
    const full = this.keptBytes >= this.maxBytes;
    if (!full && this.kept.length + output.length <= COPY_BATCH_BYTES) {
      this.kept.append(output);
      return;
    }
    // the batch is full or the bound reached: what was copied and this output (not copied) are scanned
    this.extractPending();
    this.extractBatches(output.toString('latin1'));
    this.extractedBytes = 0;
    if (full) this.kept.clear(); else this.kept.reset();
    if (full || this.slicedParts) this.flattenText();
  }

  /** The bound is reached: add() copies nothing more, it only counts (as skip() does). */
  get full(): boolean {
    return this.keptBytes >= this.maxBytes;
  }

  /** Records forwarded bytes without copying them (their text will not be counted). */
  skip(bytes: number): void {
    this.forwardedBytes += bytes;
  }

  /** forwarded bytes / kept bytes: how much more text there was than was kept. */
  get scale(): number {
    const kept = this.keptBytes;
    return kept > 0 && this.forwardedBytes > kept ? this.forwardedBytes / kept : 1;
  }

  /** The kept text (the start of the completion). */
  text(): string {
    this.extractPending();
    return Buffer.from(this.textParts.join(''), 'latin1').toString('utf8');
  }

  /** UTF-8 size of the whole completion text, scaled past the bound. */
  bytes(): number {
    this.extractPending();
    return Math.round(this.textBytes * this.scale);
  }

  /**
   * The pieces extracted so far joined into one flat string, so that none of them keeps a slice of
   * a batch's string alive.
   */
  private flattenText(): void {
    this.slicedParts = false;
    // a new array of one: the one pushed to keeps room for 17 parts
    if (this.textParts.length > 1) this.textParts = [this.textParts.join('')];
    else if (this.textParts.length === 1) this.textParts = [flat(this.textParts[0])];
  }

  private extractPending(): void {
    const length = this.kept.length;
    if (this.extractedBytes < length) this.extractBatches(this.kept.toString('latin1', this.extractedBytes, length));
    this.extractedBytes = length;
  }

  /** extractText over whole events, in batches that end at an event's end: V8 makes strings of a few hundred KB an order of magnitude slower to create than 64 KB ones. */
  private extractBatches(events: string): void {
    let from = 0;
    while (from < events.length) {
      let to = Math.min(events.length, from + EXTRACT_BATCH_BYTES);
      if (to < events.length) {
        const blank = events.lastIndexOf('\n\n', to - 2);
        if (blank >= from) to = blank + 2;
      }
      this.extractText(from === 0 && to === events.length ? events : events.slice(from, to));
      from = to;
    }
  }

  /**
   * Collects the `content` (and `reasoning_content`) string values of whole events, and `arguments`
   * once tool calls were seen. Works on raw bytes held in a latin1 string (one char per byte):
   * offsets are byte offsets, a piece's length is its UTF-8 size, and the pieces are decoded once
   * at the end instead of one by one.
   */
  private extractText(source: string): void {
    const patterns = this.withArguments ? CONTENT_AND_ARGUMENTS : CONTENT_ONLY;
    const next = patterns.map((pattern) => {
      pattern.lastIndex = 0;
      return pattern.test(source) ? pattern.lastIndex - 1 : -1;
    });
    let nextBackslash = source.indexOf('\\');
    for (;;) {
      let which = -1;
      for (let index = 0; index < next.length; index += 1) {
        if (next[index] !== -1 && (which === -1 || next[index] < next[which])) which = index;
      }
      if (which === -1) return;
      const open = next[which]; // the opening quote of the value
      let close = source.indexOf('"', open + 1);
      if (nextBackslash !== -1 && nextBackslash <= open) nextBackslash = source.indexOf('\\', open + 1);
      const escaped = nextBackslash !== -1 && nextBackslash < close;
      while (close !== -1 && escaped && isEscapedQuote(source, close)) close = source.indexOf('"', close + 1);
      if (close === -1) return;
      const pattern = patterns[which];
      pattern.lastIndex = close + 1;
      next[which] = pattern.test(source) ? pattern.lastIndex - 1 : -1;
      let piece: string;
      if (escaped) {
        try {
          const literal = Buffer.from(source.slice(open, close + 1), 'latin1').toString('utf8');
          piece = Buffer.from(JSON.parse(literal) as string, 'utf8').toString('latin1');
        } catch {
          continue;
        }
      } else {
        piece = source.slice(open + 1, close);
        if (piece.length > SHORT_SLICE_CHARS) this.slicedParts = true;
      }
      this.textParts.push(piece);
      this.textBytes += piece.length;
    }
  }
}
/** A copy of `text` that holds no reference to the string it was sliced from. */
function flat(text: string): string {
  return text.length === 0 ? '' : Buffer.from(text, 'latin1').toString('latin1');
}

function isEscapedQuote(source: string, quote: number): boolean {
  let backslashes = 0;
  for (let position = quote - 1; position >= 0 && source.charCodeAt(position) === 92; position -= 1) backslashes += 1;
  return backslashes % 2 === 1;
}
