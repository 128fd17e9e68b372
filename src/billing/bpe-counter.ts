// Counts the tokens of a byte-pair encoding (o200k_base for billing), the way tiktoken does: the text
// is split by the encoding's pattern, a piece that is a token whole counts one, any other piece is
// merged from its UTF-8 bytes, the adjacent pair of lowest rank first, and counts its parts.
//
// The vocabulary lives in typed arrays (every token's bytes in one buffer, an open-addressing table
// of ranks) rather than as 200,000 strings and a Map on the JavaScript heap: the garbage collector
// marks everything the heap holds at every full collection, and a worker streaming under load runs
// one every few seconds. Pure: no I/O.

/** A vocabulary: token r's bytes are bytes[offsets[r], offsets[r + 1]) (empty for an unused rank). */
export interface Vocabulary { bytes: Uint8Array; offsets: Uint32Array }

/** String.prototype.isWellFormed (ES2024; Node 20 and Bun have it, the compile target's types do not) */
type WellFormed = { isWellFormed(): boolean };

const LINE_FEED = 10;
const SPACE = 32;
/** base64 digit values by character code (-1: not a digit) */
const BASE64 = new Int8Array(256).fill(-1);
for (let digit = 0; digit < 64; digit += 1) BASE64['ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'.charCodeAt(digit)] = digit;

/**
 * The vocabulary of a tiktoken rank file: one token a line, its bytes in base64, a space, its rank,
 * the ranks 0, 1, 2 … in order. The tokens are decoded straight into one buffer: no string or
 * buffer per token is made, so loading leaves no garbage of the vocabulary's size behind. A file not
 * in that form is corrupt, refused.
 */
export function parseTiktokenRanks(file: Uint8Array): Vocabulary {
  let lines = 0;
  for (let at = file.indexOf(LINE_FEED); at !== -1; at = file.indexOf(LINE_FEED, at + 1)) lines += 1;
  if (file.length > 0 && file[file.length - 1] !== LINE_FEED) lines += 1;
  // base64 holds 3 bytes in every 4 characters: the decoded tokens fit in three quarters of the file
  const bytes = new Uint8Array(Math.ceil((file.length * 3) / 4));
  const offsets = new Uint32Array(lines + 1);
  let rank = 0;
  let written = 0;
  for (let start = 0; start < file.length;) {
    let end = file.indexOf(LINE_FEED, start);
    if (end === -1) end = file.length;
    if (end > start) {
      const space = file.indexOf(SPACE, start);
      if (space <= start || space >= end || decimal(file, space + 1, end) !== rank) throw new Error(`malformed rank file line at byte ${start}`);
      offsets[rank] = written;
      written = decodeBase64(file, start, space, bytes, written);
      rank += 1;
    }
    start = end + 1;
  }
  offsets[rank] = written;
  return { bytes: bytes.slice(0, written), offsets: offsets.slice(0, rank + 1) };
}

/** The decimal number in file[start, end), or -1 when it is not one. */
function decimal(file: Uint8Array, start: number, end: number): number {
  if (end === start || end - start > 9) return -1;
  let value = 0;
  for (let at = start; at < end; at += 1) {
    const digit = file[at] - 48;
    if (digit < 0 || digit > 9) return -1;
    value = value * 10 + digit;
  }
  return value;
}

/** Decodes the base64 in file[start, end) into `out` at `at`; returns the offset after the bytes written. */
function decodeBase64(file: Uint8Array, start: number, end: number, out: Uint8Array, at: number): number {
  let bits = 0;
  let held = 0;
  let digits = 0;
  let padding = 0;
  for (let index = start; index < end; index += 1) {
    const code = file[index];
    if (code === 61 && index >= end - 2) { padding += 1; continue; }   // "=" only at the end
    const digit = BASE64[code];
    if (digit === -1 || padding > 0) throw new Error(`malformed rank file line at byte ${start}`);
    bits = (bits << 6) | digit;
    held += 6;
    digits += 1;
    if (held >= 8) {
      held -= 8;
      out[at] = (bits >> held) & 0xff;
      at += 1;
    }
  }
  if ((digits + padding) % 4 !== 0 || digits === 0) throw new Error(`malformed rank file line at byte ${start}`);
  return at;
}

const NO_RANK = 0x7fffffff;
/** a heap key is rank × KEY_SPAN + the pair's start offset: exact in a double for any rank and offset below 2^26 */
const KEY_SPAN = 2 ** 26;
/** prev[] of a byte offset that no longer starts a part */
const DEAD = -2;
const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;

export class BpeCounter {
  /** every token's bytes, concatenated in rank order */
  private readonly bytes: Uint8Array;
  /** token r's bytes are bytes[offsets[r], offsets[r + 1]) */
  private readonly offsets: Uint32Array;
  /** open addressing by the FNV-1a hash of a token's bytes: rank + 1, 0 for an empty slot */
  private readonly slots: Int32Array;
  private readonly mask: number;
  /** the current piece's UTF-8 bytes */
  private piece: Buffer = Buffer.allocUnsafeSlow(1024);
  /** the merge's parts (a linked list over byte offsets) and candidate pairs, grown with the longest piece seen */
  private next = new Int32Array(1025);
  private prev = new Int32Array(1025);
  /** the rank of the pair that starts at an offset, as last offered (NO_RANK: not a token, or no pair) */
  private pairRank = new Int32Array(1025);
  private heap = new Float64Array(1024);
  private heapSize = 0;

