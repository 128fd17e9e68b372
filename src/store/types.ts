// The store seam: what the gateway asks of a store backend, whichever it is (LMDB in the data dir,
// or PostgreSQL + Redis for several nodes). Nothing outside src/store/ knows which one it talks to.
//
// Reads return `Awaitable<T>`: LMDB answers them synchronously from its memory map (the hot path
// stays free of promise hops there), a networked backend may answer with a promise. Callers that
// are not on the hot path simply `await`; the per-call lookups (key by digest, its account, the
// limits) test for a promise and only then chain.
import type { SealedValue } from '../auth/secrets';
import type { VideoTask } from '../formats/video';
import type { AccessScope, AccessTokenRecord, AccountRecord, KeyFields, KeyRecord, UsageGroup, UsageRecord } from './records';

export type Awaitable<T> = T | Promise<T>;

export function isPromise<T>(value: Awaitable<T>): value is Promise<T> {
  return typeof (value as { then?: unknown } | null | undefined)?.then === 'function';
}

/** Runs `next` on the value, at once when it is there, after it resolves otherwise. */
export function whenReady<T, R>(value: Awaitable<T>, next: (ready: T) => Awaitable<R>): Awaitable<R> {
  return isPromise(value) ? value.then(next) : next(value);
}

/** An access token as the admin API lists it: a public handle (a prefix of its digest), never the token. */
export interface AccessTokenView { id: string; scope: AccessScope; created_time: number }

/** Length of an access token's public handle (hex digits of its SHA-256 digest). */
export const TOKEN_HANDLE_LENGTH = 16;

/** The public handle of an access token's digest. */
export function tokenHandle(digestHex: string): string {
  return digestHex.slice(0, TOKEN_HANDLE_LENGTH);
}

/** Who acted: the admin API, the CLI on the box, or the supervisor (SIGHUP). */
export type AuditActor = 'admin-api' | 'cli' | 'supervisor';

export interface AuditInput {
  actor: AuditActor;
  /** dotted verb: account.create, account.topup, token.issue, reload, … */
  action: string;
  account_id: number | null;
  /** what the action did; never a secret */
  details: Record<string, unknown>;
}

export interface AuditEntry extends AuditInput {
  id: number;
  /** unix seconds */
  time: number;
}

export interface AuditFilter {
  action?: string;
  accountId?: number;
  /** unix seconds, inclusive */
  from?: number;
  to?: number;
}

/** The append-only audit log of operator actions: nothing updates or deletes an entry. */
export interface AuditStore {
  append(input: AuditInput): Promise<AuditEntry>;
  /** Newest first, filtered; at most 200,000 entries examined (`truncated` then). */
  list(filter: AuditFilter, page: number, pageSize: number): Awaitable<{ items: AuditEntry[]; total: number; truncated: boolean }>;
}

export interface AdminTokenRecord {
  /** unix seconds */
  created_time: number;
  /** who made it (cli, …); never the token */
  label: string;
}

/** Operator tokens for /api/admin/*, stored as SHA-256 digests. */
export interface AdminStore {
  addToken(digestHex: string, label: string): Promise<void>;
  resolveToken(digestHex: string): Awaitable<AdminTokenRecord | undefined>;
  /** Revokes every admin token; returns how many there were. */
  revokeTokens(): Promise<number>;
}

export interface AccountStore {
  create(name: string, group: string, balance: number): Promise<AccountRecord | 'exists'>;
  get(id: number): Awaitable<AccountRecord | undefined>;
  /** Hot path (every model call): the same as get; the record may be shared between callers: never modify it. */
  current(id: number): Awaitable<AccountRecord | undefined>;
  /** by numeric id or by name */
  find(reference: string): Awaitable<AccountRecord | undefined>;
  list(): Awaitable<AccountRecord[]>;
  /**
   * Adds `quota` to the balance; 'limit' (and no change) when the balance would pass MAX_BALANCE.
   * With `audit`, its entry (details plus balance_after) is appended in the same transaction and
   * its id returned as `audit_id`: a top-up is never without its entry nor an entry without it.
   */
  topUp(id: number, quota: number, audit?: AuditInput): Promise<(AccountRecord & { audit_id?: number }) | 'limit' | undefined>;
  /** True once; used to bootstrap the `admin` account exactly one time across processes and nodes. */
  claimBootstrap(): Promise<boolean>;
  addAccessToken(digestHex: string, accountId: number, scope: AccessScope): Promise<void>;
  resolveAccessToken(digestHex: string): Awaitable<AccessTokenRecord | undefined>;
  /** Revokes every access token of the account; returns how many were revoked. */
  revokeAccessTokens(accountId: number): Promise<number>;
  /** The account's access tokens by public handle, oldest first. */
  listAccessTokens(accountId: number): Awaitable<AccessTokenView[]>;
  /** Revokes the account's token with this public handle; false when it has none. */
  revokeAccessToken(accountId: number, handle: string): Promise<boolean>;
}

