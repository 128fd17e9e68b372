// Money on PostgreSQL: quota leases to the workers of every node, batched charge commits with their
// usage records, the heartbeats that keep this process's leases alive, and the reaping of leases
// whose owner stopped renewing them. Each operation is one call of a function of the schema (one
// round trip, one transaction). The invariants are those of the LMDB store (see schema.ts).
//
// Why a lease bounds what a dead node can hold: every lease row has an expiry, renewed by its
// owner's heartbeat (an acquisition sets the expiry of the rows it adds to). A node that dies stops renewing; after the
// expiry any surviving node's reaper gives the rows back to their keys and accounts. An owner whose
// heartbeats have not reached the database for a whole TTL (partitioned, stalled) stops drawing on
// what it holds before anyone may reap it (heldUntil), and carries on under a new owner name.
// A grant whose answer never arrived (the connection dropped after the commit) would otherwise
// sit in the owner's rows, renewed by its heartbeats for the worker's whole life: each grant has
// an id, and the worker undoes such a grant by its id as soon as the database answers again.
import { DatabaseError, type Pool } from 'pg';
import { toUsageRow, type UsageGroup, type UsageRecord } from '../records';
import { BatchRefused, type Charge, type LeaseAsk, type LeaseGrant, type LeaseShortfall, type LedgerStore } from '../types';
import { GatewayError } from '../../errors';
import { storeUnavailable } from '../unavailable';
import { RENEW_LEASES_SQL } from './schema';

/** Batch ids older than a day are pruned every this many beats. */
const PRUNE_EVERY_BEATS = 200;
/** A heartbeat goes out this many times per TTL. */
const BEATS_PER_TTL = 4;
/** heldUntil keeps this share of the TTL as a margin against delays between a beat's send and its commit */
const SAFETY_SHARE = 0.2;

interface Owner {
  /** the name the rows carry: the worker id, then with a suffix after each lapse */
  name: string;
  lapses: number;
  /** send time (Date.now) of the newest renewal that the database confirmed; null before any lease */
  renewedAt: number | null;
}

/** JSON text of every row of the groups, as one array, without parsing them. */
function joinRows(groups: UsageGroup[]): string {
  const parts: string[] = [];
  for (const group of groups) {
    const inner = group.rows.slice(1, -1);
    if (inner.length > 0) parts.push(inner);
  }
  return `[${parts.join(',')}]`;
}

export class PostgresLedger implements LedgerStore {
  private readonly owners = new Map<string, Owner>();
  private readonly startedAt = Date.now();
  private batches = 0;
  private readonly heartbeat: NodeJS.Timeout;

  constructor(private readonly pool: Pool, private readonly node: string, private readonly ttlMs: number,
    private readonly onTrouble: (error: Error, what: string) => void) {
    this.heartbeat = setInterval(() => this.beat(), Math.max(100, Math.floor(ttlMs / BEATS_PER_TTL)));
    this.heartbeat.unref();
  }

  private owner(workerId: string): Owner {
    let owner = this.owners.get(workerId);
    if (!owner) { owner = { name: workerId, lapses: 0, renewedAt: null }; this.owners.set(workerId, owner); }
    return owner;
  }

  private beats = 0;
  private grants = 0;
  /** ids of grants whose answer was lost: undone once the database answers */
  private readonly doubtful = new Set<string>();
  private undoing: Promise<void> | null = null;
  /** give-backs whose answer was lost: sent again, under their id, until the database answers */
  private readonly unsentReturns: unknown[][] = [];