  constructor(vocabulary: Vocabulary, private readonly splitter: RegExp) {
    if (!splitter.global) throw new Error('the split pattern must be global');
    this.bytes = vocabulary.bytes;
    this.offsets = vocabulary.offsets;
    const count = this.offsets.length - 1;
    let size = 1;
    while (size < count * 2) size *= 2;
    this.slots = new Int32Array(size);
    this.mask = size - 1;
    for (let rank = 0; rank < count; rank += 1) if (this.offsets[rank + 1] > this.offsets[rank]) this.insert(rank);
  }

  /** Tokens of `text`, special-token text counted as plain text. */
  count(text: string): number {
    const splitter = this.splitter;
    splitter.lastIndex = 0;
    let total = 0;
    for (let match = splitter.exec(text); match !== null; match = splitter.exec(text)) {
      const piece = match[0];
      if (piece.length === 0) { splitter.lastIndex += 1; continue; }
      total += this.countPiece(piece);
    }
    return total;
  }

  private countPiece(piece: string): number {
    if (piece.length * 3 > this.piece.length) this.piece = Buffer.allocUnsafeSlow(piece.length * 3);
    const length = this.piece.write(piece, 0, 'utf8');
    // a piece with a lone surrogate is not a token's text, whatever its replacement bytes would match
    if ((piece as unknown as WellFormed).isWellFormed() && this.rankOf(0, length) !== NO_RANK) return 1;
    return this.mergedParts(length);
  }

  /**
   * Parts the piece's `length` bytes merge into: the adjacent pair of lowest rank first, the leftmost
   * of equals, as tiktoken merges. The parts are a linked list over byte offsets and the candidate
   * pairs a binary heap ordered by (rank, offset), so a long piece (a run of CJK) costs n log n, not n².
   * A heap entry whose pair was changed by an earlier merge is dropped when it comes up.
   */
  private mergedParts(length: number): number {
    if (length + 1 > this.next.length) {
      this.next = new Int32Array(length + 1);
      this.prev = new Int32Array(length + 1);
      this.pairRank = new Int32Array(length + 1);
      this.heap = new Float64Array(length);
    }
    const next = this.next;
    const prev = this.prev;
    const pairRank = this.pairRank;
    // part s spans [s, next[s]); prev[s] is the start of the part before it (-1 for the first)
    for (let start = 0; start < length; start += 1) { next[start] = start + 1; prev[start] = start - 1; pairRank[start] = NO_RANK; }
    this.heapSize = 0;
    for (let start = 0; start + 2 <= length; start += 1) this.offer(start, start + 2);
    let parts = length;
    while (this.heapSize > 0) {
      const key = this.take();
      const start = key % KEY_SPAN;
      const rank = (key - start) / KEY_SPAN;
      // an entry made before the pair at `start` last changed is stale (the part is gone, or its pair's rank is another)
      if (prev[start] === DEAD || pairRank[start] !== rank) continue;
      const middle = next[start];
      const end = next[middle];
      next[start] = end;
      prev[middle] = DEAD;
      if (end < length) prev[end] = start;
      parts -= 1;
      if (end < length) this.offer(start, next[end]);
      else pairRank[start] = NO_RANK;
      if (prev[start] >= 0) this.offer(prev[start], end);
    }
    return parts;
  }

  /** Notes the rank of the pair of piece bytes [start, end), and adds it to the heap when it is a token. */
  private offer(start: number, end: number): void {
    const rank = this.rankOf(start, end);
    this.pairRank[start] = rank;
    if (rank === NO_RANK) return;
    const heap = this.heap;
    if (this.heapSize === heap.length) {
      this.heap = new Float64Array(heap.length * 2);
      this.heap.set(heap);
    }
    const key = rank * KEY_SPAN + start;
    let at = this.heapSize;
    this.heapSize += 1;
    while (at > 0) {
      const parent = (at - 1) >> 1;
      if (this.heap[parent] <= key) break;
      this.heap[at] = this.heap[parent];
      at = parent;
    }
    this.heap[at] = key;
  }

  /** Removes and returns the heap's smallest key. */
  private take(): number {
    const heap = this.heap;
    const top = heap[0];
    this.heapSize -= 1;
    const last = heap[this.heapSize];
    const size = this.heapSize;
    let at = 0;
    for (;;) {
      let child = at * 2 + 1;
      if (child >= size) break;
      if (child + 1 < size && heap[child + 1] < heap[child]) child += 1;
      if (heap[child] >= last) break;
      heap[at] = heap[child];
      at = child;
    }
    heap[at] = last;
    return top;
  }

  /** The rank of piece bytes [start, end), or NO_RANK. */
  private rankOf(start: number, end: number): number {
    const piece = this.piece;
    let hash = FNV_OFFSET;
    for (let index = start; index < end; index += 1) hash = Math.imul(hash ^ piece[index], FNV_PRIME);
    const length = end - start;
    for (let slot = hash & this.mask; ; slot = (slot + 1) & this.mask) {
      const entry = this.slots[slot];
      if (entry === 0) return NO_RANK;
      const rank = entry - 1;
      const from = this.offsets[rank];
      if (this.offsets[rank + 1] - from === length && this.sameBytes(from, start, length)) return rank;
    }
  }

  private sameBytes(from: number, start: number, length: number): boolean {
    const bytes = this.bytes;
    const piece = this.piece;
    for (let index = 0; index < length; index += 1) if (bytes[from + index] !== piece[start + index]) return false;
    return true;
  }

  private insert(rank: number): void {
    const bytes = this.bytes;
    let hash = FNV_OFFSET;
    for (let index = this.offsets[rank]; index < this.offsets[rank + 1]; index += 1) hash = Math.imul(hash ^ bytes[index], FNV_PRIME);
    let slot = hash & this.mask;
    while (this.slots[slot] !== 0) slot = (slot + 1) & this.mask;
    this.slots[slot] = rank + 1;
  }
}
