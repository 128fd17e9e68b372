// Whole SSE events out of a byte stream as it arrives, for the stream watchers that read events
// straight from the bytes (the OpenAI stream tail, the Anthropic usage watch): each push hands on
// the bytes up to the end of the last event it completes and holds the rest until that event's end
// arrives. An event split over many chunks is joined once, when its end arrives, not once per
// chunk. An event ends with a blank line of LF or CRLF line endings (see nextEventEnd). Pure: no I/O.
import { lastEventEnd } from './openai-stream-scan';

const LINE_FEED = 10;
const CARRIAGE_RETURN = 13;

export class SseFramer {
  /** Where the last complete event ends in the bytes the last push returned. */
  end = 0;
  private held: Buffer[] = [];
  /** bytes held: the start of an event whose end has not arrived */
  heldBytes = 0;
  /** an unfinished event grew past maxHeldBytes: its bytes were dropped */
  overflowed = false;

  constructor(private readonly maxHeldBytes = Number.POSITIVE_INFINITY) {}

  /**
   * Takes a chunk; returns the bytes with the events it completes (the chunk, or the held bytes and
   * the chunk joined), whole from the start up to `end`, or null when it completes none. What
   * follows `end` is held.
   */
  push(chunk: Buffer): Buffer | null {
    let buffer = chunk;
    // a boundary found in the chunk alone is a real one, whatever came before it
    let end = lastEventEnd(chunk, 0);
    if (this.held.length > 0) {
      if (end === 0 && !this.completesHeld(chunk)) {
        this.hold(chunk);
        this.end = 0;
        return null;
      }
      const heldBytes = this.heldBytes;
      this.held.push(chunk);
      buffer = Buffer.concat(this.held, heldBytes + chunk.length);
      this.held = [];
      this.heldBytes = 0;
      end = end > 0 ? heldBytes + end : lastEventEnd(buffer, heldBytes);
    }
    if (end < buffer.length) this.hold(buffer.subarray(end));
    this.end = end;
    return end === 0 ? null : buffer;
  }

  /** The held bytes (an event without its end), in the pieces they came in; nothing is held after. */
  takeHeld(): Buffer[] {
    const held = this.held;
    this.held = [];
    this.heldBytes = 0;
    return held;
  }

  private hold(rest: Buffer): void {
    if (this.heldBytes + rest.length > this.maxHeldBytes) {
      // an event without its end past the bound: drop it rather than hold the upstream's bytes without limit
      this.overflowed = true;
      this.held = [];
      this.heldBytes = 0;
      return;
    }
    this.held.push(rest);
    this.heldBytes += rest.length;
  }

  /** Whether the chunk's first bytes finish a blank line begun at the end of the held bytes. */
  private completesHeld(chunk: Buffer): boolean {
    const last = this.held[this.held.length - 1];
    const lastByte = last[last.length - 1];
    const first = chunk[0];
    if (lastByte === LINE_FEED) return first === LINE_FEED || (first === CARRIAGE_RETURN && chunk[1] === LINE_FEED);
    // "\n\r" + "\n" (the \n before the \r may sit in an earlier piece)
    if (lastByte !== CARRIAGE_RETURN || first !== LINE_FEED) return false;
    const beforeLast = last.length >= 2 ? last[last.length - 2] : this.held[this.held.length - 2]?.at(-1);
    return beforeLast === LINE_FEED;
  }
}
