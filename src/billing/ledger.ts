// Worker-local money: reserve → settle → refund served from quota leases held in memory, so the
// request path almost never waits for a commit. A lease is taken from the store in an asynchronous
// transaction when the local slice runs low (ahead of need) or short; settled charges and usage records are committed
// in batches every few ms (never awaited by a response: charge-batches.ts). DESIGN §5.
import { GatewayError } from '../errors';
import type { Logger } from '../log';
import { isPromise, type AccountRecord, type Charge, type KeyRecord, type Store, type UsageGroup, type UsageRecord } from '../store';
import { ChargeBatches, DEFAULT_FLUSH_MS, type CommitBatch } from './charge-batches';

export const DEFAULT_IDLE_RETURN_MS = 2_000;
/** a lease asks for this many requests' worth beyond what is needed now … */
const LEASE_REQUESTS = 128;
/** … at most this much beyond 4 requests' worth (big per-call prices must not lock up a cap) … */
const LEASE_EXTRA_CAP = 500_000;
/** … and never more than a quarter of what remains free, so other workers keep their share */
const LEASE_SHARE = 0.25;
/** a reservation waits for at most this many lease growths before it gives up */
const MAX_GROW_ROUNDS = 4;
/** a key's record read this recently (by an admission or a settlement) is trusted at settlement without a read */
export const KEY_FRESH_MS = 20;
const KEYS_SEEN_LIMIT = 10_000;

class Lease {
  granted = 0;
  reserved = 0;
  pending = 0;
  lastUsed = Date.now();
  /** no longer vouched for by the store (see Ledger.checkHeld) */
  lapsed = false;
  constructor(readonly epoch: number) {}
  get available(): number { return this.granted - this.reserved - this.pending; }
}

export interface Reservation {
  readonly keyId: number;
  readonly accountId: number;
  /** the key as it was when its cap was last met: the call follows a cap changed while it runs (Ledger.follow) */
  key: KeyRecord;
  /** quota held for the call: what it was admitted with, plus any extension (see chargeable) */
  amount: number;
  /** the lease of `key`'s cap (null: unlimited) */
  keyLease: Lease | null;
  readonly accountLease: Lease;
  done: boolean;
}

/** A reservation's move to a changed cap's lease while that lease grows (see Ledger.follow). */
class Move {
  /** `ceiling`: the most the new cap can hold for the call (what its lease has and the key has free) */
  constructor(readonly promise: Promise<void>, readonly ceiling = Number.POSITIVE_INFINITY) {}
}

/** The newest epoch of a key this worker has read, and when it last read the key's record. */
class KeySeen {
  constructor(public epoch: number, public at: number) {}
}

/**
 * A key cap or balance too low: waiting does not help, so `x-should-retry: false` tells the SDKs
 * (openai, Anthropic, Claude Code, the Vercel AI SDK) not to retry, and no Retry-After is sent.
 */
export function insufficientQuota(message: string): GatewayError {
  return new GatewayError({ status: 429, type: 'insufficient_quota', code: 'insufficient_quota', message, headers: { 'x-should-retry': 'false' } });
}

export interface LedgerOptions {
  flushMs?: number;
  idleReturnMs?: number;
  /**
   * Where batches go. Default: this process commits them. A worker under the supervisor hands them
   * to its ledger writer thread (src/store/ledger-writer.ts), so its event loop never runs a commit.
   */
  commit?: CommitBatch;
  /** told of each committed batch and each lease granted (metrics) */
  observer?: { ledgerBatch(records: number, commitMs: number): void; leaseGrant(): void; refusal(kind: 'key_quota' | 'balance'): void };
  /**
   * Asks the other workers to give back the unused part of their leases on this key and account
   * (a request needs more than is free while they hold some). Resolves when they answered.
   */
  reclaim?: (keyId: number | null, accountId: number) => Promise<void>;
}

/** A lease growth found too little free quota; `reclaimable` when other workers hold enough. */
class Shortfall extends Error {
  constructor(readonly error: GatewayError, readonly reclaimable: boolean, readonly kind: 'key_quota' | 'balance' = 'balance') { super(error.message); }
}

