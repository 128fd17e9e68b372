// Text a stream delivered to the client, for counting its tokens locally (when the upstream
// reports no usage, or to weigh a stream against its reservation). The first part is kept, up to a
// bound; past it only the size is counted and the count is scaled by size (an estimate either way).
import { countTokens } from '../billing/tokens';

const DEFAULT_MAX_KEPT_CHARS = 256 * 1024;

export class DeliveredText {
  private text = '';
  /** characters delivered, kept or not */
  chars = 0;

  constructor(private readonly maxKeptChars = DEFAULT_MAX_KEPT_CHARS) {}

  add(piece: string): void {
    this.chars += piece.length;
    if (this.text.length < this.maxKeptChars) this.text += piece;
  }

  /** tokenizer count of what was delivered (scaled past the bound) */
  tokens(): number {
    const kept = countTokens(this.text);
    return this.chars > this.text.length ? Math.ceil((kept * this.chars) / this.text.length) : kept;
  }
}
