// Usage of a /v1/messages call for billing: from the upstream's Message or stream events when it
// reports them, else counted locally (prompt from the request, completion from the text delivered)
// and marked estimated. The stream watcher sees the forwarded bytes without changing them.
import { countTokens } from '../billing/tokens';
export { completionTokensOfMessage, localPromptTokens } from '../billing/message-tokens';
import { AnthropicStreamUsage } from '../formats/anthropic-usage';
import { SseDecoder } from '../formats/sse';

export interface MessageUsage { input: number; output: number; cacheRead: number; cacheCreation: number }
export type UsageSource = 'upstream' | 'estimated';

/** Bound on delivered delta events kept for a local count (the rest is extrapolated by size). */
const MAX_KEPT_DELTA_BYTES = 256 * 1024;

type Json = Record<string, unknown>;
const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);
const count = (value: unknown): number => (typeof value === 'number' && Number.isFinite(value) && value > 0 ? Math.round(value) : 0);

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
 * message_delta, whether the message finished, and the delta events delivered (kept raw, up to a
 * bound, and parsed only when the upstream's usage is missing).
 */
export class MessagesStreamWatch {
  private readonly decoder = new SseDecoder();
  private readonly reader = new AnthropicStreamUsage();
  private readonly kept: string[] = [];
  private keptBytes = 0;
  private deltaBytes = 0;

  push(chunk: Buffer): void {
    for (const event of this.decoder.push(chunk)) this.observe(event);
  }

  end(): void {
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

  private observe(event: { event?: string; data: string }): void {
    this.reader.observe(event);
    const isDelta = event.event === 'content_block_delta' || (event.event === undefined && event.data.includes('"content_block_delta"'));
    if (!isDelta) return;
    this.deltaBytes += event.data.length;
    if (this.keptBytes < MAX_KEPT_DELTA_BYTES) {
      this.kept.push(event.data);
      this.keptBytes += event.data.length;
    }
  }

  private deliveredTokens(): number {
    if (this.keptBytes === 0) return 0;
    let text = '';
    for (const data of this.kept) {
      try {
        const delta = (JSON.parse(data) as { delta?: Json }).delta ?? {};
        const piece = delta.text ?? delta.partial_json ?? delta.thinking;
        if (typeof piece === 'string') text += piece;
      } catch { /* a malformed event delivered no countable text */ }
    }
    const tokens = countTokens(text);
    return this.deltaBytes > this.keptBytes ? Math.ceil((tokens * this.deltaBytes) / this.keptBytes) : tokens;
  }
}
