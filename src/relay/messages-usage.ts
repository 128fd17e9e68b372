// Usage of a /v1/messages call for billing: from the upstream's Message or stream events when it
// reports them, else counted locally (prompt from the request, completion from the text delivered)
// and marked estimated. The stream watcher sees the forwarded bytes without changing them.
import { countTokens } from '../billing/tokens';
export { completionTokensOfMessage, localPromptTokens } from '../billing/message-tokens';
import { AnthropicStreamUsage } from '../formats/anthropic-usage';
import { MAX_EVENT_BYTES, SseDecoder } from '../formats/sse';
import { SseFramer } from '../formats/sse-framer';
import { KeptBytes } from '../formats/kept-bytes';
import { endsAtEventEnd, matchesAt, nextEventEnd } from '../formats/openai-stream-scan';

export interface MessageUsage { input: number; output: number; cacheRead: number; cacheCreation: number }
export type UsageSource = 'upstream' | 'estimated';

/**
 * Bound on the delivered delta events' data kept for a local count, bytes: past it the count is
 * scaled by bytes delivered ÷ kept. What is kept lives as long as the stream, so this bounds what
 * an open stream holds (as the OpenAI stream tail's DEFAULT_MAX_TEXT_BYTES does).
 */
export const MAX_KEPT_DELTA_BYTES = 4 * 1024;
/**
 * The kept records' first buffer: the bound's worth of delta data as Anthropic sends it, each
 * record without its data's head (DELTA_DATA_HEAD, about 40% of a text delta's data); other forms
 * grow it.
 */
const KEPT_BUFFER_BYTES = (MAX_KEPT_DELTA_BYTES * 5) / 8;
/** An unfinished event held past this many bytes: the rest of the stream goes through the SSE decoder. */
const MAX_FRAMED_EVENT_BYTES = 64 * 1024;

const DELTA_EVENT_LINE = Buffer.from('event: content_block_delta\ndata: ');
/** how a delta event's data begins in the form Anthropic sends: kept without it, put back when counted */
const DELTA_DATA_HEAD_TEXT = '{"type":"content_block_delta","index":';
const DELTA_DATA_HEAD = Buffer.from(DELTA_DATA_HEAD_TEXT);
const LINE_FEED = 10;
const CARRIAGE_RETURN = 13;

type Json = Record<string, unknown>;
const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);
const count = (value: unknown): number => (typeof value === 'number' && Number.isFinite(value) && value > 0 ? Math.round(value) : 0);

/**
 * Whether buffer[start, eventEnd) (an event ending at its blank line) is a delta event in the form
 * Anthropic sends: the event line, then one data line with no line feed in it. Carriage returns are
 * the caller's to rule out.
 */
function isDeltaEvent(buffer: Buffer, start: number, eventEnd: number): boolean {
  const dataEnd = eventEnd - 2;
  return buffer[dataEnd] === LINE_FEED && matchesAt(buffer, start, DELTA_EVENT_LINE)
    && buffer.indexOf(LINE_FEED, start + DELTA_EVENT_LINE.length) === dataEnd;
}

/**
 * Usage within the request's bounds (the same object when within): output above `completionBound`
 * and a prompt (input, cache reads and cache writes) above `promptBound` are a fault, billed at the
 * bound. The prompt's parts are kept in that order: input tokens first, cache writes (the dearest) last.
 */
export function boundedMessageUsage(usage: MessageUsage, promptBound: number, completionBound: number): MessageUsage {
  if (usage.input + usage.cacheRead + usage.cacheCreation <= promptBound && usage.output <= completionBound) return usage;
  const input = Math.min(usage.input, promptBound);
  const cacheRead = Math.min(usage.cacheRead, promptBound - input);
  const cacheCreation = Math.min(usage.cacheCreation, promptBound - input - cacheRead);
  return { input, output: Math.min(usage.output, completionBound), cacheRead, cacheCreation };
}

/** The usage object of an Anthropic Message, or undefined when it reports no tokens at all. */
export function usageOfMessage(message: Json): MessageUsage | undefined {
  const usage = message.usage;
  if (!isObject(usage)) return undefined;
  const result = {
    input: count(usage.input_tokens), output: count(usage.output_tokens),
    cacheRead: count(usage.cache_read_input_tokens), cacheCreation: count(usage.cache_creation_input_tokens),
  };
  return result.input + result.output + result.cacheRead + result.cacheCreation === 0 ? undefined : result;
}