  /** Renews this process's leases; every other beat also reaps leases of any node past their expiry. */
  private beat(): void {
    this.beats += 1;
    if (this.doubtful.size > 0 || this.unsentReturns.length > 0) {
      this.undoing ??= this.undoDoubtful().then(() => this.resendReturns()).finally(() => { this.undoing = null; });
    }
    if (this.beats % 2 === 0) this.reap().catch((error: Error) => this.onTrouble(error, 'reaping expired quota leases'));
    if (this.beats % PRUNE_EVERY_BEATS === 0) {
      this.pool.query(`DELETE FROM committed_batches WHERE committed_at < now() - interval '1 day'`).catch((error: Error) => this.onTrouble(error, 'pruning batch ids'));
      this.pool.query(`DELETE FROM lease_grants WHERE granted_at < now() - interval '1 day'`).catch((error: Error) => this.onTrouble(error, 'pruning grant ids'));
    }
    const owners = [...this.owners.values()].filter((owner) => owner.renewedAt !== null);
    if (owners.length === 0) return;
    const sentAt = Date.now();
    this.pool.query(RENEW_LEASES_SQL, [owners.map((owner) => owner.name), this.ttlMs])
      .then(() => { for (const owner of owners) if (owner.renewedAt !== null) owner.renewedAt = Math.max(owner.renewedAt, sentAt); },
        (error: Error) => this.onTrouble(error, 'renewing quota leases'));
  }

  heldUntil(workerId: string): number {
    const owner = this.owner(workerId);
    if (owner.renewedAt === null) return Number.POSITIVE_INFINITY;
    const until = owner.renewedAt + this.ttlMs * (1 - SAFETY_SHARE);
    if (until > Date.now()) return until;
    // Lapsed: the rows may be reaped any moment. They are left to expire; this worker goes on
    // under a new owner name, so nothing it takes from now on mixes with them.
    owner.lapses += 1;
    owner.name = `${workerId}~${owner.lapses}`;
    owner.renewedAt = null;
    return until;
  }

  async acquire(workerId: string, keyId: number | null, keyAsk: LeaseAsk, accountId: number, accountAsk: LeaseAsk): Promise<LeaseGrant | LeaseShortfall> {
    const owner = this.owner(workerId);
    const name = owner.name;
    const sentAt = Date.now();
    const grant = `${this.node}/${workerId}/${this.startedAt}/g${++this.grants}`;
    const { rows } = await this.pool.query<{ result: LeaseGrant | LeaseShortfall }>(
      'SELECT tollgate_acquire_once($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) AS result',
      [grant, name, this.node, this.ttlMs, keyId, keyAsk.need, keyAsk.extra, keyAsk.share, accountId, accountAsk.need, accountAsk.extra, accountAsk.share])
      .catch((error: Error) => {
        // an answer from the database means the transaction was rolled back; without one it may have committed
        if (error instanceof DatabaseError) throw error;
        this.doubtful.add(grant);
        this.undoing ??= this.undoDoubtful().finally(() => { this.undoing = null; });
        throw error instanceof GatewayError ? error : storeUnavailable(error);
      });
    const result = rows[0].result;
    if ('shortfall' in result) return result;
    if (owner.name !== name) {
      // the owner lapsed while this was on its way: what it granted stays with the old name and expires
      return { key: result.key ? { amount: 0, epoch: result.key.epoch } : null, account: { amount: 0, epoch: result.account.epoch } };
    }
    // The first grant starts the renewal clock; later grants renew only the rows they add to, so the
    // clock of the older rows stays with the heartbeats.
    owner.renewedAt ??= sentAt;
    return result;
  }

  /**
   * Undoes the grants whose answer was lost, one call each (applied once, whatever the order in
   * which the grant and its undo reach the database); those the database cannot take yet are
   * tried again at the next heartbeat.
   */
  private async undoDoubtful(): Promise<void> {
    for (const grant of [...this.doubtful]) {
      try {
        await this.pool.query('SELECT tollgate_undo_grant($1)', [grant]);
        this.doubtful.delete(grant);
      } catch (error) {
        this.onTrouble(error as Error, 'giving back a lease grant whose answer was lost (tried again with the next heartbeat)');
        return;
      }
    }
  }

