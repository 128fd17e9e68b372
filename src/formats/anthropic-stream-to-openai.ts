// The stream half of OpenAI clients served by an Anthropic channel: Anthropic Messages events in,
// OpenAI chat chunk text out (the request and the whole answer are in openai-to-anthropic.ts). Pure:
// no I/O.
import type { AnthropicUsage } from './anthropic-messages';
import { toOpenAIFinishReason } from './map-stop-reason';
import { parseBoundedJson } from './json-value';
import { reportsUsage, toOpenAIUsage, type OpenAIChatChunk, type OpenAIChunkDelta } from './openai-to-anthropic';

type Payload = Record<string, any>;

function parsePayload(data: string): Payload | undefined {
  const parsed = parseBoundedJson(data);
  return typeof parsed === 'object' && parsed !== null ? parsed as Payload : undefined;
}

/**
 * Turns one Anthropic event stream into OpenAI chunk text. The final chunk always carries usage
 * (spec §4.2 rule 2); with `includeUsage` the other chunks carry `usage: null` as OpenAI does.
 * After an upstream `error` event the stream is over: `finish()` then writes nothing, so a
 * failed stream never ends with a success marker.
 */
export class AnthropicToOpenAIStream {
  private id = 'chatcmpl-gateway';
  private readonly created = Math.floor(Date.now() / 1000);
  private started = false;
  private ended = false;
  private stop: string | null = null;
  private sawUsage = false;
  private readonly toolIndexByBlock = new Map<number, number>();
  private readonly counts: Required<{ [K in keyof AnthropicUsage]: number }> = {
    input_tokens: 0, output_tokens: 0, cache_read_input_tokens: 0, cache_creation_input_tokens: 0,
  };

  constructor(private readonly options: { model: string; includeUsage: boolean }) {}

  get usage(): { prompt_tokens: number; completion_tokens: number; total_tokens: number; cache_read_input_tokens: number; cache_creation_input_tokens: number } {
    const { prompt_tokens, completion_tokens, total_tokens } = toOpenAIUsage(this.counts);
    return {
      prompt_tokens, completion_tokens, total_tokens,
      cache_read_input_tokens: this.counts.cache_read_input_tokens, cache_creation_input_tokens: this.counts.cache_creation_input_tokens,
    };
  }

  get finishReason(): string | null {
    return this.stop === null ? null : toOpenAIFinishReason(this.stop);
  }

  push(event: { event?: string; data: string }): string {
    if (this.ended) return '';
    const payload = parsePayload(event.data);
    if (!payload) return '';
    switch (payload.type ?? event.event) {
      case 'message_start':
        if (typeof payload.message?.id === 'string') this.id = `chatcmpl-${payload.message.id}`;
        this.recordUsage(payload.message?.usage);
        return this.begin();
      case 'content_block_start': {
        const block = payload.content_block ?? {};
        if (block.type === 'tool_use') {
          const index = this.toolIndexByBlock.size;
          this.toolIndexByBlock.set(payload.index, index);
          return this.chunk({ tool_calls: [{ index, id: block.id, type: 'function', function: { name: block.name, arguments: '' } }] });
        }
        if (block.type === 'text' && block.text) return this.chunk({ content: block.text });
        return this.begin();
      }
      case 'content_block_delta': {
        const delta = payload.delta ?? {};
        if (delta.type === 'text_delta' && delta.text) return this.chunk({ content: delta.text });
        if (delta.type === 'thinking_delta' && delta.thinking) return this.chunk({ reasoning_content: delta.thinking });
        const index = this.toolIndexByBlock.get(payload.index);
        if (delta.type === 'input_json_delta' && delta.partial_json && index !== undefined) {
          return this.chunk({ tool_calls: [{ index, function: { arguments: delta.partial_json } }] });
        }
        return '';
      }
      case 'message_delta':
        if (typeof payload.delta?.stop_reason === 'string') this.stop = payload.delta.stop_reason;
        this.recordUsage(payload.usage);
        return '';
      case 'error': {
        this.ended = true;
        const error = payload.error ?? {};
        const body = { error: { message: String(error.message ?? 'upstream error'), type: String(error.type ?? 'api_error'), param: null, code: null } };
        return `data: ${JSON.stringify(body)}\n\n`;
      }
      default:
        return '';
    }
  }

  finish(): string {
    if (this.ended) return '';
    this.ended = true;
    const final = {
      id: this.id, object: 'chat.completion.chunk', created: this.created, model: this.options.model,
      choices: [{ index: 0, delta: {}, finish_reason: this.finishReason ?? 'stop' }],
      // without the upstream's counts no usage is made up here: the stream tail estimates, bills and shows it
      ...(this.sawUsage ? { usage: toOpenAIUsage(this.counts) } : {}),
    };
    return `${this.begin()}data: ${JSON.stringify(final)}\n\ndata: [DONE]\n\n`;
  }

  private recordUsage(usage: Payload | undefined): void {
    if (!usage) return;
    if (reportsUsage(usage)) this.sawUsage = true;
    for (const field of Object.keys(this.counts) as Array<keyof typeof this.counts>) {
      if (typeof usage[field] === 'number') this.counts[field] = usage[field];
    }
  }

  /** The role chunk, once, before anything else. */
  private begin(): string {
    if (this.started) return '';
    this.started = true;
    return this.write({ role: 'assistant', content: '' });
  }

  private chunk(delta: OpenAIChunkDelta): string {
    return this.begin() + this.write(delta);
  }

  private write(delta: OpenAIChunkDelta): string {
    const chunk: OpenAIChatChunk = {
      id: this.id, object: 'chat.completion.chunk', created: this.created, model: this.options.model,
      choices: [{ index: 0, delta, finish_reason: null }],
      ...(this.options.includeUsage ? { usage: null } : {}),
    };
    return `data: ${JSON.stringify(chunk)}\n\n`;
  }
}
