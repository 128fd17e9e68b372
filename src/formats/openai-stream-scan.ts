// Byte-level SSE scanning for the OpenAI stream forwarder: where events end, and which events may
// be terminal (finish_reason, usage, [DONE]), without decoding or parsing ordinary events. Only
// single-byte searches (Buffer.indexOf with a number, which is cheap) plus a few compares: pattern
// searches with multi-byte needles cost several times more per call on small chunks.

const LINE_FEED = 10;
const CARRIAGE_RETURN = 13;
const SPACE = 32;
export const QUOTE = 34;
const COLON = 58;
const UNDERSCORE = 95;
const REASON_KEY = Buffer.from('reason"');
const TOKENS_KEY = Buffer.from('tokens"');
const CALL_KEY = Buffer.from('call'); // tool_calls, function_call
const DONE_MARK = Buffer.from('[DONE]');
const DATA_FIELD = Buffer.from('data');

export const MAY_BE_TERMINAL = 1;
export const HAS_CALLS = 2;

/** Where the last scanUnderscores call that flagged MAY_BE_TERMINAL found the marker (a return slot, not state). */
export const scanResult = { terminalAt: -1 };

/** Whether `bytes` sit at `position` of the buffer. */
export function matchesAt(buffer: Buffer, position: number, bytes: Buffer): boolean {
  if (position + bytes.length > buffer.length) return false;
  for (let index = 0; index < bytes.length; index += 1) if (buffer[position + index] !== bytes[index]) return false;
  return true;
}

/** Position of the first byte of the value after `"key"` ending at `position`, or -1. */
export function valueAfterKey(buffer: Buffer, position: number, end: number): number {
  while (position < end && buffer[position] === SPACE) position += 1;
  if (buffer[position] !== COLON) return -1;
  position += 1;
  while (position < end && buffer[position] === SPACE) position += 1;
  return position < end ? position : -1;
}

/**
 * Looks at every underscore in [start, end): a `finish_reason` with a string value or a `*_tokens`
 * key (every usage object has one) flags a possible terminal event (and stops the scan); a
 * `tool_calls` / `function_call` key flags that tool arguments are being streamed. One single-byte
 * search per underscore plus a few compares; no pattern search.
 */
export function scanUnderscores(buffer: Buffer, start: number, end: number): number {
  let flags = 0;
  let position = buffer.indexOf(UNDERSCORE, start);
  while (position !== -1 && position < end) {
    const after = position + 1;
    const next = buffer[after]; // compared first: most underscores match none of the keys
    if (next === REASON_KEY[0] && matchesAt(buffer, after, REASON_KEY)) {
      const value = valueAfterKey(buffer, after + REASON_KEY.length, end);
      if (value !== -1 && buffer[value] === QUOTE) { scanResult.terminalAt = position; return flags | MAY_BE_TERMINAL; }
    } else if (next === TOKENS_KEY[0] && matchesAt(buffer, after, TOKENS_KEY)) {
      if (valueAfterKey(buffer, after + TOKENS_KEY.length, end) !== -1) { scanResult.terminalAt = position; return flags | MAY_BE_TERMINAL; }
    } else if (next === CALL_KEY[0] && matchesAt(buffer, after, CALL_KEY)) {
      flags |= HAS_CALLS;
    }
    position = buffer.indexOf(UNDERSCORE, after);
  }
  return flags;
}

/** Whether the event [start, end) ends with the line `data: [DONE]`; O(1). */
export function endsWithDone(buffer: Buffer, start: number, end: number): boolean {
  while (end > start && (buffer[end - 1] === LINE_FEED || buffer[end - 1] === CARRIAGE_RETURN)) end -= 1;
  let position = end - DONE_MARK.length;
  if (position < start || buffer[position] !== DONE_MARK[0] || !matchesAt(buffer, position, DONE_MARK)) return false;
  position -= 1;
  if (buffer[position] === SPACE) position -= 1;
  if (buffer[position] !== COLON || !matchesAt(buffer, position - 4, DATA_FIELD)) return false;
  position -= 5;
  return position < start || buffer[position] === LINE_FEED || buffer[position] === CARRIAGE_RETURN;
}

