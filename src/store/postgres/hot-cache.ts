// The per-call lookups (key by digest, its account) served from memory in every process, the way
// LMDB serves them from its memory map: a database round trip per call would cost more than the
// rest of the call. Each process LISTENs on `tollgate_changes`; the triggers of the schema announce
// every change of what is cached (status, allowlist, expiry, epoch, deletion …), from any node or
// the CLI, and the copy is dropped at once (a key's is read again at once): "disable a key → 401"
// holds across nodes within the notification's delivery (about a millisecond). While the listening connection is down every
// lookup reads the database; only when that fails too (PostgreSQL unreachable) is the last copy
// served, so calls covered by the leases a worker holds go on. The copies are dropped when the
// feed is back (changes may have been missed). Money columns are not announced: the cached records' balance, used_quota and
// remain_quota may lag; nothing on the call path reads them (the leases hold the money).
import { Client, type Pool } from 'pg';
import { storeUnavailable } from '../unavailable';
import type { AccountRecord, KeyRecord } from '../records';
import { ACCOUNT_COLUMNS, KEY_COLUMNS, accountOf, keyOf } from './rows';

/** Bounded: a cache simply starts over when full (the working set is the keys in use). */
const CACHE_LIMIT = 20_000;
/** An unknown digest is remembered this long (a creation anywhere forgets them all at once). */
const UNKNOWN_MS = 5_000;
const RECONNECT_MS = 500;

export class HotCache {
  private readonly keys = new Map<string, KeyRecord>();
  private readonly keyDigests = new Map<number, string>();
  private readonly unknown = new Map<string, number>();
  private readonly accounts = new Map<number, AccountRecord>();
  private readonly loadingKeys = new Map<string, Promise<KeyRecord | undefined>>();
  private readonly loadingAccounts = new Map<number, Promise<AccountRecord | undefined>>();
  /** bumped by every notification: a load that started before one is not kept */
  private generation = 0;
  private listener: Client | null = null;
  private live = false;
  private closed = false;
  private retry: NodeJS.Timeout | null = null;

  constructor(private readonly pool: Pool, private readonly url: string, private readonly onTrouble: (error: Error) => void) {}

  /** Starts listening; resolves once the first LISTEN is in place (or failed: then it retries). */
  async start(): Promise<void> {
    await this.listen().catch((error: Error) => { this.onTrouble(error); this.scheduleRetry(); });
  }

  private async listen(): Promise<void> {
    const client = new Client({ connectionString: this.url, application_name: 'tollgate-listen', keepAlive: true });
    client.on('notification', (message) => this.changed(message.payload ?? ''));
    const lost = (error?: Error) => {
      if (this.listener !== client) return;
      this.listener = null;
      this.goDark();
      if (error) this.onTrouble(error);
      client.end().catch(() => undefined);
      this.scheduleRetry();
    };
    client.on('error', lost);
    client.on('end', () => lost());
    await client.connect();
    if (this.closed) { await client.end(); return; }
    this.listener = client;
    await client.query('LISTEN tollgate_changes');
    // what was cached before (a reconnect) may have changed meanwhile
    this.forgetAll();
    this.live = true;
  }

  private scheduleRetry(): void {
    if (this.closed || this.retry) return;
    this.retry = setTimeout(() => {
      this.retry = null;
      this.listen().catch((error: Error) => { this.onTrouble(error); this.scheduleRetry(); });
    }, RECONNECT_MS);
    this.retry.unref();
  }

  /** The feed is down: nothing is trusted from memory, but the copies stay as a last resort. */
  private goDark(): void {
    this.live = false;
    this.generation += 1;
  }

  private forgetAll(): void {
    this.generation += 1;
    this.keys.clear();
    this.keyDigests.clear();
    this.unknown.clear();
    this.accounts.clear();
  }

  private changed(payload: string): void {
    this.generation += 1;
    const kind = payload[0];
    const id = Number(payload.slice(1));
    if (kind === 'n') this.unknown.clear();
    else if (kind === 'k') {
      const digest = this.keyDigests.get(id);
      if (digest !== undefined) {
        this.keys.delete(digest);
        // Read again at once (a read already on its way started before this change and is not
        // kept): a key in use is looked up by its next call, and by the calls in flight on it,
        // which follow a changed cap (Ledger.follow) and should find it in memory.
        this.loadingKeys.delete(digest);
        if (this.live) Promise.resolve(this.key(digest)).catch(() => undefined);
        else this.keyDigests.delete(id);
      }
    } else if (kind === 'a') this.accounts.delete(id);
  }

  /** Forgets a key at once in this process (its own writes; the notification follows for the others). */
  forgetKey(id: number): void { this.changed(`k${id}`); }
  forgetAccount(id: number): void { this.changed(`a${id}`); }

  key(digest: string): KeyRecord | undefined | Promise<KeyRecord | undefined> {
    if (this.live) {
      const hit = this.keys.get(digest);
      if (hit !== undefined) return hit;
      const unknownUntil = this.unknown.get(digest);
      if (unknownUntil !== undefined && unknownUntil > Date.now()) return undefined;
    }
    let loading = this.loadingKeys.get(digest);
    if (loading === undefined) {
      const generation = this.generation;
      loading = this.pool.query(`SELECT ${KEY_COLUMNS} FROM keys WHERE digest = $1`, [digest]).then(({ rows }) => {
        const record = rows.length ? keyOf(rows[0]) : undefined;
        if (this.live && generation === this.generation) {
          if (record) {
            if (this.keys.size >= CACHE_LIMIT) { this.keys.clear(); this.keyDigests.clear(); }
            this.keys.set(digest, record);
            this.keyDigests.set(record.id, digest);
          } else {
            if (this.unknown.size >= CACHE_LIMIT) this.unknown.clear();
            this.unknown.set(digest, Date.now() + UNKNOWN_MS);
          }
        }
        return record;
      }, (error: Error) => {
        const last = this.keys.get(digest);
        if (last !== undefined) return last;
        throw storeUnavailable(error);
      }).finally(() => { if (this.loadingKeys.get(digest) === loading) this.loadingKeys.delete(digest); });
      this.loadingKeys.set(digest, loading);
    }
    return loading;
  }

  account(id: number): AccountRecord | undefined | Promise<AccountRecord | undefined> {
    if (this.live) {
      const hit = this.accounts.get(id);
      if (hit !== undefined) return hit;
    }
    let loading = this.loadingAccounts.get(id);
    if (loading === undefined) {
      const generation = this.generation;
      loading = this.pool.query(`SELECT ${ACCOUNT_COLUMNS} FROM accounts WHERE id = $1`, [id]).then(({ rows }) => {
        const record = rows.length ? accountOf(rows[0]) : undefined;
        if (record && this.live && generation === this.generation) {
          if (this.accounts.size >= CACHE_LIMIT) this.accounts.clear();
          this.accounts.set(id, record);
        }
        return record;
      }, (error: Error) => {
        const last = this.accounts.get(id);
        if (last !== undefined) return last;
        throw storeUnavailable(error);
      }).finally(() => this.loadingAccounts.delete(id));
      this.loadingAccounts.set(id, loading);
    }
    return loading;
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.retry) clearTimeout(this.retry);
    const listener = this.listener;
    this.listener = null;
    this.goDark();
    this.forgetAll();
    await listener?.end().catch(() => undefined);
  }
}