export interface KeyPage { items: KeyRecord[]; total: number }

export interface KeySecret { sealed: SealedValue; masked: string; digest: string }

export interface KeyStore {
  create(accountId: number, fields: KeyFields, secret: KeySecret, maxKeys: number): Promise<KeyRecord | 'limit'>;
  /** The key if it exists and belongs to the account. */
  get(accountId: number, id: number): Awaitable<KeyRecord | undefined>;
  /** Hot path: digest of the presented key → record (shared between callers: never modify it). */
  findByDigest(digest: string): Awaitable<KeyRecord | undefined>;
  /** The sealed value of one stored key (the oldest), if there is any key. */
  anySealed(): Awaitable<SealedValue | undefined>;
  byId(id: number): Awaitable<KeyRecord | undefined>;
  /** Newest first; `keyword` filters by case-insensitive substring of the name. */
  list(accountId: number, page: number, pageSize: number, keyword?: string): Awaitable<KeyPage>;
  /** Replaces the editable fields; a change of the cap starts a new lease epoch. */
  replace(accountId: number, id: number, fields: KeyFields): Promise<KeyRecord | undefined>;
  setStatus(accountId: number, id: number, status: 1 | 2): Promise<KeyRecord | undefined>;
  remove(accountId: number, id: number): Promise<boolean>;
}

export interface WindowHit { allowed: boolean; count: number; retryAfterSeconds: number }

/** What admission asks of the limits in one go: a request-rate window and a concurrency slot. */
export interface LimitAsk {
  /** requests per minute of the subject, 0 = off */
  rpm: number;
  /** concurrent requests of the subject, 0 = off */
  concurrency: number;
}

export type LimitVerdict =
  | { allowed: true; holdsSlot: boolean }
  | { allowed: false; limit: 'rate'; retryAfterSeconds: number }
  | { allowed: false; limit: 'concurrency' };

export interface CounterStore {
  /** Counts one hit in the current window of `bucket`; refuses (without counting) past `limit`. */
  hit(bucket: string, limit: number, windowSeconds: number): Awaitable<WindowHit>;
  /**
   * One call's admission of `subject` by `workerId`: a hit in its per-minute window (when rpm > 0),
   * then a concurrency slot (when concurrency > 0). A refused slot leaves the rate hit counted.
   */
  admit(subject: string, workerId: string, ask: LimitAsk): Awaitable<LimitVerdict>;
  /** Gives back a slot taken by admit; never awaited by a call. */
  releaseSlot(subject: string, workerId: string): void;
  /** Drops the slots of a worker that is gone. */
  dropWorkerSlots(workerId: string): Awaitable<void>;
  /** Forgets every concurrency slot of this gateway's own workers (supervisor start: none is in flight). */
  clearSlots(): Awaitable<void>;
  /**
   * A networked counter store (Redis) fails open when it cannot be reached: the checks that went
   * ahead unlimited so far, by limit (`rate_concurrency`, `reveal`), for the metrics. LMDB never does.
   */
  failedOpenChecks?(): Readonly<Record<string, number>>;
}

export interface LeaseAsk {
  /** at least this much, or nothing */
  need: number;
  /** beyond `need`, up to this much more … */
  extra: number;
  /** … but at most this share of what would remain free, so other workers keep theirs */
  share: number;
}

export interface LeaseGrant {
  key: { amount: number; epoch: number } | null;
  account: { amount: number; epoch: number };
}

export type LeaseShortfall = {
  shortfall: 'key' | 'account' | 'gone';
  /** free now (not leased to anyone) */
  available: number;
  /** leased to other workers: what they could give back */
  heldByOthers: number;
};

/**
 * A store's answer that it will never take a billing batch as it is (a value it cannot hold): sent
 * again, it would fail the same way. `cause` is the store's own error.
 */
export class BatchRefused extends Error {
  constructor(override readonly cause: unknown) { super('the store refused the billing batch'); }
}

export interface Charge {
  keyId: number;
  /** the key's cap the charge was taken under (its lease's epoch, or the key's for an unlimited key); -1: from no lease (a lapsed one) */
  keyEpoch: number;
  accountId: number;
  accountEpoch: number;
  quota: number;
}

