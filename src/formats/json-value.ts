// The one test of "a JSON object" (not null, not an array) the wire-format modules share.
export type JsonObject = Record<string, unknown>;

export function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * How deep JSON from a client or an upstream may nest (objects and arrays counted): every body is
 * checked once where it is parsed, so no code that walks it recursively (translation, validation,
 * JSON.stringify itself) can run out of stack on it. Deeper than any real request or answer.
 */
export const MAX_JSON_DEPTH = 64;

/**
 * Whether `root` nests objects or arrays deeper than `limit`. Iterative, so a value nested 100,000
 * levels is measured without recursion; it stops at the first container past the limit.
 */
export function nestsDeeperThan(root: unknown, limit = MAX_JSON_DEPTH): boolean {
  if (typeof root !== 'object' || root === null) return false;
  const nodes: object[] = [root];
  const depths: number[] = [1];
  while (nodes.length > 0) {
    const node = nodes.pop()!;
    const depth = depths.pop()!;
    if (depth > limit) return true;
    if (Array.isArray(node)) {
      for (let index = 0; index < node.length; index += 1) {
        const child: unknown = node[index];
        if (typeof child === 'object' && child !== null) { nodes.push(child); depths.push(depth + 1); }
      }
    } else {
      for (const key in node) {
        const child: unknown = (node as JsonObject)[key];
        if (typeof child === 'object' && child !== null) { nodes.push(child); depths.push(depth + 1); }
      }
    }
  }
  return false;
}

/**
 * JSON.parse of text from an upstream (an answer, a stream event, tool arguments), or undefined when
 * it is not JSON or nests past MAX_JSON_DEPTH: callers treat both as a malformed answer, so nothing
 * they walk or serialise again can run out of stack.
 */
export function parseBoundedJson(text: string): unknown {
  let value: unknown;
  try { value = JSON.parse(text); } catch { return undefined; }
  return nestsDeeperThan(value) ? undefined : value;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
/** a string longer than this is skipped by searching for its closing quote, not byte by byte */
const SHORT_STRING = 24;

/**
 * How many members the top-level object of `json` has as written, duplicates counted: the colons
 * at depth 1 outside strings. `json` must be text JSON.parse accepted as an object. Against the
 * parsed object's key count this tells whether a key is repeated, which JSON.parse hides (the last
 * one wins) and an upstream may read otherwise (the first one wins, or an error).
 */
export function topLevelMemberCount(json: Buffer): number {
  const length = json.length;
  let depth = 0;
  let members = 0;
  let index = 0;
  while (index < length) {
    const byte = json[index];
    if (byte === QUOTE) {
      index = stringEnd(json, index + 1);
    } else if (byte === 0x7b /* { */ || byte === 0x5b /* [ */) {
      depth += 1;
    } else if (byte === 0x7d /* } */ || byte === 0x5d /* ] */) {
      depth -= 1;
    } else if (byte === 0x3a /* : */ && depth === 1) {
      members += 1;
    }
    index += 1;
  }
  return members;
}

/** The index of the quote that closes the string whose text starts at `from` (or past the end). */
function stringEnd(json: Buffer, from: number): number {
  const length = json.length;
  let index = from;
  const short = Math.min(length, from + SHORT_STRING);
  while (index < short) {
    const byte = json[index];
    if (byte === QUOTE) return index;
    index += byte === BACKSLASH ? 2 : 1;
  }
  // a long string: jump from quote to quote, skipping the ones an odd run of backslashes escapes
  for (;;) {
    const quote = json.indexOf(QUOTE, index);
    if (quote === -1) return length;
    let before = quote - 1;
    while (json[before] === BACKSLASH) before -= 1;
    if ((quote - 1 - before) % 2 === 0) return quote;
    index = quote + 1;
  }
}

/** Whether `raw`, the text `body` was parsed from, repeats a key of its top-level object. */
export function repeatsTopLevelKey(raw: Buffer, body: JsonObject): boolean {
  return topLevelMemberCount(raw) !== Object.keys(body).length;
}
