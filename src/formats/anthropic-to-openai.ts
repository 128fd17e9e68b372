// Anthropic Messages dialect → OpenAI chat (for /v1/messages served by an OpenAI-compatible channel):
// the request goes out as OpenAI, the answer comes back as Anthropic. Pure: no I/O.
import type {
  AnthropicContentBlock, AnthropicDocumentBlock, AnthropicMessage, AnthropicMessageParam, AnthropicRequest, AnthropicToolResultBlock, Converted,
} from './anthropic-messages';
import { badRequest, type GatewayError } from '../errors';
import { countTokens } from '../billing/tokens';
import { toAnthropicStopReason } from './map-stop-reason';
import type {
  OpenAIChatChunk, OpenAIChatCompletion, OpenAIChatMessage, OpenAIChatRequest, OpenAIContentPart, OpenAITool, OpenAIToolCall,
  OpenAIToolChoice, OpenAIUsage,
} from './openai-to-anthropic';
import { parseBoundedJson } from './json-value';

// Fields this converter reads; every other field of the request is named in a warning.
const HANDLED_FIELDS = new Set([
  'model', 'max_tokens', 'messages', 'system', 'stop_sequences', 'temperature', 'top_p', 'stream', 'tools', 'tool_choice', 'metadata',
  'thinking', 'output_config',
]);
/** Completion text kept by a translated stream for a local count (the rest is extrapolated by size). */
const MAX_COUNTED_CHARS = 256 * 1024;
/** OpenAI-compatible servers document at most four stop strings (spec §8). */
const MAX_STOP_SEQUENCES = 4;

const dataUri = (mediaType: string, data: string) => `data:${mediaType};base64,${data}`;
const hasCacheControl = (value: unknown) => typeof value === 'object' && value !== null && 'cache_control' in value;

function userPart(block: AnthropicContentBlock, param: string, warnings: string[]): OpenAIContentPart | undefined {
  switch (block.type) {
    case 'text':
      return { type: 'text', text: block.text };
    case 'image':
      if (block.source.type === 'base64') return { type: 'image_url', image_url: { url: dataUri(block.source.media_type, block.source.data) } };
      if (block.source.type === 'url') return { type: 'image_url', image_url: { url: block.source.url } };
      // a file id names an upload in Anthropic's Files API: no other upstream can read it
      throw unsendable(`${param}.source`, 'an image of source type file (an Anthropic Files API id)');
    case 'document': {
      const source = block.source ?? { type: '' };
      if (source.type === 'text' && typeof source.data === 'string') return { type: 'text', text: documentText(block, source.data) };
      if (source.type === 'content') return { type: 'text', text: documentText(block, contentSourceText(source.content, `${param}.source`, warnings)) };
      if (source.type === 'base64' && typeof source.data === 'string') {
        return { type: 'file', file: { filename: block.title ?? 'document.pdf', file_data: dataUri(source.media_type ?? 'application/pdf', source.data) } };
      }
      throw unsendable(`${param}.source`, `a document of source type ${String(source.type).slice(0, 40)}`);
    }
    default:
      warnings.push(`${param}: ${block.type} block has no OpenAI counterpart, dropped`);
      return undefined;
  }
}

/** A refusal for what an OpenAI-compatible upstream cannot be given: a 400 that names it. */
function unsendable(param: string, what: string): GatewayError {
  return badRequest(`${param}: ${what} can only be sent to an Anthropic channel; this model is served by an OpenAI-compatible one`, param, 'unsupported_value');
}

/** A text document as the model reads it: its title and context first, when it has them. */
function documentText(block: AnthropicDocumentBlock, text: string): string {
  const head = [block.title, block.context].filter((part): part is string => typeof part === 'string' && part !== '');
  return head.length > 0 ? `${head.join('\n')}\n\n${text}` : text;
}