  /**
   * One batch, applied exactly once. An error the database answered with (a DatabaseError)
   * means the transaction was rolled back: it is thrown, and the worker sends the charges again with
   * its next batch; one about the batch's content is thrown as BatchRefused (the worker drops it). Any other failure (the connection dropped, the answer never came) leaves it
   * unknown whether the batch was committed: it is sent again under the same id, which the database
   * applies at most once, until it gets an answer. Batches of one worker are committed in order.
   */
  async commit(workerId: string, charges: Charge[], usageGroups: UsageGroup[]): Promise<void> {
    const owner = this.owner(workerId).name;
    const batch = `${this.node}/${workerId}/${this.startedAt}/${++this.batches}`;
    const values = [owner, batch, JSON.stringify(charges.map((charge) => ({ k: charge.keyId, ke: charge.keyEpoch, a: charge.accountId, ae: charge.accountEpoch, q: charge.quota }))),
      joinRows(usageGroups)];
    for (let attempt = 0; ; attempt += 1) {
      try {
        await this.pool.query('SELECT tollgate_commit($1, $2, $3, $4)', values);
        return;
      } catch (error) {
        // a data exception or an integrity violation (SQLSTATE classes 22, 23) is about the batch's content
        if (error instanceof DatabaseError) throw /^2[23]/.test(error.code ?? '') ? new BatchRefused(error) : error;
        if (attempt === 0) this.onTrouble(error as Error, 'committing a billing batch (sent again until the database answers)');
        await new Promise((resolve) => setTimeout(resolve, Math.min(2_000, 100 * 2 ** Math.min(attempt, 5))));
      }
    }
  }

  /**
   * Gives back part of a lease, once per id. When the answer is lost (the worker has already taken
   * the amount out of its own books) it is sent again with the next heartbeats until the database
   * answers, so the row does not keep, for the worker's whole life, a slice nobody will draw on.
   */
  async giveBack(workerId: string, kind: 'k' | 'a', id: number, epoch: number, amount: number): Promise<void> {
    const values = [`${this.node}/${workerId}/${this.startedAt}/r${++this.grants}`, this.owner(workerId).name, kind, id, epoch, amount];
    try {
      await this.pool.query('SELECT tollgate_give_back_once($1, $2, $3, $4, $5, $6)', values);
    } catch (error) {
      if (error instanceof DatabaseError) throw error;
      this.unsentReturns.push(values);
      throw error;
    }
  }

  /** Sends the give-backs whose answer was lost again, in order, until the database answers. */
  private async resendReturns(): Promise<void> {
    while (this.unsentReturns.length > 0) {
      try {
        await this.pool.query('SELECT tollgate_give_back_once($1, $2, $3, $4, $5, $6)', this.unsentReturns[0]);
      } catch (error) {
        if (!(error instanceof DatabaseError)) {
          this.onTrouble(error as Error, 'giving back part of a lease whose answer was lost (sent again with the next heartbeat)');
          return;
        }
      }
      this.unsentReturns.shift();
    }
  }

  /** With a worker id: every lease of that worker (it is gone). Without: every lease past its expiry, of any node. */
  async reap(workerId?: string): Promise<number> {
    if (workerId === undefined) {
      const { rows } = await this.pool.query<{ reaped: number }>('SELECT tollgate_reap(NULL) AS reaped');
      return rows[0].reaped;
    }
    let reaped = 0;
    // the worker's rows under each name it used
    const { rows } = await this.pool.query<{ owner: string }>(`SELECT DISTINCT owner FROM leases WHERE owner = $1 OR owner LIKE $2`,
      [workerId, `${workerId.replace(/[\\%_]/g, '\\$&')}~%`]);
    for (const { owner } of rows) {
      const result = await this.pool.query<{ reaped: number }>('SELECT tollgate_reap($1) AS reaped', [owner]);
      reaped += result.rows[0].reaped;
    }
    return reaped;
  }

  async refundCharge(accountId: number, keyId: number, quota: number, record?: Omit<UsageRecord, 'id'>, keyEpoch?: number): Promise<void> {
    await this.pool.query('SELECT tollgate_refund($1, $2, $3, $4, $5)', [accountId, keyId, quota, record ? JSON.stringify(toUsageRow(record)) : null, keyEpoch ?? null]);
  }

  close(): void {
    clearInterval(this.heartbeat);
  }
}
