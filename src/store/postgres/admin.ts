// What `tollgate migrate` does on a database: apply the schema migrations, or copy a single box's
// LMDB data dir into it (import-lmdb.ts). Each opens and closes its own small pool.
import { openPool } from './database';
import { migrateDatabase } from './index';
import { importLmdb, NonEmptyTarget, type ImportResult } from './import-lmdb';

export { NonEmptyTarget };

/** Applies the migrations the database at `url` lacks; the versions applied (none: it was current). */
export async function applyMigrations(url: string): Promise<number[]> {
  const pool = openPool(url, 1, 'tollgate-migrate');
  try { return await migrateDatabase(pool); } finally { await pool.end(); }
}

export async function copyLmdbToPostgres(dataDir: string, url: string, force: boolean): Promise<ImportResult> {
  const pool = openPool(url, 1, 'tollgate-migrate');
  try { return await importLmdb(dataDir, pool, force); } finally { await pool.end(); }
}
