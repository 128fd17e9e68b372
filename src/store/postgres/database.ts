// The only module family that imports pg. A pool per process; bigint columns (quota, ids) read as
// numbers: every amount stays below 2^53 (MAX_BALANCE, the key cap bound), so none is rounded.
import { Pool, types, type PoolClient, type PoolConfig } from 'pg';

const INT8 = 20;

function parserFor(oid: number, format?: string): (value: string) => unknown {
  if (oid === INT8) return Number;
  return types.getTypeParser(oid, (format ?? 'text') as 'text');
}

const numberTypes = { getTypeParser: parserFor as unknown as typeof types.getTypeParser };

export function openPool(url: string, max: number, applicationName: string): Pool {
  const options: PoolConfig = {
    connectionString: url, max, types: numberTypes, application_name: applicationName,
    // a database that does not answer fails the query (and the call asking) instead of hanging it
    connectionTimeoutMillis: 5_000, idleTimeoutMillis: 30_000, keepAlive: true,
  };
  const pool = new Pool(options);
  // an idle client losing its connection must not crash the process; the next query reconnects
  pool.on('error', () => undefined);
  return pool;
}

/** Runs `work` in one transaction on one connection of the pool. */
export async function inTransaction<T>(pool: Pool, work: (client: PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const result = await work(client);
    await client.query('COMMIT');
    return result;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
}
