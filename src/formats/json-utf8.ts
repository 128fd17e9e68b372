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
// bytes: a \u escape of such a character (`\u00e9`, `\u2028`) is refused by the check below and the
// text is parsed as UTF-16. Invalid UTF-8 (replacement characters are toString's to place), ASCII
// and shorter texts keep the plain path.
import { isAscii, isUtf8, transcode } from 'node:buffer';
import { utf8Text } from './utf8-text';

/** UTF-16 units of a two-byte string that still fits a regular heap object (128 KiB, less the header) */
export const MAX_REGULAR_TWO_BYTE_UNITS = 65_000;

const NON_ASCII = /[\x80-\xff]/;

/** Parses JSON from UTF-8 bytes; throws as JSON.parse throws. */
export function parseJsonUtf8(bytes: Buffer): unknown {
  // a text of this many bytes or fewer has at most as many UTF-16 units
  if (bytes.length <= MAX_REGULAR_TWO_BYTE_UNITS || isAscii(bytes) || !isUtf8(bytes)) return JSON.parse(utf8Text(bytes));
  const wide = transcode(bytes, 'utf8', 'utf16le');
  if (wide.length / 2 <= MAX_REGULAR_TWO_BYTE_UNITS) return JSON.parse(wide.toString('utf16le'));
  const text = bytes.toString('latin1');
  if (escapesNonAscii(text)) return JSON.parse(wide.toString('utf16le'));
  return decodeNonAscii(JSON.parse(text));
}

/** Whether the JSON text holds a \u escape of a character of 0x80 or above (or one that may be). */
function escapesNonAscii(text: string): boolean {
  for (let at = text.indexOf('\\u'); at !== -1; at = text.indexOf('\\u', at + 2)) {
    // \u00XX with XX below 80 is ASCII; anything else (an escaped backslash before "u" included) may not be
    if (!(text.charCodeAt(at + 2) === 0x30 && text.charCodeAt(at + 3) === 0x30 && text.charCodeAt(at + 4) < 0x38)) return true;
  }
  return false;
}

/** A string parsed from the Latin-1 reading, as the UTF-8 reading gives it. */
function decoded(latin1: string): string {
  return NON_ASCII.test(latin1) ? utf8Text(Buffer.from(latin1, 'latin1')) : latin1;
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
      if (!renamed && NON_ASCII.test(key)) renamed = true;
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