function contentSourceText(content: string | AnthropicContentBlock[] | undefined, param: string, warnings: string[]): string {
  if (typeof content === 'string') return content;
  const texts: string[] = [];
  (content ?? []).forEach((inner, index) => {
    if (inner.type === 'text') texts.push(inner.text);
    else warnings.push(`${param}.content.${index}: ${inner.type} inside a document has no OpenAI counterpart, dropped`);
  });
  return texts.join('\n');
}

/** Text of a system turn inside messages (a string or text blocks). */
function systemText(content: string | AnthropicContentBlock[]): string {
  return typeof content === 'string' ? content : content.map((block) => (block.type === 'text' ? block.text : '')).join('\n');
}

function toolMessage(block: AnthropicToolResultBlock, param: string, warnings: string[]): OpenAIChatMessage {
  let text = '';
  if (typeof block.content === 'string') text = block.content;
  else if (Array.isArray(block.content)) {
    const texts: string[] = [];
    block.content.forEach((inner, index) => {
      if (inner.type === 'text') texts.push(inner.text);
      else warnings.push(`${param}.content.${index}: ${inner.type} in a tool result has no OpenAI counterpart, dropped`);
    });
    text = texts.join('\n');
  }
  // OpenAI tool messages have no error flag: the marker keeps the failure visible to the model.
  if (block.is_error) text = `Error: ${text}`;
  return { role: 'tool', tool_call_id: block.tool_use_id, content: text };
}

function convertMessage(message: AnthropicMessageParam, param: string, warnings: string[]): OpenAIChatMessage[] {
  if (message.role === 'system') return [{ role: 'system', content: systemText(message.content) }];
  if (typeof message.content === 'string') return [{ role: message.role, content: message.content }];
  if (message.role === 'user') {
    // Tool results answer the previous assistant turn, so their tool messages must come first.
    const toolMessages: OpenAIChatMessage[] = [];
    const parts: OpenAIContentPart[] = [];
    message.content.forEach((block, index) => {
      if (block.type === 'tool_result') toolMessages.push(toolMessage(block, `${param}.content.${index}`, warnings));
      else {
        const part = userPart(block, `${param}.content.${index}`, warnings);
        if (part) parts.push(part);
      }
    });
    if (parts.length === 0) return toolMessages;
    // A lone text part goes as a plain string: some compatible servers accept only strings.
    const content = parts.length === 1 && parts[0].type === 'text' ? parts[0].text : parts;
    return [...toolMessages, { role: 'user', content }];
  }
  let text = '';
  const toolCalls: OpenAIToolCall[] = [];
  message.content.forEach((block, index) => {
    if (block.type === 'text') text += block.text;
    else if (block.type === 'tool_use') {
      toolCalls.push({ id: block.id, type: 'function', function: { name: block.name, arguments: JSON.stringify(block.input ?? {}) } });
    } else warnings.push(`${param}.content.${index}: ${block.type} block has no OpenAI counterpart, dropped`);
  });
  const reply: OpenAIChatMessage = { role: 'assistant', content: text === '' && toolCalls.length > 0 ? null : text };
  if (toolCalls.length > 0) reply.tool_calls = toolCalls;
  return [reply];
}

function convertToolChoice(body: AnthropicRequest): { tool_choice?: OpenAIToolChoice; parallel_tool_calls?: boolean } {
  const choice = body.tool_choice;
  if (!choice) return {};
  const mapped: OpenAIToolChoice = choice.type === 'any' ? 'required'
    : choice.type === 'tool' ? { type: 'function', function: { name: choice.name } }
      : choice.type;
  return { tool_choice: mapped, ...(choice.disable_parallel_tool_use ? { parallel_tool_calls: false } : {}) };
}

/** Thinking budgets and their OpenAI reasoning effort: up to 4,096 low, up to 16,384 medium, above high. */
const EFFORT_BUDGETS: [number, string][] = [[4096, 'low'], [16_384, 'medium']];

