// OpenAI legacy text completions (POST /v1/completions): request validation, usage of an answer,
// and the stream as the client sees it (model name, usage chunk, [DONE]). Pure: no I/O.
import { randomBytes } from 'node:crypto';
import { countTokens } from '../billing/tokens';
import { badRequest } from '../errors';
import { isObject, type JsonObject } from './json-value';
import { DeliveredText } from './delivered-text';
import { normalizeUsage, type Usage } from './openai-usage';
import type { SseEvent } from './sse';

const MAX_CHOICES = 128;
const MAX_STOP_SEQUENCES = 4;
const MAX_PROMPTS = 2048;
const MAX_LOGPROBS = 5;

export interface CompletionsRequestInfo {
  model: string;
  stream: boolean;
  /** completions generated per prompt: max(n, best_of) (best_of ones are generated and billed too) */
  generatedPerPrompt: number;
  promptCount: number;
  maxTokens: number | undefined;
  /** UTF-8 bytes of the text prompts (and suffix) */
  promptBytes: number;
  /** tokens given as token ids */
  promptTokenIds: number;
  includeUsageRequested: boolean;
}

function checkRange(body: JsonObject, name: string, min: number, max: number): void {
  const value = body[name];
  if (value != null && (typeof value !== 'number' || !(value >= min && value <= max))) throw badRequest(`${name} must be a number between ${min} and ${max}`, name);
}

function checkCount(body: JsonObject, name: string, max: number): number | undefined {
  const value = body[name];
  if (value == null) return undefined;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1 || value > max) throw badRequest(`${name} must be an integer from 1 to ${max}`, name);
  return value;
}

const isTokenIds = (value: unknown[]): boolean => value.length > 0 && value.every((item) => typeof item === 'number' && Number.isInteger(item) && item >= 0);

/** The prompts of a request: strings and token-id arrays (the four forms of the API). */
export function completionPrompts(prompt: unknown): Array<string | number[]> {
  if (typeof prompt === 'string') return [prompt];
  if (!Array.isArray(prompt)) return [];
  if (prompt.length > 0 && prompt.every((item) => typeof item === 'number')) return [prompt as number[]];
  return prompt as Array<string | number[]>;
}

/** Throws a 400 naming the first offending field; unknown fields are not looked at. */
export function validateCompletionsRequest(body: JsonObject): CompletionsRequestInfo {
  const model = body.model;
  if (typeof model !== 'string' || model.length === 0) throw badRequest('model must be a non-empty string', 'model');
  const prompt = body.prompt;
  let promptBytes = 0;
  let promptTokenIds = 0;
  let promptCount = 0;
  if (typeof prompt === 'string') {
    promptBytes = Buffer.byteLength(prompt);
    promptCount = 1;
  } else if (Array.isArray(prompt) && prompt.length > 0) {
    if (prompt.length > MAX_PROMPTS) throw badRequest(`prompt holds ${prompt.length} items; at most ${MAX_PROMPTS} are allowed per request`, 'prompt');
    if (prompt.every((item) => typeof item === 'number')) {
      if (!isTokenIds(prompt)) throw badRequest('prompt as token ids must hold non-negative integers', 'prompt');
      promptTokenIds = prompt.length;
      promptCount = 1;
    } else {
      for (let index = 0; index < prompt.length; index += 1) {
        const item: unknown = prompt[index];
        if (typeof item === 'string') promptBytes += Buffer.byteLength(item);
        else if (Array.isArray(item) && isTokenIds(item)) promptTokenIds += item.length;
        else throw badRequest(`prompt[${index}] must be a string or a non-empty array of token ids`, 'prompt');
      }
      promptCount = prompt.length;
    }
  } else {
    throw badRequest('prompt must be a string, an array of strings, an array of token ids or an array of token-id arrays', 'prompt');
  }
  if (body.suffix != null) {
    if (typeof body.suffix !== 'string') throw badRequest('suffix must be a string', 'suffix');
    promptBytes += Buffer.byteLength(body.suffix);
  }
  checkRange(body, 'temperature', 0, 2);
  checkRange(body, 'top_p', 0, 1);
  checkRange(body, 'frequency_penalty', -2, 2);
  checkRange(body, 'presence_penalty', -2, 2);
  const maxTokens = body.max_tokens;
  if (maxTokens != null && (typeof maxTokens !== 'number' || !Number.isSafeInteger(maxTokens) || maxTokens < 1)) {
    throw badRequest('max_tokens must be a positive integer', 'max_tokens');
  }
  const n = checkCount(body, 'n', MAX_CHOICES) ?? 1;
  const bestOf = checkCount(body, 'best_of', MAX_CHOICES);
  if (bestOf !== undefined && bestOf < n) throw badRequest('best_of must be at least n', 'best_of');
  if (body.logprobs != null && (typeof body.logprobs !== 'number' || !Number.isInteger(body.logprobs) || body.logprobs < 0 || body.logprobs > MAX_LOGPROBS)) {
    throw badRequest(`logprobs must be an integer from 0 to ${MAX_LOGPROBS}`, 'logprobs');
  }
  if (body.echo != null && typeof body.echo !== 'boolean') throw badRequest('echo must be a boolean', 'echo');
  const stop = body.stop;
  if (stop != null && typeof stop !== 'string'
    && !(Array.isArray(stop) && stop.length <= MAX_STOP_SEQUENCES && stop.every((item) => typeof item === 'string'))) {
    throw badRequest(`stop must be a string or an array of at most ${MAX_STOP_SEQUENCES} strings`, 'stop');
  }
  if (body.stream != null && typeof body.stream !== 'boolean') throw badRequest('stream must be a boolean', 'stream');
  let includeUsageRequested = false;
  if (body.stream_options != null) {
    if (!isObject(body.stream_options)) throw badRequest('stream_options must be an object', 'stream_options');
    const includeUsage = body.stream_options.include_usage;
    if (includeUsage != null && typeof includeUsage !== 'boolean') throw badRequest('stream_options.include_usage must be a boolean', 'stream_options.include_usage');
    includeUsageRequested = includeUsage === true;
  }
  if (body.user != null && typeof body.user !== 'string') throw badRequest('user must be a string', 'user');
  return {
    model, stream: body.stream === true, generatedPerPrompt: Math.max(n, bestOf ?? 1), promptCount,
    maxTokens: (maxTokens as number | null | undefined) ?? undefined, promptBytes, promptTokenIds, includeUsageRequested,
  };
}

