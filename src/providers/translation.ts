// Whole-body translations between the two chat dialects, as text in → text out, run inline for
// small bodies and in the piscina pool (workers/translate.ts runs these same functions) above the
// offload threshold, so a multi-megabyte request (images as base64) never stalls the event loop.
// The result is the JSON text to send: serialising it off-thread is most of the saving.
import type { AnthropicMessage, AnthropicRequest } from '../formats/anthropic-messages';
import { toAnthropicMessage, toOpenAIChatRequest } from '../formats/anthropic-to-openai';
import { toAnthropicRequest, toOpenAIChatCompletion, type OpenAIChatCompletion, type OpenAIChatRequest } from '../formats/openai-to-anthropic';
import { upstreamError } from '../errors';
import { localPromptTokens } from '../billing/message-tokens';
import { cancelOn } from '../pool';
import type { CallSignal, ProviderContext } from './types';
import { parseBoundedJson } from '../formats/json-value';
import { forLog } from '../formats/redact';

export const DEFAULT_OFFLOAD_THRESHOLD_BYTES = 64 * 1024;

export interface TranslatedText {
  text: string;
  warnings: string[];
  /** the request's local prompt count (billing's fallback), when asked for with `countPrompt` */
  promptTokens?: number;
}

export interface RequestInput<Body> {
  body: Body; model: string; defaultMaxTokens: number;
  /** also count the request's prompt locally (a stream shows it in message_start), off the event loop for large bodies too */
  countPrompt?: boolean;
  /** the model is flagged `reasoning` (it takes reasoning_effort / thinking) */
  reasoning?: boolean;
}
export interface AnswerInput { text: string; model: string; channel: string }

function parseAnswer<T>(input: AnswerInput): T {
  let parsed: unknown;
  parsed = parseBoundedJson(input.text);
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw upstreamError(502, `upstream channel ${input.channel} answered with malformed JSON`, 'upstream_malformed');
  }
  return parsed as T;
}

const serialise = (converted: { value: unknown; warnings: string[] }): TranslatedText =>
  ({ text: JSON.stringify(converted.value), warnings: converted.warnings });

/** The translations by name; workers/translate.ts exports each under the same name. */
export const TRANSLATIONS = {
  /** POST /v1/messages body → OpenAI chat request */
  anthropicToOpenAIRequest: (input: RequestInput<AnthropicRequest>): TranslatedText => ({
    ...serialise(toOpenAIChatRequest(input.body, { model: input.model, reasoning: input.reasoning })),
    ...(input.countPrompt ? { promptTokens: localPromptTokens(input.body as unknown as Record<string, unknown>) } : {}),
  }),
  /** POST /v1/chat/completions body → Anthropic messages request */
  openAIToAnthropicRequest: (input: RequestInput<OpenAIChatRequest>): TranslatedText =>
    serialise(toAnthropicRequest(input.body, { model: input.model, defaultMaxTokens: input.defaultMaxTokens, reasoning: input.reasoning })),
  /** OpenAI chat.completion → Anthropic Message */
  openAIToAnthropicAnswer: (input: AnswerInput): TranslatedText =>
    serialise(toAnthropicMessage(parseAnswer<OpenAIChatCompletion>(input), { model: input.model })),
  /** Anthropic Message → OpenAI chat.completion */
  anthropicToOpenAIAnswer: (input: AnswerInput): TranslatedText =>
    serialise(toOpenAIChatCompletion(parseAnswer<AnthropicMessage>(input), { model: input.model })),
};

export type TranslationName = keyof typeof TRANSLATIONS;
type InputOf<N extends TranslationName> = Parameters<(typeof TRANSLATIONS)[N]>[0];

/**
 * Whether the strings and keys of a parsed JSON value add up to more than `limit` characters:
 * a walk that stops as soon as the limit is passed, far cheaper than serialising to measure.
 */
export function exceedsSize(value: unknown, limit: number): boolean {
  let total = 0;
  const pending: unknown[] = [value];
  while (pending.length > 0) {
    const item = pending.pop();
    if (typeof item === 'string') total += item.length;
    else if (Array.isArray(item)) { total += item.length; for (const element of item) pending.push(element); }
    else if (typeof item === 'object' && item !== null) {
      for (const [key, inner] of Object.entries(item)) { total += key.length; pending.push(inner); }
    } else total += 4;
    if (total > limit) return true;
  }
  return false;
}

/** Runs a translation in the pool when the body is `large` (and a pool exists; cancelled with the call), else inline. */
export async function translate<N extends TranslationName>(context: ProviderContext, name: N, input: InputOf<N>, large: boolean,
  signal?: CallSignal): Promise<TranslatedText> {
  if (large && context.pool) return context.pool.run<TranslatedText>('translate', name, input, { cancel: signal && cancelOn(signal) });
  return (TRANSLATIONS[name] as (value: InputOf<N>) => TranslatedText)(input);
}

export function offloadThreshold(context: ProviderContext): number {
  return context.offloadThresholdBytes ?? DEFAULT_OFFLOAD_THRESHOLD_BYTES;
}

/** Fields a translation could not carry are logged, never dropped silently (names only, no content). */
const MAX_LOGGED_WARNINGS = 20;

export function logWarnings(context: ProviderContext, channel: string, direction: string, warnings: string[]): void {
  if (warnings.length === 0) return;
  // warnings quote the client's own field names and part types: bounded and redacted before logging
  const shown = warnings.slice(0, MAX_LOGGED_WARNINGS).map((warning) => forLog(warning));
  if (warnings.length > MAX_LOGGED_WARNINGS) shown.push(`… and ${warnings.length - MAX_LOGGED_WARNINGS} more`);
  context.log?.warn({ channel, direction, warnings: shown }, 'translation dropped fields that have no counterpart');
}
