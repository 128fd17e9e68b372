// Token counts for billing when an upstream reports none, and cheap estimates for reservations.
// The tokenizer (o200k_base, counted by BpeCounter from gpt-tokenizer's copy of its ranks) is loaded
// once per thread that counts: a worker process loads it before it takes connections (warmTokenizer;
// with low_memory at its first count), a pool thread at its first count.
//
// Byte-pair merging costs more than the length of a piece, and one "piece" of the pre-split can be a
// whole run of letters or CJK without spaces, as long as the text. So the text is cut into pieces
// of at most MAX_PIECE_CHARS before it reaches the tokenizer (at a space when one is near, which is
// where the tokenizer's own pre-split would cut too): the cost becomes linear in the text. And the
// text counted exactly in one count is bounded too (CountBudget); the rest is estimated at the rate
// the counted part showed, so no count holds a thread for long, whatever the client or upstream sent.
import { readFileSync } from 'node:fs';
import { BpeCounter, parseTiktokenRanks } from './bpe-counter';

/** Tokens one image part costs in the fallback count (the low-detail price of OpenAI vision). */
export const IMAGE_PART_TOKENS = 85;
/** Per-message framing of the chat template (`<|start|>role…<|end|>`), as OpenAI documents it. */
const TOKENS_PER_MESSAGE = 3;
const TOKENS_PER_NAME = 1;
/** Every reply is primed with `<|start|>assistant<|message|>`. */
const REPLY_PRIMING_TOKENS = 3;

/** Longest text handed to the tokenizer in one go; a cut costs at most about one token. */
export const MAX_PIECE_CHARS = 128;
/** Characters one count on a request thread counts exactly; the rest is estimated at the counted rate. */
export const INLINE_EXACT_CHARS = 8 * 1024;
/** The same in the task pool, off the request threads (count_tokens of big prompts). */
export const POOL_EXACT_CHARS = 128 * 1024;

let counter: BpeCounter | undefined;

/** This thread's o200k_base counter: its ranks from gpt-tokenizer's copy of the tiktoken file, its split pattern from the library's own. */
export function o200kCounter(): BpeCounter {
  if (counter === undefined) {
    const { O200K_TOKEN_SPLIT_REGEX } = require('gpt-tokenizer/cjs/encodingParams/constants') as { O200K_TOKEN_SPLIT_REGEX: RegExp };
    const ranks = parseTiktokenRanks(readFileSync(require.resolve('gpt-tokenizer/data/o200k_base.tiktoken')));
    counter = new BpeCounter(ranks, new RegExp(O200K_TOKEN_SPLIT_REGEX.source, O200K_TOKEN_SPLIT_REGEX.flags));
  }
  return counter;
}

/**
 * Loads the tokenizer in this thread now: its first use builds the o200k_base tables, which holds
 * the thread for a while (bench/README.md, "Tokenizer load"), every call of a worker waiting
 * meanwhile. A worker process calls this before it takes connections.
 */
export function warmTokenizer(): void {
  countExactly('tokenizer warm-up');
}

/** How much one count may still count exactly, and the rate it saw, for estimating the rest. */
export interface CountBudget { exactChars: number; countedChars: number; countedTokens: number }

export function countBudget(exactChars = INLINE_EXACT_CHARS): CountBudget {
  return { exactChars, countedChars: 0, countedTokens: 0 };
}

/** Where to end a piece that starts at `start`: before a space in its second half, else at the bound (never inside a surrogate pair). */
function pieceEnd(text: string, start: number): number {
  const bound = start + MAX_PIECE_CHARS;
  if (bound >= text.length) return text.length;
  for (let index = bound; index > start + MAX_PIECE_CHARS / 2; index -= 1) {
    const code = text.charCodeAt(index);
    if (code === 0x20 || code === 0x0a || code === 0x09) return index;
  }
  const code = text.charCodeAt(bound - 1);
  return code >= 0xd800 && code <= 0xdbff ? bound - 1 : bound;
}

function countExactly(text: string): number {
  const encoder = o200kCounter();
  let total = 0;
  for (let start = 0; start < text.length;) {
    const end = pieceEnd(text, start);
    total += encoder.count(text.slice(start, end));
    start = end;
  }
  return total;
}

/**
 * Tokens of `text`: counted exactly while `budget` lasts, the rest estimated at the rate of what was
 * counted (UTF-8 bytes / 4 when nothing was). Pass one budget to every count of one request.
 */
export function countTokens(text: string, budget: CountBudget = countBudget()): number {
  if (text.length === 0) return 0;
  let exact = text;
  let rest = '';
  if (text.length > budget.exactChars) {
    let cut = budget.exactChars;
    const code = text.charCodeAt(cut - 1);
    if (cut > 0 && code >= 0xd800 && code <= 0xdbff) cut -= 1;
    exact = text.slice(0, cut);
    rest = text.slice(cut);
  }
  let tokens = 0;
  if (exact.length > 0) {
    tokens = countExactly(exact);
    budget.exactChars -= exact.length;
    budget.countedChars += exact.length;
    budget.countedTokens += tokens;
  }
  if (rest.length > 0) {
    tokens += budget.countedChars > 0
      ? Math.ceil((rest.length * budget.countedTokens) / budget.countedChars)
      : Math.ceil(Buffer.byteLength(rest) / 4);
  }
  return tokens;
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
export function countChatPromptTokens(messages: unknown[], budget: CountBudget = countBudget()): number {
  let total = REPLY_PRIMING_TOKENS;
  for (const message of messages) {
    if (typeof message !== 'object' || message === null) continue;
    const record = message as Record<string, unknown>;
    total += TOKENS_PER_MESSAGE;
    if (typeof record.role === 'string') total += countTokens(record.role, budget);
    if (typeof record.name === 'string') total += TOKENS_PER_NAME + countTokens(record.name, budget);
    total += countContentTokens(record.content, budget);
    if (Array.isArray(record.tool_calls)) {
      for (const call of record.tool_calls) total += countFunctionTokens((call as { function?: unknown } | null)?.function, budget);
    }
    if (record.function_call !== undefined) total += countFunctionTokens(record.function_call, budget);
  }
  return total;
}

function countContentTokens(content: unknown, budget: CountBudget): number {
  if (typeof content === 'string') return countTokens(content, budget);
  if (!Array.isArray(content)) return 0;
  let total = 0;
  for (const part of content) {
    if (typeof part !== 'object' || part === null) continue;
    const typed = part as { type?: unknown; text?: unknown };
    if (typed.type === 'text' && typeof typed.text === 'string') total += countTokens(typed.text, budget);
    else if (typed.type === 'image_url') total += IMAGE_PART_TOKENS;
  }
  return total;
}

function countFunctionTokens(value: unknown, budget: CountBudget): number {
  if (typeof value !== 'object' || value === null) return 0;
  const call = value as { name?: unknown; arguments?: unknown };
  let total = 0;
  if (typeof call.name === 'string') total += countTokens(call.name, budget);
  if (typeof call.arguments === 'string') total += countTokens(call.arguments, budget);
  return total;
}
