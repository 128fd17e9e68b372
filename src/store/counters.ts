// Fixed-window counters shared by every process (reveal limits, per-group request rates). They live
// in the noSync ephemeral env: losing a window on a machine crash is harmless, an fsync per hit is not.
import type { Databases } from './database';

export interface WindowHit { allowed: boolean; count: number; retryAfterSeconds: number }

interface Window { start: number; count: number }

export class CounterStore {
  constructor(private readonly databases: Databases) {}

  /** Counts one hit in the current window of `bucket`; refuses (without counting) past `limit`. */
  hit(bucket: string, limit: number, windowSeconds: number, now = Date.now()): WindowHit {
    const { ephemeral, ephemeralRoot } = this.databases;
    return ephemeralRoot.transactionSync(() => {
      const windowMs = windowSeconds * 1000;
      const current = ephemeral.get(bucket) as Window | undefined;
      const window = current && now - current.start < windowMs ? current : { start: now, count: 0 };
      if (window.count >= limit) {
        return { allowed: false, count: window.count, retryAfterSeconds: Math.ceil((window.start + windowMs - now) / 1000) };
      }
      ephemeral.putSync(bucket, { start: window.start, count: window.count + 1 });
      return { allowed: true, count: window.count + 1, retryAfterSeconds: 0 };
    });
  }

  /** Adjusts a gauge (e.g. concurrent requests of a key) and returns the new value. */
  adjust(bucket: string, delta: number): number {
    const { ephemeral, ephemeralRoot } = this.databases;
    return ephemeralRoot.transactionSync(() => {
      const value = Math.max(0, ((ephemeral.get(bucket) as number | undefined) ?? 0) + delta);
      if (value === 0) ephemeral.removeSync(bucket); else ephemeral.putSync(bucket, value);
      return value;
    });
  }

  /** Adds `delta` only while the gauge stays ≤ limit; returns false (unchanged) otherwise. */
  acquire(bucket: string, limit: number): boolean {
    const { ephemeral, ephemeralRoot } = this.databases;
    return ephemeralRoot.transactionSync(() => {
      const value = (ephemeral.get(bucket) as number | undefined) ?? 0;
      if (value >= limit) return false;
      ephemeral.putSync(bucket, value + 1);
      return true;
    });
  }

  /** Forgets every gauge with this prefix (supervisor start: no request is in flight). */
  clearPrefix(prefix: string): void {
    const { ephemeral, ephemeralRoot } = this.databases;
    ephemeralRoot.transactionSync(() => {
      for (const key of ephemeral.getKeys({ start: prefix, end: `${prefix}\uffff` })) ephemeral.removeSync(key);
    });
  }
}