/** Whether any of the complete events in [0, end) is `data: [DONE]`: one line-feed search per event. */
export function holdsDone(buffer: Buffer, end: number): boolean {
  let eventStart = 0;
  while (eventStart < end) {
    const eventEnd = nextEventEnd(buffer, eventStart, end);
    if (eventEnd === -1) return false;
    if (endsWithDone(buffer, eventStart, eventEnd)) return true;
    eventStart = eventEnd;
  }
  return false;
}

/** End of the event that starts at or after `from` (just past its blank line), or -1. */
export function nextEventEnd(buffer: Buffer, from: number, end: number): number {
  let position = buffer.indexOf(LINE_FEED, from);
  while (position !== -1 && position < end) {
    const next = buffer[position + 1];
    if (next === LINE_FEED) return position + 2;
    if (next === CARRIAGE_RETURN && buffer[position + 2] === LINE_FEED) return position + 3;
    position = buffer.indexOf(LINE_FEED, position + 1);
  }
  return -1;
}

/** Start of the event holding `position`: just after the blank line before it (0 if none). */
export function eventStartBefore(buffer: Buffer, position: number): number {
  let at = buffer.lastIndexOf(LINE_FEED, position);
  while (at > 0) {
    if (buffer[at - 1] === LINE_FEED) return at + 1;
    if (buffer[at - 1] === CARRIAGE_RETURN && buffer[at - 2] === LINE_FEED) return at + 1;
    at = buffer.lastIndexOf(LINE_FEED, at - 1);
  }
  return 0;
}

/** Whether the bytes end with a blank line (LF or CRLF line ends): the end of an event. */
export function endsAtEventEnd(buffer: Buffer): boolean {
  const length = buffer.length;
  return buffer[length - 1] === LINE_FEED
    && (buffer[length - 2] === LINE_FEED || (buffer[length - 2] === CARRIAGE_RETURN && buffer[length - 3] === LINE_FEED));
}

/** End of the last complete event in the buffer (0 if none); boundaries can only be at or after `from`. */
export function lastEventEnd(buffer: Buffer, from: number): number {
  const length = buffer.length;
  if (endsAtEventEnd(buffer)) return length;
  let last = 0;
  let position = Math.max(0, from - 2);
  for (;;) {
    const end = nextEventEnd(buffer, position, length);
    if (end === -1) return last;
    last = end;
    position = end;
  }
}

/** The joined `data:` lines of one event block (SSE field rules), or undefined if it has none. */
export function eventData(block: string): string | undefined {
  // the usual block: one `data: …` line and the blank line, `\n` only
  if (block.startsWith('data: ')) {
    const lineEnd = block.indexOf('\n');
    if (lineEnd !== -1 && lineEnd + 2 === block.length && block.charCodeAt(lineEnd + 1) === 10 && block.indexOf('\r') === -1) {
      return block.slice(6, lineEnd);
    }
  }
  let data: string | undefined;
  for (const line of block.split(/\r\n|\r|\n/)) {
    if (!line.startsWith('data')) continue;
    const rest = line.slice(4);
    if (rest.length > 0 && rest[0] !== ':') continue; // a field named e.g. "database"
    const value = rest.startsWith(': ') ? rest.slice(2) : rest.slice(1);
    data = data === undefined ? value : `${data}\n${value}`;
  }
  return data;
}

/** A JSON string value starting after a key (ids and fingerprints carry no escapes). */
export function readStringValue(buffer: Buffer, keyEnd: number, end: number): string | undefined {
  const open = valueAfterKey(buffer, keyEnd, end);
  if (open === -1 || buffer[open] !== QUOTE) return undefined;
  const close = buffer.indexOf(QUOTE, open + 1);
  if (close === -1 || close >= end) return undefined;
  return buffer.toString('utf8', open + 1, close);
}