/** Tokenizer count of a request's prompts and suffix. */
export function countPromptTokens(body: JsonObject): number {
  let total = typeof body.suffix === 'string' ? countTokens(body.suffix) : 0;
  for (const prompt of completionPrompts(body.prompt)) total += typeof prompt === 'string' ? countTokens(prompt) : prompt.length;
  return total;
}

/** Usage of an answer or chunk in OpenAI's shape, undefined when it reports no tokens. */
export function completionsUsage(value: unknown): Usage | undefined {
  const usage = normalizeUsage(value);
  return usage === undefined || usage.prompt_tokens + usage.completion_tokens === 0 ? undefined : usage;
}

export function completionText(answer: JsonObject): string {
  const choices = Array.isArray(answer.choices) ? answer.choices : [];
  return choices.map((choice) => (isObject(choice) && typeof choice.text === 'string' ? choice.text : '')).join('');
}

/**
 * A text_completion stream as the client sees it: each event as the upstream sent it (the model
 * name put back to the one the client asked for), the usage chunk only when the client asked for
 * it (estimated when the upstream sent none), then [DONE]. The gateway always asks the upstream
 * for usage; [DONE] is held back until the end so the usage chunk can precede it.
 */
export class CompletionsStream {
  private sawDone = false;
  private upstreamUsage: Usage | undefined;
  private readonly delivered = new DeliveredText();
  private id = '';
  private created = 0;
  private readonly finished = new Set<number>();

  constructor(private readonly options: { model: string; rewriteModel: boolean; includeUsage: boolean; promptTokens: () => number }) {}

  get complete(): boolean { return this.sawDone || this.finished.size > 0; }
  get deliveredChars(): number { return this.delivered.chars; }
  deliveredTokens(): number { return this.delivered.tokens(); }

  push(event: SseEvent): string {
    if (event.data.trim() === '[DONE]') { this.sawDone = true; return ''; }
    let chunk: unknown;
    try { chunk = JSON.parse(event.data); } catch { return `data: ${event.data}\n\n`; }
    if (!isObject(chunk)) return `data: ${event.data}\n\n`;
    this.id ||= typeof chunk.id === 'string' ? chunk.id : '';
    this.created ||= typeof chunk.created === 'number' ? chunk.created : 0;
    const usage = completionsUsage(chunk.usage);
    if (usage !== undefined) this.upstreamUsage = usage;
    const choices = Array.isArray(chunk.choices) ? chunk.choices : [];
    for (const choice of choices) {
      if (!isObject(choice)) continue;
      if (typeof choice.text === 'string') this.delivered.add(choice.text);
      if (choice.finish_reason != null && typeof choice.index === 'number') this.finished.add(choice.index);
    }
    if (choices.length === 0 && usage !== undefined) return '';   // sent by finish(), when asked for
    if (chunk.usage !== undefined && !this.options.includeUsage) delete chunk.usage;
    else if (!this.options.rewriteModel) return `data: ${event.data}\n\n`;
    chunk.model = this.options.model;
    return `data: ${JSON.stringify(chunk)}\n\n`;
  }

  finish(): string {
    if (!this.complete) return '';
    let out = '';
    if (this.options.includeUsage) {
      const usageChunk = {
        id: this.id || `cmpl-${randomBytes(12).toString('hex')}`, object: 'text_completion', created: this.created || Math.floor(Date.now() / 1000),
        model: this.options.model, choices: [], usage: this.usage().usage,
      };
      out += `data: ${JSON.stringify(usageChunk)}\n\n`;
    }
    return `${out}data: [DONE]\n\n`;
  }

  usage(): { usage: Usage; source: 'upstream' | 'estimated' } {
    if (this.upstreamUsage !== undefined) return { usage: this.upstreamUsage, source: 'upstream' };
    const completion = this.delivered.tokens();
    const prompt = this.options.promptTokens();
    return { usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion }, source: 'estimated' };
  }
}
