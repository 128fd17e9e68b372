// UTF-8 bytes as a string, for the large JSON texts the gateway parses (request bodies, whole
// upstream answers). The result is the string Buffer#toString('utf8') gives for the same bytes.
//
// Why not toString alone: V8's UTF-8 decoder converts a text holding any non-ASCII byte one code
// point at a time, so a long CJK conversation, or a coding agent's history with a few arrows or
// box-drawing characters in it, decodes several times slower than the same length of ASCII.
// Node's transcode converts valid UTF-8 to UTF-16 in bulk, and a UTF-16LE buffer becomes a string
// by a copy. Short texts, ASCII texts and invalid UTF-8 (whose replacement characters are
// toString's to place) keep the plain decoder.
import { isAscii, isUtf8, transcode } from 'node:buffer';

/** Below this many bytes the plain decoder is as fast (the bulk path's checks and copy cost more). */
export const BULK_DECODE_FROM_BYTES = 1024;

export function utf8Text(bytes: Buffer): string {
  if (bytes.length < BULK_DECODE_FROM_BYTES || isAscii(bytes) || !isUtf8(bytes)) return bytes.toString('utf8');
  return transcode(bytes, 'utf8', 'utf16le').toString('utf16le');
}