export class Ledger {
  private readonly keyLeases = new Map<number, Lease>();
  private readonly accountLeases = new Map<number, Lease>();
  private readonly batches: ChargeBatches;
  private readonly idleTimer: NodeJS.Timeout;
  private readonly growing = new Map<string, Promise<void>>();
  /** quota wanted by the reservations waiting for a growth of a key/account pair (sizes the next one) */
  private readonly waitingDemand = new Map<string, number>();
  /** settlements waiting for their call to move to a changed cap's lease (see settle) */
  private readonly waiting = new Set<Promise<unknown>>();
  /** reservations on their way to a changed cap's lease (at most one move each; rare) */
  private readonly moves = new Map<Reservation, Move>();
  /** per key id: what this worker last read of the key (see follow) */
  private readonly keysSeen = new Map<number, KeySeen>();

  constructor(private readonly store: Store, private readonly workerId: string, private readonly log: Logger,
    private readonly options: LedgerOptions = {}) {
    const commit = options.commit ?? ((charges: Charge[], usage: UsageGroup[]) => store.ledger.commit(workerId, charges, usage));
    this.batches = new ChargeBatches(commit, log, options.flushMs ?? DEFAULT_FLUSH_MS, options.observer);
    this.idleTimer = setInterval(() => this.returnIdle(), options.idleReturnMs ?? DEFAULT_IDLE_RETURN_MS);
    this.idleTimer.unref();
  }

  /**
   * The worker's lease of `epoch` on a key or account, or of a newer epoch when it holds one. A newer
   * epoch (the owner changed the cap) starts a new lease: the store dropped the old slice with the
   * change, so it can no longer be drawn on. An older one comes from a record read before the change
   * (a call whose body was still arriving): the call draws on the lease of the cap in force, and the
   * lease is not replaced, which would leave its slice held in the store with nothing to return it.
   */
  private lease(map: Map<number, Lease>, id: number, epoch: number, now = Date.now()): Lease {
    let lease = map.get(id);
    if (!lease || lease.epoch < epoch) { lease = new Lease(epoch); map.set(id, lease); }
    lease.lastUsed = now;
    return lease;
  }

  /** Adds a grant to the lease of its epoch; a grant of an epoch older than the lease's was dropped by the store with the cap change. */
  private credit(map: Map<number, Lease>, id: number, grant: { amount: number; epoch: number }): void {
    const lease = this.lease(map, id, grant.epoch);
    if (lease.epoch === grant.epoch) lease.granted += grant.amount;
  }

  /**
   * Reserves `amount` quota on the key (unless unlimited) and the account; rejects with 429
   * insufficient_quota. Served from the local leases without I/O; when a lease runs short it grows
   * in an asynchronous transaction (never a synchronous one: that would stall the event loop behind
   * another commit's fsync), and a lease running low is topped up ahead of need.
   */
  async reserve(key: KeyRecord, account: AccountRecord, amount: number): Promise<Reservation> {
    return this.tryReserve(key, account, amount) ?? this.reserveGrowing(key, account, amount);
  }

  /** The reservation when the local leases cover it (the usual case, no I/O and no promise); null otherwise. */
  tryReserve(key: KeyRecord, account: AccountRecord, amount: number): Reservation | null {
    const now = Date.now();
    this.checkHeld(now);
    this.saw(key, now);
    const keyLease = key.unlimited_quota ? null : this.lease(this.keyLeases, key.id, key.epoch, now);
    const accountLease = this.lease(this.accountLeases, account.id, account.epoch, now);
    if ((keyLease !== null && keyLease.available < amount) || accountLease.available < amount) return null;
    if (keyLease) keyLease.reserved += amount;
    accountLease.reserved += amount;
    this.prefetch(key, account, keyLease, accountLease, amount);
    return { keyId: key.id, accountId: account.id, key, amount, keyLease, accountLease, done: false };
  }

  private async reserveGrowing(key: KeyRecord, account: AccountRecord, amount: number): Promise<Reservation> {
    // The demand of every reservation waiting on this pair sizes the next growth, so one growth
    // serves a burst of calls instead of each round serving a usual slice's worth.
    const flight = `${key.id}:${account.id}`;
    this.waitingDemand.set(flight, (this.waitingDemand.get(flight) ?? 0) + amount);
    try {
      return await this.reserveRounds(key, account, amount);
    } finally {
      const left = (this.waitingDemand.get(flight) ?? amount) - amount;
      if (left > 0) this.waitingDemand.set(flight, left); else this.waitingDemand.delete(flight);
    }
  }

