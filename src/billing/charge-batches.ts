// A worker's settled charges and usage records on their way to the store: queued as calls settle,
// committed in batches every few ms or once enough are waiting (never awaited by a response), a
// failed batch sent again with the next one, a refused one logged and dropped. DESIGN §5.
import type { Logger } from '../log';
import { BatchRefused, UsageRowBatch, type Charge, type UsageGroup, type UsageRecord } from '../store';

/**
 * Charges and usage records are committed every DEFAULT_FLUSH_MS, or at once when FLUSH_RECORDS are
 * waiting. A commit has a fixed cost (fsync included) far above its cost per record, and each batch
 * wakes the writer thread on the worker's core, so batches are made large (bench/README.md has the
 * figures that set these two values). A crash loses at
 * most this window, unbilled (never double-billed).
 */
export const DEFAULT_FLUSH_MS = 50;
export const FLUSH_RECORDS = 2048;

/**
 * Commits a batch of charges with its usage records; resolves once it is committed. Charges of the
 * same key, account and epochs arrive summed (the commit sums them anyway); the records arrive
 * packed per account (UsageRowBatch).
 */
export type CommitBatch = (charges: Charge[], usage: UsageGroup[]) => Promise<void>;

/** Charges of the same key, account and epochs as one charge each: the commit applies sums. */
export function sumCharges(charges: readonly Charge[]): Charge[] {
  const sums = new Map<string, Charge>();
  for (const charge of charges) {
    const group = `${charge.keyId}:${charge.keyEpoch}:${charge.accountId}:${charge.accountEpoch}`;
    const sum = sums.get(group);
    if (sum === undefined) sums.set(group, { ...charge }); else sum.quota += charge.quota;
  }
  return [...sums.values()];
}

/** What a queued charge keeps of the lease it was drawn on: the books its commit settles. */
export interface LeaseBooks {
  granted: number;
  pending: number;
  /** no longer vouched for by the store (see committedCharge) */
  lapsed: boolean;
}

interface QueuedCharge { charge: Charge; keyLease: LeaseBooks | null; accountLease: LeaseBooks }

/**
 * A queued charge as it is committed. One drawn on a lapsed lease names no epoch (-1, as for an
 * unlimited key), so the commit takes it from no lease: the store would take it from the lease of
 * the worker's new owner name, which the worker holds in full, while the lapsed lease's rows are
 * given back whole when they expire. Read when its batch's commit starts, so a lapse noticed
 * after the charge was queued counts too.
 */
function committedCharge({ charge, keyLease, accountLease }: QueuedCharge): Charge {
  if (!(keyLease?.lapsed ?? false) && !accountLease.lapsed) return charge;
  return { ...charge, keyEpoch: keyLease?.lapsed ? -1 : charge.keyEpoch, accountEpoch: accountLease.lapsed ? -1 : charge.accountEpoch };
}

export class ChargeBatches {
  private charges: QueuedCharge[] = [];
  /** usage records of settled calls, as the JSON bytes of their rows grouped by account, until the batch is committed */
  private rows = new UsageRowBatch();
  private timer: NodeJS.Timeout | null = null;
  private flushing: Promise<void> = Promise.resolve();
  /** why the latest batch was not committed (null: it was) */
  private failure: unknown = null;

  constructor(private readonly commit: CommitBatch, private readonly log: Logger, private readonly flushMs: number,
    private readonly observer?: { ledgerBatch(records: number, commitMs: number): void }) {}

  /**
   * Queues a settled charge (its quota already counted as pending on its leases) with its record.
   * Calls of the same key on the same leases (the usual run) add up in one queued charge: the commit
   * and the lease bookkeeping after it apply sums anyway.
   */
  add(charge: Charge, keyLease: LeaseBooks | null, accountLease: LeaseBooks, record: Omit<UsageRecord, 'id'>): void {
    const last = this.charges.length > 0 ? this.charges[this.charges.length - 1] : undefined;
    if (last !== undefined && last.keyLease === keyLease && last.accountLease === accountLease && last.charge.keyId === charge.keyId
      && last.charge.keyEpoch === charge.keyEpoch) {
      last.charge.quota += charge.quota;
    } else {
      this.charges.push({ charge, keyLease, accountLease });
    }
    this.rows.add(record);
    if (this.rows.count >= FLUSH_RECORDS) void this.flush();
    else this.timer ??= setTimeout(() => { this.timer = null; void this.flush(); }, this.flushMs);
  }

  /** why the latest batch was not committed; null when it was */
  get lastFailure(): unknown { return this.failure; }

  /**
   * Commits what is queued; resolves when it is durable. A commit that failed is logged and its
   * batch goes again with the next one, unless the store refused its content (see refused).
   */
  flush(): Promise<void> {
    if (this.timer) { clearTimeout(this.timer); this.timer = null; }
    if (this.charges.length === 0) return this.flushing;
    const charges = this.charges;
    const rows = this.rows;
    this.charges = [];
    this.rows = new UsageRowBatch();
    let started = 0;
    this.flushing = this.flushing.then(() => { started = performance.now(); return this.commit(sumCharges(charges.map(committedCharge)), rows.groups()); })
      .then(() => {
        this.failure = null;
        this.observer?.ledgerBatch(rows.count, performance.now() - started);
        for (const { charge, keyLease, accountLease } of charges) {
          if (keyLease) { keyLease.pending -= charge.quota; keyLease.granted = Math.max(0, keyLease.granted - charge.quota); }
          accountLease.pending -= charge.quota;
          accountLease.granted = Math.max(0, accountLease.granted - charge.quota);
        }
      }, (error: unknown) => {
        this.failure = error;
        if (error instanceof BatchRefused) { this.refused(error, charges, rows); return; }
        this.log.error({ err: error, charges: charges.length }, 'committing charges failed; retrying with the next batch');
        this.charges.unshift(...charges);
        this.rows.prepend(rows);
      });
    return this.flushing;
  }

  /**
   * The store refused a batch's content (a value it cannot hold): sending it again would fail the
   * same way, and with it every batch after. It is logged whole at error level, charges and usage
   * rows, for the operator to settle by hand, and dropped with its records, so what the store holds
   * still agrees (used_quota is the sum of the records). The leases get back what it would have
   * consumed.
   */
  private refused(error: BatchRefused, charges: QueuedCharge[], rows: UsageRowBatch): void {
    this.log.error({ err: error.cause, charges: sumCharges(charges.map(committedCharge)), usage: rows.groups() },
      'the store refused a billing batch: its charges and usage records are dropped (logged here in full)');
    for (const { charge, keyLease, accountLease } of charges) {
      if (keyLease) keyLease.pending -= charge.quota;
      accountLease.pending -= charge.quota;
    }
  }
}