/**
 * Watches an Anthropic event stream as it is forwarded: usage from message_start and the last
 * message_delta, whether the message finished, and the delta events delivered (their data kept, up
 * to a bound, and parsed only when the upstream's usage is missing).
 *
 * The delta events, nearly all of a stream, are read from the bytes: an event in the form
 * Anthropic sends (`event: content_block_delta`, one `data:` line, LF line ends) is counted, and
 * kept while under the bound, without being decoded. Every other event goes through one SSE
 * decoder, whole, so the decoder sees the events it would see if it read the whole stream. A stream
 * that holds an event unfinished past MAX_FRAMED_EVENT_BYTES goes through the decoder from there on.
 */
export class MessagesStreamWatch {
  private readonly decoder = new SseDecoder();
  private readonly framer = new SseFramer();
  private readonly reader = new AnthropicStreamUsage();
  /**
   * The kept delta events' data, each a record (KeptBytes.appendRecord: its length, then its bytes).
   * Records are added while the data kept is under MAX_KEPT_DELTA_BYTES; an event without data holds no text
   * and is not kept, so a record holds at least one byte besides its 4 of length and all of them
   * stay within five times the bound (plus the event that crosses it).
   */
  private readonly kept = new KeptBytes(KEPT_BUFFER_BYTES);
  /** bytes of delta event data kept (the records' lengths not counted) */
  private keptBytes = 0;
  /** the token count of `kept`, once it is full */
  private keptTokens: number | undefined;
  private deltaBytes = 0;
  /** the stream's first event was seen (it goes to the decoder) */
  private started = false;
  /** false once the decoder takes every byte */
  private framing = true;
  /** the framer holds nothing: an event touches the watch and its bytes, not the framer */
  private framerIdle = true;

  push(chunk: Buffer): void {
    if (!this.framing) { this.decode(chunk); return; }
    // whole events with nothing held before them go on as they are (the framer would hand them back)
    if (this.framerIdle && endsAtEventEnd(chunk)) { this.events(chunk, chunk.length); return; }
    const framed = this.framer.push(chunk);
    this.framerIdle = this.framer.heldBytes === 0;
    if (framed !== null) this.events(framed, this.framer.end);
    if (this.framer.heldBytes > MAX_FRAMED_EVENT_BYTES) {
      this.framing = false;
      for (const piece of this.framer.takeHeld()) this.decode(piece);
    }
  }

  end(): void {
    if (this.framing) for (const piece of this.framer.takeHeld()) this.decode(piece);
    for (const event of this.decoder.end()) this.observe(event);
  }

  get sawMessageStop(): boolean { return this.reader.sawMessageStop; }
  /** message_delta with a stop_reason arrived: the answer is complete even if message_stop is missing */
  get sawStopReason(): boolean { return this.reader.stopReason !== null; }
  get upstreamError(): { type: string; message: string } | undefined { return this.reader.error; }

  /** Usage to bill: the upstream's when it reported the end of the message, else counted locally. */
  usage(promptTokens: () => number): { usage: MessageUsage; source: UsageSource } {
    const reported = this.reader.usage;
    const usage: MessageUsage = {
      input: reported.input_tokens, output: reported.output_tokens,
      cacheRead: reported.cache_read_input_tokens, cacheCreation: reported.cache_creation_input_tokens,
    };
    if (this.sawStopReason && (usage.output > 0 || this.deltaBytes === 0)) return { usage, source: 'upstream' };
    // Cut short (client gone, upstream failure) or no usage: what was delivered is what is billed.
    usage.output = Math.max(usage.output, this.deliveredTokens());
    if (usage.input + usage.cacheRead + usage.cacheCreation === 0) usage.input = promptTokens();
    return { usage, source: 'estimated' };
  }