  private async reserveRounds(key: KeyRecord, account: AccountRecord, amount: number): Promise<Reservation> {
    let reclaimed = false;
    for (let round = 0; ; round += 1) {
      this.checkHeld(Date.now());
      this.saw(key, Date.now());
      const keyLease = key.unlimited_quota ? null : this.lease(this.keyLeases, key.id, key.epoch);
      const accountLease = this.lease(this.accountLeases, account.id, account.epoch);
      const keyNeed = keyLease ? Math.max(0, amount - keyLease.available) : 0;
      const accountNeed = Math.max(0, amount - accountLease.available);
      if (keyNeed === 0 && accountNeed === 0) {
        if (keyLease) keyLease.reserved += amount;
        accountLease.reserved += amount;
        this.prefetch(key, account, keyLease, accountLease, amount);
        return { keyId: key.id, accountId: account.id, key, amount, keyLease, accountLease, done: false };
      }
      if (round >= MAX_GROW_ROUNDS) {
        this.options.observer?.refusal(accountNeed > 0 ? 'balance' : 'key_quota');
        throw insufficientQuota(`quota could not be reserved for this request (${amount} needed) while other requests hold it; retry`);
      }
      try {
        await this.grow(key, account, keyLease, accountLease, keyNeed, accountNeed, amount);
      } catch (error) {
        if (!(error instanceof Shortfall)) throw error;
        // Other workers hold enough in their leases: ask them for the unused part, then try again.
        if (!error.reclaimable || reclaimed || !this.options.reclaim) {
          this.options.observer?.refusal(error.kind);
          throw error.error;
        }
        reclaimed = true;
        await this.options.reclaim(keyLease ? key.id : null, account.id);
      }
    }
  }

  /**
   * A networked store vouches for a worker's leases only while its heartbeats reach the database
   * (store.ledger.heldUntil); past that they may be reclaimed by other nodes, so none is drawn on
   * any more. Calls in flight settle as usual, their charges taken from no lease (committedCharge);
   * new ones take new leases.
   */
  private checkHeld(now: number): void {
    if (now < this.store.ledger.heldUntil(this.workerId)) return;
    if (this.keyLeases.size > 0 || this.accountLeases.size > 0) this.log.warn('quota leases could not be renewed in time; taking new ones');
    for (const lease of this.keyLeases.values()) lease.lapsed = true;
    for (const lease of this.accountLeases.values()) lease.lapsed = true;
    this.keyLeases.clear();
    this.accountLeases.clear();
  }

  /** Gives back the unused part of this worker's leases on a key and an account (another worker needs it). */
  async returnUnused(keyId: number | null, accountId: number): Promise<void> {
    const returns: Promise<void>[] = [];
    for (const [kind, map, id] of [['k', this.keyLeases, keyId], ['a', this.accountLeases, accountId]] as const) {
      if (id === null) continue;
      const lease = map.get(id);
      if (!lease || lease.available <= 0) continue;
      const amount = lease.available;
      lease.granted -= amount;
      returns.push(this.store.ledger.giveBack(this.workerId, kind, id, lease.epoch, amount));
    }
    await Promise.all(returns);
  }

