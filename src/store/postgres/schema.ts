// The PostgreSQL schema as versioned migrations, applied in order at start (every node and the CLI
// run `migrate`; an advisory lock lets one of them apply, the others then find nothing to do) or by
// `tollgate migrate`. A migration is never edited once released: a change is a new version.
//
// Money is kept in bigint quota units. Lease bookkeeping mirrors the LMDB store: `leased` on a key
// or account is what all workers of all nodes hold, one `leases` row per holder and owner (worker)
// with its node and the expiry its heartbeats keep alive; the functions of the migrations
// (schema-v1.ts, schema-changes.ts) keep, per statement,
//   key:     leased ≤ remain_quota (capped keys),  remain_quota ≥ 0
//   account: leased ≤ balance,                     balance ≥ 0.
import type { PoolClient } from 'pg';
import { V1_SQL } from './schema-v1';
import { V2_BATCH_IDS, V3_OPERATIONS, V4_GRANT_IDS, V5_GIVE_BACK_IDS, V6_LOCK_ORDER, V7_CAP_EPOCHS, V8_REFUND_EPOCHS } from './schema-changes';

export interface Migration { version: number; name: string; sql: string }

/**
 * The heartbeat: renews every lease of the given owners ($1) for $2 ms, locking the rows in the
 * order of V6_LOCK_ORDER in schema-changes.ts (keys' leases by holder id, then accounts', 'k' > 'a').
 */
export const RENEW_LEASES_SQL = `UPDATE leases SET expires_at = now() + $2 * interval '1 millisecond'
  FROM (SELECT kind, holder_id, owner FROM leases WHERE owner = ANY($1) ORDER BY kind DESC, holder_id, owner FOR UPDATE) AS mine
  WHERE leases.kind = mine.kind AND leases.holder_id = mine.holder_id AND leases.owner = mine.owner`;

export const MIGRATIONS: readonly Migration[] = [
  { version: 1, name: 'accounts, access tokens, keys, leases, usage records, video tasks', sql: V1_SQL },
  { version: 2, name: 'idempotent batch commits', sql: V2_BATCH_IDS },
  { version: 3, name: 'admin tokens, audit log', sql: V3_OPERATIONS },
  { version: 4, name: 'lease grant ids (a grant whose answer was lost is undone)', sql: V4_GRANT_IDS },
  { version: 5, name: 'give-back ids (a give-back whose answer was lost is sent again)', sql: V5_GIVE_BACK_IDS },
  { version: 6, name: 'one lock order for leases (an acquisition renews only what it takes)', sql: V6_LOCK_ORDER },
  { version: 7, name: 'a charge under an older cap of its key leaves the new remain_quota as set', sql: V7_CAP_EPOCHS },
  { version: 8, name: 'a refund of a charge under an older cap of its key leaves remain_quota as set', sql: V8_REFUND_EPOCHS },
];

/** Applies the migrations this database lacks, under an advisory lock; returns the versions applied. */
export async function migrate(client: PoolClient): Promise<number[]> {
  await client.query('SELECT pg_advisory_lock(7270115)');
  try {
    await client.query('CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())');
    const { rows } = await client.query<{ version: number }>('SELECT version FROM schema_migrations');
    const have = new Set(rows.map((row) => Number(row.version)));
    const newest = Math.max(0, ...have);
    const known = MIGRATIONS[MIGRATIONS.length - 1].version;
    if (newest > known) throw new Error(`the database has schema version ${newest}; this Tollgate knows versions up to ${known}: upgrade Tollgate`);
    const applied: number[] = [];
    for (const migration of MIGRATIONS) {
      if (have.has(migration.version)) continue;
      await client.query('BEGIN');
      try {
        await client.query(migration.sql);
        await client.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [migration.version, migration.name]);
        await client.query('COMMIT');
      } catch (error) {
        await client.query('ROLLBACK');
        throw error;
      }
      applied.push(migration.version);
    }
    return applied;
  } finally {
    await client.query('SELECT pg_advisory_unlock(7270115)');
  }
}
