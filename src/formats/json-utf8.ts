// JSON.parse of UTF-8 bytes: the value JSON.parse(bytes.toString('utf8')) gives, for every input.
//
// Why not that alone: a text of more than 64 K UTF-16 units that is not all Latin-1 is a two-byte
// string past V8's largest regular heap object (128 KiB), so it goes to the large-object space,
// whose pages are mapped fresh for each string and faulted in page by page. A coding agent's
// request (a long system prompt, tool definitions, files read back) is such a text: mostly ASCII,
// with a few arrows, box-drawing characters or CJK words in it. Read as Latin-1 instead, the same
// bytes make a one-byte string of one unit a byte, which JSON.parse reads as it would the UTF-8 text
// (non-ASCII bytes can only stand inside strings, where both are plain characters); the few parsed
// strings and keys holding non-ASCII bytes are then decoded from UTF-8 one by one.
//
// That is exact only when every character of 0x80 and above in the parsed strings came from the
// bytes: a text with a \u escape of such a character (`\u00e9`, `\u2028`) keeps the plain path, as
// do invalid UTF-8 (replacement characters are toString's to place), ASCII, shorter texts, and
// texts dense enough in non-ASCII characters to fit a regular two-byte string.
import { isAscii, isUtf8, transcode } from 'node:buffer';
import { BULK_DECODE_FROM_BYTES, utf8Text } from './utf8-text';

/** UTF-16 units of a two-byte string that still fits a regular heap object (128 KiB, less the header) */
export const MAX_REGULAR_TWO_BYTE_UNITS = 65_000;

const NON_ASCII = /[\x80-\xff]/;

/** Parses JSON from UTF-8 bytes; throws as JSON.parse throws. */
export function parseJsonUtf8(bytes: Buffer): unknown {
  // a text of this many bytes or fewer has at most as many UTF-16 units
  if (bytes.length <= MAX_REGULAR_TWO_BYTE_UNITS || isAscii(bytes) || !isUtf8(bytes)) return JSON.parse(utf8Text(bytes));
  // dense non-ASCII text (a long Chinese conversation) fits a regular two-byte string, and its many
  // strings would each need decoding on the Latin-1 path: it takes the plain one
  if (estimatedUnits(bytes) <= MAX_REGULAR_TWO_BYTE_UNITS) return JSON.parse(utf8Text(bytes));
  const text = bytes.toString('latin1');
  if (escapesNonAscii(text)) return JSON.parse(utf8Text(bytes));
  return decodeNonAscii(JSON.parse(text));
}

const SAMPLE_WINDOWS = 16;
const SAMPLE_BYTES = 256;

/**
 * About how many UTF-16 units valid UTF-8 `bytes` decode to, from the share of non-ASCII bytes in
 * windows spread over them: a non-ASCII character is 2 to 4 bytes and 1 or 2 units, about a third
 * of its bytes. It only chooses the path; both give the same value.
 */
function estimatedUnits(bytes: Buffer): number {
  const step = (bytes.length - SAMPLE_BYTES) / (SAMPLE_WINDOWS - 1);
  let nonAscii = 0;
  for (let window = 0; window < SAMPLE_WINDOWS; window += 1) {
    const start = Math.floor(step * window);
    for (let index = start; index < start + SAMPLE_BYTES; index += 1) if (bytes[index] >= 0x80) nonAscii += 1;
  }
  return bytes.length * (1 - (nonAscii / (SAMPLE_WINDOWS * SAMPLE_BYTES)) * (2 / 3));
}

/** Whether the JSON text holds a \u escape of a character of 0x80 or above (or one that may be). */
function escapesNonAscii(text: string): boolean {
  for (let at = text.indexOf('\\u'); at !== -1; at = text.indexOf('\\u', at + 2)) {
    // \u00XX with XX below 80 is ASCII; anything else (an escaped backslash before "u" included) may not be
    if (!(text.charCodeAt(at + 2) === 0x30 && text.charCodeAt(at + 3) === 0x30 && text.charCodeAt(at + 4) < 0x38)) return true;
  }
  return false;
}

/** Below this length a pattern test finds a non-ASCII character sooner than a call into the runtime. */
const SHORT_TEXT = 16;

/** Whether a string of the Latin-1 reading holds a byte of 0x80 or above (its UTF-8 length counts two for each). */
function holdsNonAscii(latin1: string): boolean {
  return latin1.length < SHORT_TEXT ? NON_ASCII.test(latin1) : Buffer.byteLength(latin1, 'utf8') !== latin1.length;
}

/** Bytes of the strings being decoded, reused: strings up to this many bytes are written here. */
const SCRATCH_BYTES = 64 * 1024;
let scratch: Buffer | undefined;

/**
 * A string parsed from the Latin-1 reading, as the UTF-8 reading gives it. Its bytes are valid
 * UTF-8: they lie between two quotes of a text that is (escapes of non-ASCII were ruled out).
 */
function decoded(latin1: string): string {
  if (!holdsNonAscii(latin1)) return latin1;
  const length = latin1.length;
  if (length > SCRATCH_BYTES) return utf8Text(Buffer.from(latin1, 'latin1'));
  scratch ??= Buffer.allocUnsafeSlow(SCRATCH_BYTES);
  scratch.write(latin1, 0, length, 'latin1');
  const bytes = scratch.subarray(0, length);
  return length < BULK_DECODE_FROM_BYTES ? bytes.toString('utf8') : transcode(bytes, 'utf8', 'utf16le').toString('utf16le');
}

/** Decodes in place every string and key of `root` holding non-ASCII bytes; iterative (any depth). */
function decodeNonAscii(root: unknown): unknown {
  if (typeof root === 'string') return decoded(root);
  if (typeof root !== 'object' || root === null) return root;
  const containers: object[] = [root];
  while (containers.length > 0) {
    const container = containers.pop()!;
    if (Array.isArray(container)) {
      for (let index = 0; index < container.length; index += 1) {
        const value: unknown = container[index];
        if (typeof value === 'string') {
          const text = decoded(value);
          if (text !== value) container[index] = text;
        } else if (typeof value === 'object' && value !== null) containers.push(value);
      }
      continue;
    }
    const object = container as Record<string, unknown>;
    let renamed = false;
    for (const key in object) {
      const value = object[key];
      if (typeof value === 'string') {
        const text = decoded(value);
        if (text !== value) object[key] = text;
      } else if (typeof value === 'object' && value !== null) containers.push(value);
      if (!renamed && holdsNonAscii(key)) renamed = true;
    }
    if (renamed) renameKeys(object);
  }
  return root;
}

/**
 * Gives `object` its keys as decoded, in their order: every key is taken out and put back (as data
 * properties, so a "__proto__" key stays a key, as JSON.parse makes it).
 */
function renameKeys(object: Record<string, unknown>): void {
  const entries = Object.entries(object);
  for (const [key] of entries) delete object[key];
  for (const [key, value] of entries) Object.defineProperty(object, decoded(key), { value, writable: true, enumerable: true, configurable: true });
}
