// Token counts for billing when an upstream reports none, and cheap estimates for reservations.
// The tokenizer (o200k_base: a 2.3 MB ranks module, ~18 ms to load) is loaded and built on first use
// only: most requests are billed from the upstream's own usage and never need it.
import { Tiktoken, type TiktokenBPE } from 'js-tiktoken/lite';

/** Tokens one image part costs in the fallback count (the low-detail price of OpenAI vision). */
export const IMAGE_PART_TOKENS = 85;
/** Per-message framing of the chat template (`<|start|>role…<|end|>`), as OpenAI documents it. */
const TOKENS_PER_MESSAGE = 3;
const TOKENS_PER_NAME = 1;
/** Every reply is primed with `<|start|>assistant<|message|>`. */
const REPLY_PRIMING_TOKENS = 3;

let encoder: Tiktoken | undefined;

function getEncoder(): Tiktoken {
  encoder ??= new Tiktoken(require('js-tiktoken/ranks/o200k_base') as TiktokenBPE);
  return encoder;
}

export function countTokens(text: string): number {
  if (text.length === 0) return 0;
  // Empty allow/deny lists: text that looks like a special token is counted as plain text, not refused.
  return getEncoder().encode(text, [], []).length;
}

/**
 * Estimate without the tokenizer, for reserving quota on the hot path. `promptBytes` is the size of
 * everything the upstream reads as prompt: the request's bytes (messages, system, tools, tool results,
 * every part) without media payloads. A byte-level BPE token is at least one byte; English runs near
 * 4 bytes a token, CJK near 3 (one token a character), so bytes / 3 leans high for both. Dense or
 * random text can still cost more: the settlement extends the reservation or bounds the charge.
 */
export function estimatePromptTokens(promptBytes: number, messageCount: number, imageCount = 0): number {
  return Math.ceil(promptBytes / 3) + (TOKENS_PER_MESSAGE + 1) * messageCount + IMAGE_PART_TOKENS * imageCount + REPLY_PRIMING_TOKENS;
}

/** Tokenizer-based count of a chat prompt, used when the upstream reports no usage. */
export function countChatPromptTokens(messages: unknown[]): number {
  let total = REPLY_PRIMING_TOKENS;
  for (const message of messages) {
    if (typeof message !== 'object' || message === null) continue;
    const record = message as Record<string, unknown>;
    total += TOKENS_PER_MESSAGE;
    if (typeof record.role === 'string') total += countTokens(record.role);
    if (typeof record.name === 'string') total += TOKENS_PER_NAME + countTokens(record.name);
    total += countContentTokens(record.content);
    if (Array.isArray(record.tool_calls)) {
      for (const call of record.tool_calls) total += countFunctionTokens((call as { function?: unknown } | null)?.function);
    }
    if (record.function_call !== undefined) total += countFunctionTokens(record.function_call);
  }
  return total;
}

function countContentTokens(content: unknown): number {
  if (typeof content === 'string') return countTokens(content);
  if (!Array.isArray(content)) return 0;
  let total = 0;
  for (const part of content) {
    if (typeof part !== 'object' || part === null) continue;
    const typed = part as { type?: unknown; text?: unknown };
    if (typed.type === 'text' && typeof typed.text === 'string') total += countTokens(typed.text);
    else if (typed.type === 'image_url') total += IMAGE_PART_TOKENS;
  }
  return total;
}

function countFunctionTokens(value: unknown): number {
  if (typeof value !== 'object' || value === null) return 0;
  const call = value as { name?: unknown; arguments?: unknown };
  let total = 0;
  if (typeof call.name === 'string') total += countTokens(call.name);
  if (typeof call.arguments === 'string') total += countTokens(call.arguments);
  return total;
}