  /** The complete events in buffer[0, end): delta events in Anthropic's form read here, runs of the others decoded. */
  private events(buffer: Buffer, end: number): void {
    const first = !this.started;
    this.started = true;
    // an event past the decoder's bound makes it throw before it returns any event of the chunk: left to it whole
    if (end > MAX_EVENT_BYTES) { this.decode(buffer.subarray(0, end)); return; }
    // the usual chunk: one delta event in Anthropic's form, alone
    if (!first && end === buffer.length && isDeltaEvent(buffer, 0, end) && buffer.indexOf(CARRIAGE_RETURN, DELTA_EVENT_LINE.length) === -1) {
      this.delivered(buffer, DELTA_EVENT_LINE.length, end - 2);
      return;
    }
    // the stream's first event goes to the decoder, which drops a byte order mark before it
    let start = first ? nextEventEnd(buffer, 0, end) : 0;
    let decodeFrom = 0;
    // the first carriage return at or after `start` (-1: none in the buffer): a data line holding one is not in the usual form
    let carriageReturn = buffer.indexOf(CARRIAGE_RETURN);
    while (start < end) {
      const eventEnd = nextEventEnd(buffer, start, end);
      if (carriageReturn !== -1 && carriageReturn < start) carriageReturn = buffer.indexOf(CARRIAGE_RETURN, start);
      if (isDeltaEvent(buffer, start, eventEnd) && (carriageReturn === -1 || carriageReturn >= eventEnd)) {
        if (decodeFrom < start) this.decode(buffer.subarray(decodeFrom, start));
        this.delivered(buffer, start + DELTA_EVENT_LINE.length, eventEnd - 2);
        decodeFrom = eventEnd;
      }
      start = eventEnd;
    }
    if (decodeFrom < end) this.decode(buffer.subarray(decodeFrom, end));
  }

  private decode(bytes: Buffer): void {
    for (const event of this.decoder.push(bytes)) this.observe(event);
  }

  /** A delta event's data read from the bytes, buffer[start, end): counted, and kept while under the bound. */
  private delivered(buffer: Buffer, start: number, end: number): void {
    if (!this.noteDelta(end - start)) return;
    const headless = matchesAt(buffer, start, DELTA_DATA_HEAD);
    this.kept.appendRecord(buffer, headless ? start + DELTA_DATA_HEAD.length : start, end, headless);
  }

  private observe(event: { event?: string; data: string }): void {
    this.reader.observe(event);
    const isDelta = event.event === 'content_block_delta' || (event.event === undefined && event.data.includes('"content_block_delta"'));
    if (isDelta && this.noteDelta(Buffer.byteLength(event.data))) this.kept.appendTextRecord(event.data);
  }

  /** A delta event's data of `bytes`: counted; true when it is to be kept (as one record of `kept`). */
  private noteDelta(bytes: number): boolean {
    this.deltaBytes += bytes;
    if (bytes === 0 || this.keptBytes >= MAX_KEPT_DELTA_BYTES) return false;
    this.keptBytes += bytes;
    return true;
  }

  /** Bytes of delta event data delivered so far: a rough measure of the output, above its text. */
  get deliveredDeltaBytes(): number { return this.deltaBytes; }

  /**
   * Output tokens delivered so far, counted on the kept delta data and scaled to all of it. The
   * count of the kept data is made once it stops growing (a long stream is weighed many times).
   */
  deliveredTokens(): number {
    if (this.keptBytes === 0) return 0;
    const tokens = this.keptTokens ?? this.countKept();
    if (this.keptBytes >= MAX_KEPT_DELTA_BYTES) this.keptTokens = tokens;
    return this.deltaBytes > this.keptBytes ? Math.ceil((tokens * this.deltaBytes) / this.keptBytes) : tokens;
  }

  private countKept(): number {
    let text = '';
    for (let at = 0; at < this.kept.length;) {
      const end = at + 4 + this.kept.recordLength(at);
      const kept = this.kept.toString('utf8', at + 4, end);
      const data = this.kept.recordTag(at) ? DELTA_DATA_HEAD_TEXT + kept : kept;
      at = end;
      try {
        const delta = (JSON.parse(data) as { delta?: Json }).delta ?? {};
        const piece = delta.text ?? delta.partial_json ?? delta.thinking;
        if (typeof piece === 'string') text += piece;
      } catch { /* a malformed event delivered no countable text */ }
    }
    return countTokens(text);
  }
}
