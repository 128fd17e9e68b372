// An Anthropic stream forwarded to an Anthropic client as it is, with repairs decided once per
// stream from its first event (message_start), so an ordinary stream costs one look at that event:
//   - the upstream's model name (a channel's model_map target) is swapped for the client's;
//   - message_start's placeholder output count shows 0 (the final count comes in message_delta);
//   - an upstream that omitted usage (no `usage` in message_start) would crash the SDKs, which read
//     message_start.usage and message_delta.usage: such a stream is re-emitted event by event with
//     usage filled in, the local counts billing falls back on (prompt given, completion counted on
//     the delivered deltas as the relay's stream watch counts them).
// Pure: no I/O.
import { countTokens } from '../billing/tokens';
import type { ModelRename } from './model-rename';
import { SseDecoder, type SseEvent } from './sse';

export interface AnthropicStreamFillOptions {
  /** set when the channel maps the model to another upstream name */
  rename?: ModelRename;
  /** the request's local prompt count, asked for only when the upstream omitted usage */
  promptTokens: () => number;
  /** bound on the bytes held while waiting for the first event to complete */
  maxHeldBytes: number;
}

/** Completion text kept for the local count (the rest is extrapolated by size), as the stream watch does. */
const MAX_COUNTED_CHARS = 256 * 1024;

type Mode = 'head' | 'pass' | 'fill';
type Json = Record<string, any>;

export class AnthropicStreamFill {
  private mode: Mode = 'head';
  private held: Buffer[] = [];
  private heldBytes = 0;
  private decoder: SseDecoder | undefined;
  private readonly delivered: string[] = [];
  private keptChars = 0;
  private deliveredChars = 0;

  constructor(private readonly options: AnthropicStreamFillOptions) {}

  push(chunk: Buffer): Buffer | string | null {
    if (this.mode === 'pass') return chunk;
    if (this.mode === 'fill') return this.fill(this.decoder!.push(chunk));
    this.held.push(chunk);
    this.heldBytes += chunk.length;
    const joined = this.held.length === 1 ? chunk : Buffer.concat(this.held, this.heldBytes);
    const end = firstEventEnd(joined);
    if (end === -1 && this.heldBytes <= this.options.maxHeldBytes) {
      if (this.held.length > 1) this.held = [joined];
      return null;
    }
    this.held = [];
    this.heldBytes = 0;
    return this.decide(joined, end);
  }

  /** What is still held or decoded when the upstream ends. */
  finish(): Buffer | string | null {
    if (this.mode === 'fill') {
      const out = this.fill(this.decoder!.end());
      return out.length > 0 ? out : null;
    }
    if (this.mode === 'pass' || this.heldBytes === 0) return null;
    const joined = Buffer.concat(this.held, this.heldBytes);
    this.held = [];
    this.heldBytes = 0;
    this.mode = 'pass';
    return this.options.rename ? this.options.rename.apply(joined) : joined;
  }

  private decide(joined: Buffer, end: number): Buffer | string {
    // past the bound without a blank line there is no first event to look at: the bytes go on as they are
    if (end === -1) { this.mode = 'pass'; return joined; }
    const firstText = joined.toString('utf8', 0, end);
    if (!lacksUsage(firstText)) {
      this.mode = 'pass';
      let head = joined.subarray(0, end);
      if (this.options.rename) head = this.options.rename.apply(head);
      // message_start's output count is a placeholder the final message_delta replaces; clients that
      // add up the counts of every event (LangChain) would count it twice, so it is shown as 0
      const zeroed = zeroStartOutput(firstText);
      if (zeroed !== undefined) head = this.options.rename ? this.options.rename.apply(Buffer.from(zeroed)) : Buffer.from(zeroed);
      return end === joined.length ? head : Buffer.concat([head, joined.subarray(end)]);
    }
    this.mode = 'fill';
    this.decoder = new SseDecoder();
    return this.fill(this.decoder.push(joined));
  }

  private fill(events: SseEvent[]): string {
    let out = '';
    for (const event of events) out += this.repair(event);
    return out;
  }

  private repair(event: SseEvent): string {
    let payload: Json | undefined;
    try { payload = JSON.parse(event.data) as Json; } catch { payload = undefined; }
    const type = event.event ?? payload?.type;
    if (payload && typeof payload === 'object') {
      if (type === 'message_start' && payload.message && typeof payload.message === 'object') {
        if (payload.message.usage == null) payload.message.usage = { input_tokens: this.options.promptTokens(), output_tokens: 0 };
        if (this.options.rename && typeof payload.message.model === 'string') payload.message.model = this.options.rename.to;
        return write(type, payload);
      }
      if (type === 'content_block_delta') this.note(payload.delta);
      if (type === 'message_delta' && (payload.usage == null || typeof payload.usage.output_tokens !== 'number')) {
        payload.usage = { ...(payload.usage ?? {}), output_tokens: this.deliveredTokens() };
        return write(type, payload);
      }
    }
    return `${event.event ? `event: ${event.event}\n` : ''}data: ${event.data}\n\n`;
  }

  private note(delta: Json | undefined): void {
    const piece = delta?.text ?? delta?.partial_json ?? delta?.thinking;
    if (typeof piece !== 'string') return;
    this.deliveredChars += piece.length;
    if (this.keptChars < MAX_COUNTED_CHARS) { this.delivered.push(piece); this.keptChars += piece.length; }
  }

  private deliveredTokens(): number {
    const tokens = countTokens(this.delivered.join(''));
    return this.deliveredChars > this.keptChars ? Math.ceil((tokens * this.deliveredChars) / this.keptChars) : tokens;
  }
}

const write = (type: string, payload: Json): string => `event: ${type}\ndata: ${JSON.stringify(payload)}\n\n`;

/** A message_start event's text with a non-zero output_tokens set to 0, or undefined when there is none. */
function zeroStartOutput(eventText: string): string | undefined {
  if (!eventText.includes('message_start')) return undefined;
  const zeroed = eventText.replace(/("output_tokens"\s*:\s*)[1-9]\d*/, '$10');
  return zeroed === eventText ? undefined : zeroed;
}

/** Whether a first event is a message_start whose message has no usage object. */
function lacksUsage(eventText: string): boolean {
  if (!eventText.includes('message_start') || eventText.includes('"usage":')) return false;
  const data = eventText.split(/\r?\n/).filter((line) => line.startsWith('data:')).map((line) => line.slice(5).trimStart()).join('\n');
  try {
    const payload = JSON.parse(data) as Json;
    return payload?.type === 'message_start' && typeof payload.message === 'object' && payload.message !== null
      && (payload.message.usage === undefined || payload.message.usage === null);
  } catch {
    return false;
  }
}

/** Index just past the first blank line (`\n\n` or `\r\n\r\n`), or -1. */
export function firstEventEnd(buffer: Buffer): number {
  const lf = buffer.indexOf('\n\n');
  const crlf = buffer.indexOf('\r\n\r\n');
  if (lf === -1) return crlf === -1 ? -1 : crlf + 4;
  if (crlf === -1 || lf < crlf) return lf + 2;
  return crlf + 4;
}
