// Completion text of a forwarded OpenAI stream, for counting tokens locally when the upstream
// reports no usage. Not extracted per event: the first `maxBytes` of forwarded buffers are kept by
// reference and scanned once, on demand; past the bound only the forwarded size is counted and
// counts are scaled by forwarded / kept bytes (an estimate either way).

const EXTRACT_BATCH_BYTES = 64 * 1024;
let extractScratch: Buffer | undefined;

export class CompletionTextSample {
  private readonly maxBytes: number;
  private pending: Buffer[] = [];
  private keptBytes = 0;
  private forwardedBytes = 0;
  /** raw UTF-8 bytes as latin1 strings, see extractText */
  private readonly textParts: string[] = [];
  private textBytes = 0;
  /** tool calls were streamed: their `arguments` count as completion text too */
  withArguments = false;

  constructor(maxBytes: number) {
    this.maxBytes = maxBytes;
  }

  /** Records forwarded bytes (whole events); keeps a reference while under the bound. */
  add(output: Buffer): void {
    this.forwardedBytes += output.length;
    if (this.keptBytes >= this.maxBytes) return;
    this.pending.push(output);
    this.keptBytes += output.length;
  }

  /** forwarded bytes / kept bytes: how much more text there was than was kept. */
  get scale(): number {
    return this.keptBytes > 0 && this.forwardedBytes > this.keptBytes ? this.forwardedBytes / this.keptBytes : 1;
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

  private extractPending(): void {
    // Scanned in batches copied into one reused buffer: V8 makes strings of a few hundred KB an order
    // of magnitude slower to create than 64 KB ones, and fresh batch buffers would only feed the GC.
    const scratch = extractScratch ??= Buffer.allocUnsafe(EXTRACT_BATCH_BYTES);
    let filled = 0;
    for (const buffer of this.pending) {
      if (buffer.length > EXTRACT_BATCH_BYTES) {
        if (filled > 0) this.extractText(scratch.toString('latin1', 0, filled));
        filled = 0;
        this.extractText(buffer.toString('latin1'));
        continue;
      }
      if (filled + buffer.length > EXTRACT_BATCH_BYTES) {
        this.extractText(scratch.toString('latin1', 0, filled));
        filled = 0;
      }
      filled += buffer.copy(scratch, filled);
    }
    if (filled > 0) this.extractText(scratch.toString('latin1', 0, filled));
    this.pending = [];
  }

  /**
   * Collects the `content` (and `reasoning_content`) string values of whole events, and `arguments`
   * once tool calls were seen. Works on raw bytes held in a latin1 string (one char per byte):
   * offsets are byte offsets, a piece's length is its UTF-8 size, and the pieces are decoded once
   * at the end instead of one by one.
   */
  private extractText(source: string): void {
    const patterns = this.withArguments ? [/content": ?"/g, /arguments": ?"/g] : [/content": ?"/g];
    const next = patterns.map((pattern) => (pattern.test(source) ? pattern.lastIndex - 1 : -1));
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
      }
      this.textParts.push(piece);
      this.textBytes += piece.length;
    }
  }
}
function isEscapedQuote(source: string, quote: number): boolean {
  let backslashes = 0;
  for (let position = quote - 1; position >= 0 && source.charCodeAt(position) === 92; position -= 1) backslashes += 1;
  return backslashes % 2 === 1;
}
