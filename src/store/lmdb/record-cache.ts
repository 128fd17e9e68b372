// Decoded records of the per-request lookups (key by digest, its account), validated against the
// bytes in the memory map on every read: a hit costs one mapped read and a byte compare instead of a
// msgpack decode of the whole record. Nothing is ever stale — a change committed by any process
// changes the bytes — so "disable a key → 401 at once" still holds (DESIGN §3).
import type { Database, Key } from 'lmdb';

interface Entry { bytes: Buffer; record: unknown }

/** Bounded: it simply starts over when full (the working set is the keys in use). */
const DEFAULT_LIMIT = 10_000;

export class ValidatedRecordCache<K extends Key> {
  private readonly entries = new Map<K, Entry>();

  constructor(private readonly database: Database<unknown, K>, private readonly limit = DEFAULT_LIMIT) {}

  /**
   * The record stored under `id`, or undefined. The object is shared by every caller until the
   * stored bytes change: read it, never modify it.
   */
  get(id: K): unknown {
    // getBinaryFast fills one reusable buffer and reports the value's size as its `length`: view
    // exactly those bytes, compare them now, copy them only on a miss.
    const fast = this.database.getBinaryFast(id);
    if (fast === undefined) {
      this.entries.delete(id);
      return undefined;
    }
    const bytes = fast.subarray(0, fast.length);
    const cached = this.entries.get(id);
    if (cached !== undefined && cached.bytes.equals(bytes)) return cached.record;
    const copy = Buffer.from(bytes);
    // Same synchronous turn, same read snapshot: the decoded record is the one those bytes hold.
    const record = this.database.get(id);
    if (record === undefined) return undefined;
    if (cached === undefined && this.entries.size >= this.limit) this.entries.clear();
    this.entries.set(id, { bytes: copy, record });
    return record;
  }
}
