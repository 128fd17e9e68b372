// Fixed-window counters shared by every process (reveal limits, per-group request rates). They live
// in the noSync ephemeral env: losing a window on a machine crash is harmless, an fsync per hit is not.
import type { Databases } from './database';
import type { CounterStore, LimitAsk, LimitVerdict, WindowHit } from '../types';

interface Window { start: number; count: number }

export class LmdbCounters implements CounterStore {
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

  admit(subject: string, workerId: string, ask: LimitAsk): LimitVerdict {
    if (ask.rpm > 0) {
      const hit = this.hit(`rpm:${subject}`, ask.rpm, 60);
      if (!hit.allowed) return { allowed: false, limit: 'rate', retryAfterSeconds: hit.retryAfterSeconds };
    }
    if (ask.concurrency > 0) {
      if (!this.acquireSlot(subject, workerId, ask.concurrency)) return { allowed: false, limit: 'concurrency' };
      return { allowed: true, holdsSlot: true };
    }
    return { allowed: true, holdsSlot: false };
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

  clearSlots(): void {
    this.clearPrefix('slot:');
  }

  /** Forgets every gauge with this prefix (supervisor start: no request is in flight). */
  clearPrefix(prefix: string): void {
    const { ephemeral, ephemeralRoot } = this.databases;
    ephemeralRoot.transactionSync(() => {
      for (const key of [...ephemeral.getKeys({ start: prefix, end: `${prefix}\uffff` })]) ephemeral.removeSync(key);
    });
  }
}