/**
 * `thinking` (with `output_config.effort`) → `reasoning_effort`, for a model flagged `reasoning`:
 * other OpenAI models refuse the field, so for them it is left out (named in a warning).
 */
function reasoningEffort(body: AnthropicRequest, reasoningModel: boolean, warnings: string[]): string | undefined {
  const thinking = body.thinking;
  const asked = body.output_config?.effort;
  if (!thinking || thinking.type === 'disabled') {
    if (asked) warnings.push('output_config.effort: without thinking it has no OpenAI counterpart, dropped');
    return undefined;
  }
  let effort: string | undefined;
  if (thinking.type === 'enabled' && 'budget_tokens' in thinking && typeof thinking.budget_tokens === 'number') {
    const budget = thinking.budget_tokens;
    effort = EFFORT_BUDGETS.find(([limit]) => budget <= limit)?.[1] ?? 'high';
  } else if (typeof asked === 'string') {
    // xhigh and max have no OpenAI level above high
    effort = asked === 'low' || asked === 'medium' || asked === 'high' ? asked : 'high';
  }
  if (!reasoningModel) {
    warnings.push(`thinking: ${thinking.type} thinking has no counterpart on a model that is not a reasoning model, dropped`);
    return undefined;
  }
  return effort;
}

export function toOpenAIChatRequest(body: AnthropicRequest, options: { model: string; reasoning?: boolean }): Converted<OpenAIChatRequest> {
  const warnings: string[] = [];
  const messages: OpenAIChatMessage[] = [];
  let cacheControl = false;

  if (typeof body.system === 'string' && body.system !== '') messages.push({ role: 'system', content: body.system });
  else if (Array.isArray(body.system) && body.system.length > 0) {
    cacheControl ||= body.system.some(hasCacheControl);
    messages.push({ role: 'system', content: body.system.map((block) => block.text).join('\n') });
  }
  body.messages.forEach((message, index) => {
    if (Array.isArray(message.content)) cacheControl ||= message.content.some(hasCacheControl);
    if (message.role === 'assistant' && index === body.messages.length - 1) {
      warnings.push(`messages.${index}: OpenAI cannot continue a prefilled assistant turn; sent as an earlier reply`);
    }
    messages.push(...convertMessage(message, `messages.${index}`, warnings));
  });

  // max_tokens 0 (warm the prompt cache) has no OpenAI counterpart: the smallest answer instead
  if (body.max_tokens === 0) warnings.push('max_tokens: 0 (prompt cache warm-up) has no OpenAI counterpart; 1 sent');
  const request: OpenAIChatRequest = { model: options.model, messages, max_tokens: Math.max(1, body.max_tokens) };
  const format = body.output_config?.format;
  if (format && format.type === 'json_schema') {
    request.response_format = { type: 'json_schema', json_schema: { name: 'output', schema: format.schema, strict: true } };
  }
  const effort = reasoningEffort(body, options.reasoning === true, warnings);
  if (effort !== undefined) request.reasoning_effort = effort;
  if (typeof body.temperature === 'number') request.temperature = body.temperature;
  if (typeof body.top_p === 'number') request.top_p = body.top_p;
  if (body.stop_sequences && body.stop_sequences.length > 0) {
    if (body.stop_sequences.length > MAX_STOP_SEQUENCES) {
      warnings.push(`stop_sequences: OpenAI takes at most ${MAX_STOP_SEQUENCES}; the rest were dropped`);
    }
    request.stop = body.stop_sequences.slice(0, MAX_STOP_SEQUENCES);
  }
  if (body.stream === true) {
    request.stream = true;
    request.stream_options = { include_usage: true };
  }
  if (body.metadata) {
    if (typeof body.metadata.user_id === 'string') request.user = body.metadata.user_id;
    for (const key of Object.keys(body.metadata)) if (key !== 'user_id') warnings.push(`metadata.${key}: no OpenAI counterpart, dropped`);
  }
  if (body.tools && body.tools.length > 0) {
    const tools: OpenAITool[] = [];
    body.tools.forEach((tool, index) => {
      cacheControl ||= hasCacheControl(tool);
      if (tool.type !== undefined && tool.type !== 'custom') {
        warnings.push(`tools.${index}: server tool ${tool.type} has no OpenAI counterpart, dropped`);
        return;
      }
      tools.push({
        type: 'function',
        function: { name: tool.name, ...(tool.description !== undefined ? { description: tool.description } : {}), parameters: tool.input_schema ?? { type: 'object', properties: {} } },
      });
    });
    if (tools.length > 0) request.tools = tools;
  }
  // OpenAI rejects tool_choice without tools; without tools "none" is what happens anyway.
  if (request.tools) Object.assign(request, convertToolChoice(body));
  if (cacheControl) warnings.push('cache_control: no OpenAI counterpart, dropped');

  for (const field of Object.keys(body)) {
    if (HANDLED_FIELDS.has(field) || body[field] === undefined || body[field] === null) continue;
    warnings.push(`${field}: no OpenAI counterpart, dropped`);
  }
  return { value: request, warnings };
}

