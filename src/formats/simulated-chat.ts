// Deterministic answers in the real OpenAI wire format, for the in-process `simulator` channel.
// The same request always gets the same content, split into word pieces (one piece = one
// completion token), so tests and benchmarks can predict text, finish_reason and usage exactly.
// A last user message ending in a ratio marker (【2:3】, 【3:2】, 【1:1】) gets an image link instead,
// the way image-producing chat models answer.
import { createHash, randomBytes } from 'node:crypto';

export type RatioMarker = '2:3' | '3:2' | '1:1';

export interface SimulatedChatRequest {
  model: string;
  messages: unknown[];
  n?: number;
  max_tokens?: number;
  tools?: unknown[];
}

export interface SimulationInfo {
  promptTokens: number;
  /** fixed id / created for reproducible output; random / now by default */
  id?: string;
  created?: number;
}

export interface SimulatedUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

export interface SimulatedToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

export interface SimulatedCompletion {
  id: string;
  object: 'chat.completion';
  created: number;
  model: string;
  choices: Array<{
    index: number;
    message: { role: 'assistant'; content: string | null; tool_calls?: SimulatedToolCall[] };
    logprobs: null;
    finish_reason: string;
  }>;
  usage: SimulatedUsage;
}

export const SIMULATED_SENTENCE = 'This is a deterministic answer from the Tollgate simulator.';
const EXCERPT_CHARS = 40;
const ARGUMENT_PIECE_CHARS = 8;
const RATIO_MARKERS: Record<string, RatioMarker> = { '【2:3】': '2:3', '【3:2】': '3:2', '【1:1】': '1:1' };

type JsonObject = Record<string, unknown>;

export function extractRatioMarker(text: string): RatioMarker | undefined {
  const trimmed = text.trimEnd();
  // every marker is 5 UTF-16 units: 【 d : d 】
  return trimmed.endsWith('】') ? RATIO_MARKERS[trimmed.slice(-5)] : undefined;
}

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  const texts: string[] = [];
  for (const part of content) {
    const typed = part as { type?: unknown; text?: unknown } | null;
    if (typed?.type === 'text' && typeof typed.text === 'string') texts.push(typed.text);
  }
  return texts.join('\n');
}

function lastMessage(messages: unknown[], role?: string): JsonObject | undefined {
  for (let index = messages.length - 1; index >= 0; index -= 1) {
    const message = messages[index] as JsonObject | null;
    if (typeof message === 'object' && message !== null && (role === undefined || message.role === role)) return message;
  }
  return undefined;
}

function shortHash(text: string): string {
  return createHash('sha256').update(text).digest('hex').slice(0, 16);
}

function firstFunctionName(tools: unknown[] | undefined): string | undefined {
  for (const tool of tools ?? []) {
    const typed = tool as { type?: unknown; function?: { name?: unknown } } | null;
    if (typed?.type === 'function' && typeof typed.function?.name === 'string') return typed.function.name;
  }
  return undefined;
}

interface Plan {
  /** word pieces (text) or argument pieces (tool call), already cut to max_tokens */
  pieces: string[];
  finishReason: 'stop' | 'length' | 'tool_calls';
  /** set when the answer is a tool call */
  toolCall?: { id: string; name: string };
}

/** What every choice of this request answers. */
function plan(request: SimulatedChatRequest): Plan {
  const userText = textOf(lastMessage(request.messages, 'user')?.content);
  const excerpt = Array.from(userText.replace(/\s+/g, ' ').trim()).slice(0, EXCERPT_CHARS).join('');
  const toolName = firstFunctionName(request.tools);
  let pieces: string[];
  let toolCall: Plan['toolCall'];
  const ratio = extractRatioMarker(userText);
  if (toolName !== undefined && lastMessage(request.messages)?.role === 'user') {
    // answer a fresh user turn with a call; after the tool's result the model answers in text
    toolCall = { id: `call_${shortHash(`${toolName}\n${userText}`)}`, name: toolName };
    const argumentsText = JSON.stringify({ input: excerpt });
    pieces = [];
    for (let start = 0; start < argumentsText.length; start += ARGUMENT_PIECE_CHARS) {
      pieces.push(argumentsText.slice(start, start + ARGUMENT_PIECE_CHARS));
    }
  } else if (ratio !== undefined) {
    pieces = [`![image](https://simulator.invalid/images/${shortHash(userText)}-${ratio.replace(':', 'x')}.png)`];
  } else {
    const text = `Simulated reply to: ${excerpt.length > 0 ? excerpt : '(no text)'} ${SIMULATED_SENTENCE}`;
    pieces = text.match(/\s*\S+/g) ?? [];
  }
  const limit = request.max_tokens;
  if (limit !== undefined && limit >= 0 && pieces.length > limit) {
    return { pieces: pieces.slice(0, limit), finishReason: 'length', toolCall };
  }
  return { pieces, finishReason: toolCall !== undefined ? 'tool_calls' : 'stop', toolCall };
}