  /** One lease growth per key/account pair at a time; concurrent callers wait for it and re-check. */
  private grow(key: KeyRecord, account: AccountRecord, keyLease: Lease | null, accountLease: Lease,
    keyNeed: number, accountNeed: number, amount: number): Promise<void> {
    const flight = `${key.id}:${account.id}`;
    const running = this.growing.get(flight);
    if (running) return running.then(() => undefined, () => undefined);
    const extra = Math.max(amount * 4, Math.min(amount * LEASE_REQUESTS, LEASE_EXTRA_CAP), this.waitingDemand.get(flight) ?? 0);
    const growth = this.store.ledger.acquire(this.workerId,
      keyLease && (keyNeed > 0 || keyLease.available < extra / 2) ? key.id : null, { need: keyNeed, extra, share: LEASE_SHARE },
      account.id, { need: accountNeed, extra, share: LEASE_SHARE },
    ).then((grant) => {
      if ('shortfall' in grant) {
        const need = grant.shortfall === 'key' ? keyNeed : accountNeed;
        const reclaimable = grant.available + grant.heldByOthers >= need;
        if (grant.shortfall === 'key') {
          throw new Shortfall(insufficientQuota(`this key's quota is too low for this request: it has ${(keyLease?.available ?? 0) + grant.available} quota left and this request needs up to ${amount}; raise the key's remain_quota or make the request smaller (max_tokens, n)`), reclaimable, 'key_quota');
        }
        if (grant.shortfall === 'account') {
          throw new Shortfall(insufficientQuota(`the account balance is too low for this request: ${accountLease.available + grant.available} quota left and this request needs up to ${amount}; top up the account or make the request smaller (max_tokens, n)`), reclaimable);
        }
        throw new GatewayError({ status: 401, type: 'invalid_request_error', code: 'invalid_api_key', message: 'Invalid token.' });
      }
      this.options.observer?.leaseGrant();
      if (grant.key) this.credit(this.keyLeases, key.id, grant.key);
      this.credit(this.accountLeases, account.id, grant.account);
    }).finally(() => this.growing.delete(flight));
    this.growing.set(flight, growth);
    return growth;
  }

  /** A lease under half its usual slice is topped up in the background, so requests rarely wait. */
  private prefetch(key: KeyRecord, account: AccountRecord, keyLease: Lease | null, accountLease: Lease, amount: number): void {
    const low = Math.max(amount * 4, Math.min(amount * LEASE_REQUESTS, LEASE_EXTRA_CAP)) / 2;
    if ((keyLease === null || keyLease.available >= low) && accountLease.available >= low) return;
    if (this.growing.has(`${key.id}:${account.id}`)) return;
    this.grow(key, account, keyLease, accountLease, 0, 0, amount).catch(() => undefined);
  }

  /**
   * What a call whose usage prices at `quota` may be charged: at most its reservation, which first
   * grows from the room left in this worker's leases (synchronously, no I/O) when the usage is more
   * than was reserved. A charge is never more than is reserved, so no cap is passed and no balance
   * is driven below zero; usage beyond the reservation and the leases' room is not charged. A cap
   * changed while the call runs bounds it from then on (follow).
   */
  chargeable(reservation: Reservation, quota: number): number {
    if (reservation.done) return Math.min(quota, reservation.amount);
    if (!this.follow(reservation, reservation.amount)) return Math.min(quota, reservation.amount, this.ceiling(reservation));
    return this.extended(reservation, quota);
  }

  /** chargeable() on a reservation known to draw on the cap in force. */
  private extended(reservation: Reservation, quota: number): number {
    if (quota <= reservation.amount) return quota;
    const { keyLease, accountLease } = reservation;
    // a lease the worker no longer holds (the cap changed since, or it lapsed) is not drawn on any further
    const current = (keyLease === null || this.keyLeases.get(reservation.keyId) === keyLease)
      && this.accountLeases.get(reservation.accountId) === accountLease;
    const room = current ? Math.min(keyLease?.available ?? Number.POSITIVE_INFINITY, accountLease.available) : 0;
    const extra = Math.max(0, Math.min(quota - reservation.amount, room));
    if (extra > 0) {
      if (keyLease) keyLease.reserved += extra;
      accountLease.reserved += extra;
      reservation.amount += extra;
    }
    return reservation.amount;
  }