// ---- response --------------------------------------------------------------------------------

export function toAnthropicUsage(usage: OpenAIUsage | null | undefined): { input_tokens: number; output_tokens: number; cache_read_input_tokens: number; cache_creation_input_tokens: number } {
  const cached = usage?.prompt_tokens_details?.cached_tokens ?? 0;
  return {
    input_tokens: Math.max(0, (usage?.prompt_tokens ?? 0) - cached),
    output_tokens: usage?.completion_tokens ?? 0,
    cache_read_input_tokens: cached,
    cache_creation_input_tokens: 0,
  };
}

export function toAnthropicMessageId(openAIId: string | undefined): string {
  const bare = (openAIId ?? '').replace(/^chatcmpl-/, '');
  return bare.startsWith('msg_') ? bare : `msg_${bare || 'gateway'}`;
}

export function parseToolArguments(text: string | null | undefined, param: string, warnings: string[]): Record<string, unknown> {
  if (text == null || text.trim() === '') return {};
  const parsed = parseBoundedJson(text);
  if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) return parsed as Record<string, unknown>;
  warnings.push(`${param}: arguments are not a JSON object; used {}`);
  return {};
}

export function toAnthropicMessage(response: OpenAIChatCompletion, options: { model: string }): Converted<AnthropicMessage> {
  const warnings: string[] = [];
  const choices = response.choices ?? [];
  if (choices.length > 1) warnings.push(`choices: Anthropic carries one answer; ${choices.length - 1} more dropped`);
  const choice = choices[0];
  const message = choice?.message ?? { role: 'assistant' };
  const content: AnthropicContentBlock[] = [];
  const reasoning = message.reasoning_content ?? (message as { reasoning?: string }).reasoning;
  // Reasoning from OpenAI-compatible servers is unsigned; an empty signature says so.
  if (typeof reasoning === 'string' && reasoning !== '') content.push({ type: 'thinking', thinking: reasoning, signature: '' });
  if (typeof message.content === 'string' && message.content !== '') content.push({ type: 'text', text: message.content });
  else if (Array.isArray(message.content)) {
    for (const part of message.content) if (part.type === 'text' && part.text) content.push({ type: 'text', text: part.text });
  }
  if (typeof message.refusal === 'string' && message.refusal !== '') content.push({ type: 'text', text: message.refusal });
  (message.tool_calls ?? []).forEach((call, index) => {
    const input = parseToolArguments(call.function?.arguments, `choices.0.message.tool_calls.${index}`, warnings);
    content.push({ type: 'tool_use', id: call.id, name: call.function?.name ?? '', input });
  });
  if (message.function_call) {
    const input = parseToolArguments(message.function_call.arguments, 'choices.0.message.function_call', warnings);
    content.push({ type: 'tool_use', id: `toolu_${response.id ?? 'legacy'}`, name: message.function_call.name, input });
  }
  let stopReason: string = toAnthropicStopReason(choice?.finish_reason);
  // Some compatible servers say "stop" after tool calls; Anthropic clients run tools only on tool_use.
  if (stopReason === 'end_turn' && content.some((block) => block.type === 'tool_use')) stopReason = 'tool_use';
  return {
    value: {
      id: toAnthropicMessageId(response.id),
      type: 'message',
      role: 'assistant',
      model: options.model,
      content,
      stop_reason: stopReason,
      stop_sequence: null,
      usage: toAnthropicUsage(response.usage),
    },
    warnings,
  };
}