function choiceCount(request: SimulatedChatRequest): number {
  return typeof request.n === 'number' && request.n >= 1 ? Math.floor(request.n) : 1;
}

function usageOf(planned: Plan, choices: number, promptTokens: number): SimulatedUsage {
  const completion = planned.pieces.length * choices;
  return { prompt_tokens: promptTokens, completion_tokens: completion, total_tokens: promptTokens + completion };
}

function identity(info: SimulationInfo): { id: string; created: number } {
  return {
    id: info.id ?? `chatcmpl-sim${randomBytes(10).toString('hex')}`,
    created: info.created ?? Math.floor(Date.now() / 1000),
  };
}

/** A complete `chat.completion` object with usage. */
export function simulateChatCompletion(request: SimulatedChatRequest, info: SimulationInfo): SimulatedCompletion {
  const planned = plan(request);
  const choices: SimulatedCompletion['choices'] = [];
  const joined = planned.pieces.join('');
  for (let index = 0; index < choiceCount(request); index += 1) {
    const message: SimulatedCompletion['choices'][number]['message'] = planned.toolCall !== undefined
      ? {
        role: 'assistant', content: null,
        tool_calls: [{ id: planned.toolCall.id, type: 'function', function: { name: planned.toolCall.name, arguments: joined } }],
      }
      : { role: 'assistant', content: joined };
    choices.push({ index, message, logprobs: null, finish_reason: planned.finishReason });
  }
  return {
    ...identity(info), object: 'chat.completion', model: request.model, choices,
    usage: usageOf(planned, choices.length, info.promptTokens),
  };
}

/**
 * The SSE events (`data: …\n\n` each) of the same answer streamed: a role chunk, one chunk per
 * piece, the empty-delta chunk with finish_reason, the usage chunk when asked, `data: [DONE]`.
 * The caller paces them (first-token delay, tokens per second).
 */
export function simulateChatStream(
  request: SimulatedChatRequest, info: SimulationInfo, options: { includeUsage: boolean },
): string[] {
  const planned = plan(request);
  const { id, created } = identity(info);
  const count = choiceCount(request);
  const events: string[] = [];
  const emit = (choices: JsonObject[], usage?: SimulatedUsage): void => {
    const chunk: JsonObject = { id, object: 'chat.completion.chunk', created, model: request.model, choices };
    if (usage !== undefined) chunk.usage = usage;
    events.push(`data: ${JSON.stringify(chunk)}\n\n`);
  };
  const delta = (index: number, value: JsonObject, finishReason: string | null = null): JsonObject[] => (
    [{ index, delta: value, logprobs: null, finish_reason: finishReason }]
  );

  const call = planned.toolCall;
  for (let index = 0; index < count; index += 1) {
    emit(delta(index, call !== undefined
      ? {
        role: 'assistant', content: null,
        tool_calls: [{ index: 0, id: call.id, type: 'function', function: { name: call.name, arguments: '' } }],
      }
      : { role: 'assistant', content: '' }));
  }
  for (const piece of planned.pieces) {
    for (let index = 0; index < count; index += 1) {
      emit(delta(index, call !== undefined
        ? { tool_calls: [{ index: 0, function: { arguments: piece } }] }
        : { content: piece }));
    }
  }
  for (let index = 0; index < count; index += 1) emit(delta(index, {}, planned.finishReason));
  if (options.includeUsage) emit([], usageOf(planned, count, info.promptTokens));
  events.push('data: [DONE]\n\n');
  return events;
}