  /**
   * True when the reservation draws on its key's cap in force. The owner may change the cap while
   * the call runs (a PUT of remain_quota or unlimited_quota starts a new epoch, and the store drops
   * the old leases with it): the reservation then moves to this worker's lease of the new cap, at
   * most `need` of it (what the call can still be charged). When that lease holds too little, it
   * grows in the background (a Move) and this answers false until it has, with the most the new
   * cap can hold as the move's ceiling (a stream past it is cut at once); a new cap
   * with less free than `need` leaves the reservation at what it has. So a call in flight is
   * charged from the new cap, never past it.
   */
  private follow(reservation: Reservation, need: number): boolean {
    if (this.moves.size > 0 && this.moves.has(reservation)) return false;
    // A read of the key is a read transaction of its own in this event-loop turn (LMDB renews one
    // per turn), so a record read in the last KEY_FRESH_MS, by an admission or a settlement, stands
    // for it: a busy key is not read again at each settlement, and a change reaches it through the
    // next admission, which reads the key.
    const now = Date.now();
    const seen = this.keysSeen.get(reservation.keyId);
    if (seen !== undefined && seen.epoch === reservation.key.epoch && now - seen.at < KEY_FRESH_MS) return true;
    const found = this.store.keys.findByDigest(reservation.key.digest);
    if (found !== undefined && !isPromise(found)) this.saw(found, now);
    if (found === reservation.key) return true;
    if (isPromise(found)) {
      // The record is being read (a networked store's copy was dropped by a change): follow once it
      // is here. A read that fails (the database out of reach) leaves the call on the lease it has.
      this.moves.set(reservation, new Move(found.then((key) => {
        this.moves.delete(reservation);
        if (key === undefined) return;
        this.saw(key, Date.now());
        if (!this.follow(reservation, need)) return this.moves.get(reservation)?.promise;
      }, () => {
        // the store reports its own trouble; one line per call here would only repeat it
        this.moves.delete(reservation);
      })));
      return false;
    }
    // a deleted key: the call ends on the lease it has
    if (found === undefined) return true;
    if (found.epoch === reservation.key.epoch) { reservation.key = found; return true; }
    if (found.unlimited_quota) { this.moveTo(reservation, found, null, reservation.amount); return true; }
    const lease = this.lease(this.keyLeases, found.id, found.epoch);
    const wanted = Math.min(need, reservation.amount);
    if (lease.available >= wanted) { this.moveTo(reservation, found, lease, wanted); return true; }
    const growth = this.store.ledger.acquire(this.workerId, found.id, { need: 0, extra: wanted - lease.available, share: 1 },
      reservation.accountId, { need: 0, extra: 0, share: 0 })
      .then((grant) => {
        if (!('shortfall' in grant) && grant.key) this.credit(this.keyLeases, found.id, grant.key);
      })
      .catch((error: unknown) => this.log.warn({ err: error, key_id: found.id }, 'a lease under a changed cap could not be taken; the call moves to what the worker holds'))
      .then(() => {
        this.moves.delete(reservation);
        const current = this.lease(this.keyLeases, found.id, found.epoch);
        if (current.epoch === found.epoch) this.moveTo(reservation, found, current, Math.min(wanted, Math.max(0, current.available)));
      });
    this.moves.set(reservation, new Move(growth, lease.available + Math.max(0, found.remain_quota - found.leased)));
    return false;
  }

  /** Notes a read of `key`'s record: its epoch, when it is the newest seen, and the time. */
  private saw(key: KeyRecord, now: number): void {
    const seen = this.keysSeen.get(key.id);
    if (seen === undefined) {
      if (this.keysSeen.size >= KEYS_SEEN_LIMIT) this.keysSeen.clear();
      this.keysSeen.set(key.id, new KeySeen(key.epoch, now));
    } else if (key.epoch >= seen.epoch) {
      seen.epoch = key.epoch;
      seen.at = now;
    }
  }

  /** The reservation leaves its old key lease for `lease` (null: unlimited), holding `amount`; what it held beyond goes back to the account lease. */
  private moveTo(reservation: Reservation, key: KeyRecord, lease: Lease | null, amount: number): void {
    if (reservation.keyLease) reservation.keyLease.reserved -= reservation.amount;
    reservation.accountLease.reserved -= reservation.amount - amount;
    if (lease) lease.reserved += amount;
    reservation.keyLease = lease;
    reservation.key = key;
    reservation.amount = amount;
  }

  /**
   * The call is over: charge `quota` (at most what chargeable allows) and record it; returns the
   * quota charged. `record` says what was charged: its quota is set to it, and its end reason to
   * `quota_bounded` when that is less than `quota`. A call whose key's cap changed while it ran,
   * and whose lease of the new cap must grow first, is charged once it has; the answer then shows
   * the bound known now.
   */
  settle(reservation: Reservation, quota: number, record: Omit<UsageRecord, 'id'>): number {
    if (reservation.done) return 0;
    if (!this.follow(reservation, quota)) {
      reservation.done = true;
      const booked = this.waitForMove(reservation).then(() => { this.book(reservation, quota, record); });
      this.waiting.add(booked);
      void booked.finally(() => this.waiting.delete(booked));
      return Math.min(quota, reservation.amount, this.ceiling(reservation));
    }
    reservation.done = true;
    return this.book(reservation, quota, record);
  }