// ---- stream: OpenAI chunks → Anthropic events ------------------------------------------------

const anthropicEvent = (type: string, payload: object) => `event: ${type}\ndata: ${JSON.stringify({ type, ...payload })}\n\n`;

type OpenBlock = { kind: 'text' | 'thinking' | 'tool_use'; index: number };

/**
 * Turns one OpenAI chunk stream into Anthropic event text. Blocks are sequential in Anthropic, so a
 * new block closes the open one. Argument fragments of a tool call whose block is already closed
 * (interleaved parallel calls, which OpenAI does not send) cannot be placed and are dropped.
 * After an upstream error chunk the stream is over and `finish()` writes nothing.
 */
export class OpenAIToAnthropicStream {
  private messageId = 'msg_gateway';
  private started = false;
  private ended = false;
  private open: OpenBlock | null = null;
  private nextIndex = 0;
  private readonly toolBlocks = new Map<number, number>();
  private lastToolKey = 0;
  private finishReason: string | null = null;
  private reportedUsage = false;
  private readonly counts: { input_tokens: number; output_tokens: number; cache_read_input_tokens: number };
  /** delivered completion text (up to a bound), counted at the end when the upstream reports no usage */
  private readonly delivered: string[] = [];
  private keptChars = 0;
  private deliveredChars = 0;

  constructor(private readonly options: { model: string; inputTokensEstimate: number }) {
    this.counts = { input_tokens: options.inputTokensEstimate, output_tokens: 0, cache_read_input_tokens: 0 };
  }

  get usage(): { input_tokens: number; output_tokens: number; cache_read_input_tokens: number } {
    return { ...this.counts };
  }

  /** False while `usage.input_tokens` is still the estimate (the upstream sent no usage chunk). */
  get usageReported(): boolean {
    return this.reportedUsage;
  }

  get stopReason(): string | null {
    if (this.finishReason === null) return null;
    const reason: string = toAnthropicStopReason(this.finishReason);
    return reason === 'end_turn' && this.toolBlocks.size > 0 ? 'tool_use' : reason;
  }

