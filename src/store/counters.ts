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

  /**
   * Takes one concurrency slot of `subject` for this worker when the total over all workers is
   * below `limit`. Each worker owns its own entry, so a dead worker's slots can be dropped.
   */
  acquireSlot(subject: string, workerId: string, limit: number): boolean {
    const { ephemeral, ephemeralRoot } = this.databases;
    return ephemeralRoot.transactionSync(() => {
      let total = 0;
      for (const { value } of ephemeral.getRange({ start: `slot:${subject}:`, end: `slot:${subject}:\uffff` })) total += value as number;
      if (total >= limit) return false;
      const own = `slot:${subject}:${workerId}`;
      ephemeral.putSync(own, ((ephemeral.get(own) as number | undefined) ?? 0) + 1);
      return true;
    });
  }

  releaseSlot(subject: string, workerId: string): void {
    const { ephemeral, ephemeralRoot } = this.databases;
    ephemeralRoot.transactionSync(() => {
      const own = `slot:${subject}:${workerId}`;
      const value = ((ephemeral.get(own) as number | undefined) ?? 0) - 1;
      if (value <= 0) ephemeral.removeSync(own); else ephemeral.putSync(own, value);
    });
  }

  /** Drops the slots of a worker that is gone. */
  dropWorkerSlots(workerId: string): void {
    const { ephemeral, ephemeralRoot } = this.databases;
    ephemeralRoot.transactionSync(() => {
      const suffix = `:${workerId}`;
      for (const key of [...ephemeral.getKeys({ start: 'slot:', end: 'slot:\uffff' })]) {
        if (key.endsWith(suffix)) ephemeral.removeSync(key);
      }
    });
  }

  /** Forgets every gauge with this prefix (supervisor start: no request is in flight). */
  clearPrefix(prefix: string): void {
    const { ephemeral, ephemeralRoot } = this.databases;
    ephemeralRoot.transactionSync(() => {
      for (const key of [...ephemeral.getKeys({ start: prefix, end: `${prefix}\uffff` })]) ephemeral.removeSync(key);
    });
  }
}