export interface LedgerStore {
  /** A refund of an already committed charge (failed or timed-out video task), in one transaction. */
  refundCharge(accountId: number, keyId: number, quota: number, record?: Omit<UsageRecord, 'id'>, keyEpoch?: number): Promise<void>;
  /** Leases quota to a worker from the key (unless keyId is null) and the account: all or nothing. */
  acquire(workerId: string, keyId: number | null, keyAsk: LeaseAsk, accountId: number, accountAsk: LeaseAsk): Promise<LeaseGrant | LeaseShortfall>;
  /** Commits settled charges and their usage records in one transaction (never awaited by a response). */
  commit(workerId: string, charges: Charge[], usageGroups: UsageGroup[]): Promise<void>;
  /** Gives back unused lease (idle worker, shutdown). */
  giveBack(workerId: string, kind: 'k' | 'a', id: number, epoch: number, amount: number): Promise<void>;
  /** Returns every lease of a worker that is gone (or, without an id, of this gateway's previous run). */
  reap(workerId?: string): Awaitable<number>;
  /**
   * Until when (Date.now() scale) the leases this store granted to `workerId` are certainly still
   * held for it. LMDB: always (a lease is only ever returned by its worker or the supervisor). A
   * networked store: while its heartbeats reach the database; past this a worker draws on none.
   */
  heldUntil(workerId: string): number;
}

export interface UsageFilter {
  keyId?: number;
  model?: string;
  /** unix seconds, inclusive */
  from?: number;
  to?: number;
}

export interface UsagePage { items: UsageRecord[]; total: number; truncated: boolean }

export interface UsageStore {
  list(accountId: number, filter: UsageFilter, page: number, pageSize: number): Awaitable<UsagePage>;
  /**
   * Every record of the account that passes the filter, newest first, handed to `visit`; at most
   * MAX_SCAN (200,000) records are examined (`truncated` says when the scan stopped there).
   */
  scan(accountId: number, filter: UsageFilter, visit: (record: UsageRecord) => void): Awaitable<{ truncated: boolean }>;
  /** Sum of quota of every record of a key (tests and reconciliation). */
  sumForKey(accountId: number, keyId: number): Awaitable<{ quota: number; count: number }>;
}

/** A stored task: the public fields plus which of the channel's keys submitted it (tasks may be key-scoped upstream). */
export type StoredVideoTask = VideoTask & {
  channelKeyIndex?: number;
  /** the key's epoch (cap) its charge was taken under: a refund gives remain_quota back only under that cap (absent: tasks of older releases) */
  keyEpoch?: number;
};

export interface TaskRefund {
  record: Omit<UsageRecord, 'id'>;
}

export interface TaskStore {
  create(task: StoredVideoTask): Promise<void>;
  get(taskId: string): Awaitable<StoredVideoTask | undefined>;
  /** Open tasks, oldest first, at most `limit`. */
  listProcessing(limit?: number): Awaitable<StoredVideoTask[]>;
  /**
   * Stores the next state of a task that is still processing, and when it just ended as failed, the
   * refund of its charge, in one transaction. False (nothing written) when the stored task has
   * already ended, so two pollers can never finish or refund a task twice.
   */
  update(task: StoredVideoTask, refund?: TaskRefund): Promise<boolean>;
}

/**
 * Where a worker's billing batches go: LMDB hands them to a thread of the worker's own (its
 * commits block); a networked store commits them on its own connection.
 */
export interface BatchCommitter {
  commit(workerId: string, charges: Charge[], usage: UsageGroup[]): Promise<void>;
  close(): Promise<void>;
}

export interface BatchCommitterHooks {
  /** the committer's thread crashed and a new one took over (the writes in flight failed) */
  onRestart?: (error: Error) => void;
  /** the committer cannot go on: the worker should stop */
  onFatal?: (error: Error) => void;
}

export interface Store {
  /** which backend this is, for logs and `tollgate config` */
  readonly kind: 'lmdb' | 'postgres';
  readonly accounts: AccountStore;
  readonly keys: KeyStore;
  readonly counters: CounterStore;
  readonly ledger: LedgerStore;
  readonly usage: UsageStore;
  readonly tasks: TaskStore;
  readonly admin: AdminStore;
  readonly audit: AuditStore;
  /** A value sealed under the master secret at the first start, to check the secret against. */
  secretCheck(): Awaitable<SealedValue | undefined>;
  /** Keeps `value` as the secret check unless one is there already; resolves to the one kept. */
  claimSecretCheck(value: SealedValue): Promise<SealedValue>;
  /** A committer for one worker's billing batches (see BatchCommitter). */
  startBatchCommitter(hooks: BatchCommitterHooks): Promise<BatchCommitter>;
  /** Resolves when every write issued so far is committed. */
  flushed(): Promise<void>;
  close(): Promise<void>;
}
