// Usage objects of OpenAI chat answers: normalized to the three counts the bill needs (with their
// details), read off a non-stream answer without parsing the completion, and read with one pattern
// when they come in the layout they are billed in (canonicalUsage).
import { isObject } from './json-value';

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  prompt_tokens_details?: unknown;
  completion_tokens_details?: unknown;
}

const COUNT = String.raw`(?:0|[1-9]\d{0,14})`;
const FLAT_DETAILS = String.raw`\{(?:"[a-z_]{1,64}":(?:${COUNT}|null)(?:,"[a-z_]{1,64}":(?:${COUNT}|null))*)?\}`;
/**
 * A usage object as normalizeUsage would write it back: the three counts in its order, then flat
 * details objects. Read with this one pattern instead of JSON.parse (see canonicalUsage), and its
 * text is re-emitted in the tail as it came instead of JSON.stringify of the object (the pattern
 * costs less than either way of the round trip). Anything else is parsed and written
 * from the object. (Duplicate keys in a details object would be re-emitted too; every JSON reader
 * resolves them as the billing did, the last one winning.)
 */
const CANONICAL_USAGE = new RegExp(String.raw`^\{"prompt_tokens":(${COUNT}),"completion_tokens":(${COUNT}),"total_tokens":(${COUNT})(?:,"prompt_tokens_details":(${FLAT_DETAILS}))?(?:,"completion_tokens_details":(${FLAT_DETAILS}))?\}$`);

/**
 * Details objects by their text, parsed once: the same few come back call after call
 * (`{"cached_tokens":0}`, …). Shared between calls, so frozen; bounded.
 */
const detailsByText = new Map<string, Readonly<Record<string, number | null>>>();
const MAX_CACHED_DETAILS = 256;

function detailsOf(text: string): Readonly<Record<string, number | null>> {
  let details = detailsByText.get(text);
  if (details === undefined) {
    details = Object.freeze(JSON.parse(text) as Record<string, number | null>);
    if (detailsByText.size >= MAX_CACHED_DETAILS) detailsByText.clear();
    detailsByText.set(text, details);
  }
  return details;
}

/**
 * Usage from the text of a usage object in the canonical layout (CANONICAL_USAGE), equal to
 * normalizeUsage(JSON.parse(text)); undefined for any other text (the caller parses it).
 */
export function canonicalUsage(text: string): Usage | undefined {
  const match = CANONICAL_USAGE.exec(text);
  if (match === null) return undefined;
  const usage: Usage = { prompt_tokens: Number(match[1]), completion_tokens: Number(match[2]), total_tokens: Number(match[3]) };
  if (match[4] !== undefined) usage.prompt_tokens_details = detailsOf(match[4]);
  if (match[5] !== undefined) usage.completion_tokens_details = detailsOf(match[5]);
  return usage;
}

function toCount(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? Math.round(value) : 0;
}

/** An upstream usage object in OpenAI shape; undefined if it holds no token counts. */
export function normalizeUsage(value: unknown): Usage | undefined {
  if (!isObject(value)) return undefined;
  // Anthropic-style names as a fallback for compatible servers that use them
  const prompt = toCount(value.prompt_tokens ?? value.input_tokens);
  const completion = toCount(value.completion_tokens ?? value.output_tokens);
  const usage: Usage = {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: value.total_tokens == null ? prompt + completion : toCount(value.total_tokens),
  };
  if (value.prompt_tokens_details != null) usage.prompt_tokens_details = value.prompt_tokens_details;
  if (value.completion_tokens_details != null) usage.completion_tokens_details = value.completion_tokens_details;
  return usage;
}

/** Usage of a non-stream chat.completion body, if it has one. */
export function parseUsageFromChatResponse(body: Buffer | string): Usage | undefined {
  const bytes = typeof body === 'string' ? Buffer.from(body) : body;
  const fast = trailingUsage(bytes);
  if (fast !== undefined) return fast;
  try {
    const parsed: unknown = JSON.parse(bytes.toString('utf8'));
    return isObject(parsed) ? normalizeUsage(parsed.usage) : undefined;
  } catch {
    return undefined;
  }
}

const USAGE_MEMBER = Buffer.from('"usage":');
const isSpace = (byte: number) => byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09;

/**
 * Fast path for the common layout where `usage` is the last member of the answer: find it from the
 * end of the bytes and parse only that object, not the whole completion. The object runs from the
 * brace after `"usage":` to the brace before the answer's closing one; if usage was not the last
 * member, that span is not one JSON object and the parse fails. Anything unusual returns undefined
 * (the caller parses everything instead).
 */
function trailingUsage(bytes: Buffer): Usage | undefined {
  const at = bytes.lastIndexOf(USAGE_MEMBER);
  if (at <= 0 || bytes[at - 1] === 0x5c /* a backslash: the match is inside a string */) return undefined;
  let open = at + USAGE_MEMBER.length;
  while (open < bytes.length && isSpace(bytes[open])) open += 1;
  if (bytes[open] !== 0x7b /* { */) return undefined;
  let close = bytes.length - 1;
  while (close > open && isSpace(bytes[close])) close -= 1;
  if (bytes[close] !== 0x7d /* } */) return undefined;   // the answer's own closing brace
  close -= 1;
  while (close > open && isSpace(bytes[close])) close -= 1;
  if (bytes[close] !== 0x7d) return undefined;
  const text = bytes.toString('utf8', open, close + 1);
  try { return canonicalUsage(text) ?? normalizeUsage(JSON.parse(text)); } catch { return undefined; }
}