  push(event: { event?: string; data: string }): string {
    if (this.ended || event.data.trim() === '[DONE]') return '';
    let chunk: Partial<OpenAIChatChunk> & { error?: { message?: string; type?: string } };
    chunk = parseBoundedJson(event.data) as typeof chunk;
    if (typeof chunk !== 'object' || chunk === null) return '';
    if (chunk.error) {
      this.ended = true;
      return anthropicEvent('error', { error: { type: 'api_error', message: String(chunk.error.message ?? 'upstream error') } });
    }
    // Keep-alive and prompt-annotation chunks (no choices, no usage) must not open the message with a blank id.
    if (!this.started && !chunk.usage && !chunk.choices?.length) return '';
    let out = this.begin(chunk.id);
    if (chunk.usage) {
      const usage = toAnthropicUsage(chunk.usage);
      this.counts.input_tokens = usage.input_tokens;
      this.counts.output_tokens = usage.output_tokens;
      this.counts.cache_read_input_tokens = usage.cache_read_input_tokens;
      this.reportedUsage = true;
    }
    const choice = chunk.choices?.find((candidate) => candidate.index === 0) ?? chunk.choices?.[0];
    if (!choice) return out;
    const delta = choice.delta ?? {};
    const reasoning = delta.reasoning_content ?? delta.reasoning;
    if (reasoning) {
      out += this.ensureBlock('thinking', { type: 'thinking', thinking: '', signature: '' });
      out += this.delta({ type: 'thinking_delta', thinking: reasoning });
    }
    const text = delta.content || delta.refusal;
    if (text) {
      out += this.ensureBlock('text', { type: 'text', text: '' });
      out += this.delta({ type: 'text_delta', text });
    }
    for (const call of delta.tool_calls ?? []) {
      const key = call.index ?? (call.id ? this.toolBlocks.size : this.lastToolKey);
      if (!this.toolBlocks.has(key)) {
        out += this.openBlock('tool_use', {
          type: 'tool_use', id: call.id ?? `toolu_${this.messageId.slice(4)}_${key}`, name: call.function?.name ?? '', input: {},
        });
        this.toolBlocks.set(key, this.open!.index);
      }
      this.lastToolKey = key;
      const fragment = call.function?.arguments;
      if (fragment && this.open?.index === this.toolBlocks.get(key)) out += this.delta({ type: 'input_json_delta', partial_json: fragment });
    }
    if (choice.finish_reason) this.finishReason = choice.finish_reason;
    return out;
  }

  finish(): string {
    if (this.ended) return '';
    let out = this.begin(undefined) + this.closeBlock();
    this.ended = true;
    // The real input count replaces the local one sent in message_start (read by SDKs from
    // message_delta). Without the upstream's usage the client is shown the local counts it is billed.
    const usage = this.reportedUsage ? { ...this.counts } : { input_tokens: this.counts.input_tokens, output_tokens: this.deliveredTokens() };
    out += anthropicEvent('message_delta', { delta: { stop_reason: this.stopReason ?? 'end_turn', stop_sequence: null }, usage });
    return out + anthropicEvent('message_stop', {});
  }

  private begin(openAIId: string | undefined): string {
    if (this.started) return '';
    this.started = true;
    this.messageId = toAnthropicMessageId(openAIId);
    return anthropicEvent('message_start', {
      message: {
        id: this.messageId, type: 'message', role: 'assistant', model: this.options.model, content: [],
        stop_reason: null, stop_sequence: null, usage: { input_tokens: this.options.inputTokensEstimate, output_tokens: 0 },
      },
    });
  }

  private ensureBlock(kind: OpenBlock['kind'], contentBlock: object): string {
    return this.open?.kind === kind ? '' : this.openBlock(kind, contentBlock);
  }

  private openBlock(kind: OpenBlock['kind'], contentBlock: object): string {
    const out = this.closeBlock();
    this.open = { kind, index: this.nextIndex++ };
    return out + anthropicEvent('content_block_start', { index: this.open.index, content_block: contentBlock });
  }

  private closeBlock(): string {
    if (!this.open) return '';
    const out = anthropicEvent('content_block_stop', { index: this.open.index });
    this.open = null;
    return out;
  }

  private delta(delta: { type: string; text?: string; thinking?: string; partial_json?: string }): string {
    const piece = delta.text ?? delta.thinking ?? delta.partial_json ?? '';
    this.deliveredChars += piece.length;
    if (this.keptChars < MAX_COUNTED_CHARS) {
      this.delivered.push(piece);
      this.keptChars += piece.length;
    }
    return anthropicEvent('content_block_delta', { index: this.open!.index, delta });
  }

  /** Tokens of the completion delivered, counted on the kept text and scaled past it. */
  private deliveredTokens(): number {
    const tokens = countTokens(this.delivered.join(''));
    return this.deliveredChars > this.keptChars ? Math.ceil((tokens * this.deliveredChars) / this.keptChars) : tokens;
  }
}
