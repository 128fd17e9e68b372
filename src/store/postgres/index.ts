// The PostgreSQL + Redis backend, for several gateway nodes on one database: PostgreSQL holds what
// must be durable (accounts, access tokens, keys, leases, usage records, video tasks), Redis what is
// hot and may be lost (rate-limit windows, concurrency slots, the reveal limit; src/store/redis/).
import { PostgresAdmin, PostgresAudit } from './operations';
import { hostname } from 'node:os';
import { redactedUrl } from '../../config-store';
import { GatewayError } from '../../errors';
import type { Pool } from 'pg';
import type { SealedValue } from '../../auth/secrets';
import { RedisCounters } from '../redis/limits';
import type { BatchCommitter, Store } from '../types';
import { PostgresAccounts } from './accounts';
import { openPool } from './database';
import { HotCache } from './hot-cache';
import { PostgresKeys } from './keys';
import { PostgresLedger } from './ledger';
import { migrate } from './schema';
import { PostgresTasks } from './tasks';
import { PostgresUsage } from './usage';

export interface PostgresStoreOptions {
  url: string;
  poolSize: number;
  leaseTtlMs: number;
  redis: { url: string; prefix: string; timeoutMs: number };
  /** trouble the store works around (a lost connection, limits failing open): logged by the caller */
  warn: (message: string, error: Error) => void;
}

const SECRET_CHECK = 'secret_check';

interface StoredSealed { iv: string; tag: string; data: string }

/** This process's node: the host and the supervisor's pid (the workers' parent). */
function nodeName(): string {
  const supervisor = process.env.TOLLGATE_ROLE === 'worker' ? process.ppid : process.pid;
  return `${hostname()}#${supervisor}`;
}

/** Applies the schema migrations this database lacks; the versions applied. */
export async function migrateDatabase(pool: Pool): Promise<number[]> {
  const client = await pool.connect();
  try { return await migrate(client); } finally { client.release(); }
}

export class PostgresStore implements Store {
  readonly kind = 'postgres' as const;
  readonly accounts: PostgresAccounts;
  readonly keys: PostgresKeys;
  readonly counters: RedisCounters;
  readonly ledger: PostgresLedger;
  readonly usage: PostgresUsage;
  readonly tasks: PostgresTasks;
  readonly admin: PostgresAdmin;
  readonly audit: PostgresAudit;
  private closed = false;

  private constructor(readonly pool: Pool, private readonly cache: HotCache, options: PostgresStoreOptions) {
    this.accounts = new PostgresAccounts(pool, cache);
    this.keys = new PostgresKeys(pool, cache);
    this.counters = new RedisCounters({ ...options.redis, onFailOpen: (what, error) => options.warn(`Redis unavailable: ${what} fail open (calls go ahead unlimited)`, error) });
    this.ledger = new PostgresLedger(pool, nodeName(), options.leaseTtlMs, (error, what) => options.warn(`PostgreSQL: ${what} failed`, error));
    this.usage = new PostgresUsage(pool);
    this.tasks = new PostgresTasks(pool);
    this.admin = new PostgresAdmin(pool);
    this.audit = new PostgresAudit(pool);
  }

  /** Connects, applies missing migrations, starts listening for changes. */
  static async open(options: PostgresStoreOptions): Promise<PostgresStore> {
    const pool = openPool(options.url, options.poolSize, 'tollgate');
    try {
      await migrateDatabase(pool);
    } catch (error) {
      await pool.end().catch(() => undefined);
      // at start the operator needs the driver's reason (refused, timed out …), not a call's 503
      const cause = error instanceof GatewayError ? (error as { cause?: Error }).cause : undefined;
      throw cause ? new Error(`PostgreSQL at ${redactedUrl(options.url)} cannot be reached: ${cause.message}`) : error;
    }
    const cache = new HotCache(pool, options.url, (error) => options.warn('PostgreSQL: the change feed was lost; per-call lookups read the database until it is back', error));
    await cache.start();
    const store = new PostgresStore(pool, cache, options);
    await store.counters.ready();
    return store;
  }

  async secretCheck(): Promise<SealedValue | undefined> {
    const { rows } = await this.pool.query<{ value: StoredSealed }>('SELECT value FROM tollgate_meta WHERE name = $1', [SECRET_CHECK]);
    if (!rows.length) return undefined;
    const { iv, tag, data } = rows[0].value;
    return { iv: Buffer.from(iv, 'base64'), tag: Buffer.from(tag, 'base64'), data: Buffer.from(data, 'base64') };
  }

  async claimSecretCheck(value: SealedValue): Promise<SealedValue> {
    const stored: StoredSealed = {
      iv: Buffer.from(value.iv).toString('base64'), tag: Buffer.from(value.tag).toString('base64'), data: Buffer.from(value.data).toString('base64'),
    };
    await this.pool.query('INSERT INTO tollgate_meta (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING', [SECRET_CHECK, JSON.stringify(stored)]);
    return (await this.secretCheck())!;
  }

  /** PostgreSQL commits asynchronously on its own connections: a worker commits its batches itself. */
  async startBatchCommitter(): Promise<BatchCommitter> {
    return {
      commit: (workerId, charges, usage) => this.ledger.commit(workerId, charges, usage),
      close: async () => undefined,
    };
  }

  /** Every write is committed when its promise resolves. */
  async flushed(): Promise<void> {}

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.ledger.close();
    await this.counters.close();
    await this.cache.close();
    await this.pool.end();
  }
}