  private async waitForMove(reservation: Reservation): Promise<void> {
    for (let move = this.moves.get(reservation); move !== undefined; move = this.moves.get(reservation)) await move.promise;
  }

  /** The most a reservation on its way to a changed cap's lease may be charged until it is there. */
  private ceiling(reservation: Reservation): number {
    return this.moves.get(reservation)?.ceiling ?? Number.POSITIVE_INFINITY;
  }

  private book(reservation: Reservation, quota: number, record: Omit<UsageRecord, 'id'>): number {
    const charged = this.extended(reservation, quota);
    if (charged < quota) Object.assign(record, { quota: charged, end_reason: 'quota_bounded' });
    else record.quota = charged;
    quota = charged;
    const { keyLease, accountLease } = reservation;
    if (keyLease) { keyLease.reserved -= reservation.amount; keyLease.pending += quota; }
    accountLease.reserved -= reservation.amount;
    accountLease.pending += quota;
    // the key's epoch names the cap the charge was taken under (the store counts one of an older cap as spent before it)
    const keyEpoch = keyLease?.epoch ?? reservation.key.epoch;
    this.batches.add({ keyId: reservation.keyId, keyEpoch, accountId: reservation.accountId, accountEpoch: accountLease.epoch, quota },
      keyLease, accountLease, record);
    return quota;
  }

  /** The call failed before anything billable happened. */
  refund(reservation: Reservation): void {
    if (reservation.done) return;
    reservation.done = true;
    if (!this.moves.has(reservation)) { this.release(reservation); return; }
    // a move to a changed cap's lease is on its way: give back what it holds once it is there
    const released = this.waitForMove(reservation).then(() => this.release(reservation));
    this.waiting.add(released);
    void released.finally(() => this.waiting.delete(released));
  }

  private release(reservation: Reservation): void {
    if (reservation.keyLease) reservation.keyLease.reserved -= reservation.amount;
    reservation.accountLease.reserved -= reservation.amount;
  }

  /**
   * Commits everything settled so far (a settlement waiting for a changed cap's lease included);
   * resolves when it is durable. A commit that failed is logged and its batch goes again with the
   * next one, unless the store refused its content (see refused).
   */
  flush(): Promise<void> {
    if (this.waiting.size > 0) return Promise.allSettled([...this.waiting]).then(() => this.flush());
    return this.batches.flush();
  }

  /** flush(), rejecting with the store's error when the batch holding what was settled could not be committed. */
  async committed(): Promise<void> {
    await this.flush();
    if (this.batches.lastFailure !== null) throw this.batches.lastFailure;
  }

  private returnIdle(now = Date.now(), all = false): Promise<void>[] {
    const returns: Promise<void>[] = [];
    const idleMs = this.options.idleReturnMs ?? DEFAULT_IDLE_RETURN_MS;
    for (const [kind, map] of [['k', this.keyLeases], ['a', this.accountLeases]] as const) {
      for (const [id, lease] of map) {
        if (lease.reserved > 0 || lease.pending > 0 || (!all && now - lease.lastUsed < idleMs)) continue;
        map.delete(id);
        if (lease.granted > 0) {
          returns.push(this.store.ledger.giveBack(this.workerId, kind, id, lease.epoch, lease.granted)
            .catch((error: unknown) => this.log.warn({ err: error }, 'returning a lease failed; the supervisor reaps it')));
        }
      }
    }
    return returns;
  }

  /** Resolves when no lease growth is in flight (a top-up may have started in the background). */
  async whenIdle(): Promise<void> {
    while (this.growing.size > 0 || this.waiting.size > 0) await Promise.allSettled([...this.growing.values(), ...this.waiting]);
  }

  /** Flush, then give every unused lease back. */
  async close(): Promise<void> {
    clearInterval(this.idleTimer);
    await this.whenIdle();
    await this.flush();
    await Promise.all(this.returnIdle(Date.now(), true));
  }
}
