// The only module family that imports pg. A pool per process; bigint columns (quota, ids) read as
// numbers: every amount stays below 2^53 (MAX_BALANCE, the key cap bound), so none is rounded.
import { DatabaseError, Pool, types, type PoolClient, type PoolConfig } from 'pg';
import { storeUnavailable } from '../unavailable';

const INT8 = 20;

function parserFor(oid: number, format?: string): (value: string) => unknown {
  if (oid === INT8) return Number;
  return types.getTypeParser(oid, (format ?? 'text') as 'text');
}

const numberTypes = { getTypeParser: parserFor as unknown as typeof types.getTypeParser };

/** Socket errors of a database that cannot be reached (or went away mid-statement). */
const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN']);

/**
 * True for a failure that says the database is out of reach rather than answering the statement:
 * the driver's own connection errors, a socket error, or the server's connection-exception (08…),
 * shutting-down (57P01–57P03) and too-many-connections (53300) answers.
 */
export function isUnreachable(error: unknown): boolean {
  if (error instanceof DatabaseError) return error.code !== undefined && (error.code.startsWith('08') || /^57P0[123]$/.test(error.code) || error.code === '53300');
  if (!(error instanceof Error)) return false;
  const code = (error as NodeJS.ErrnoException).code;
  return (code !== undefined && NETWORK_CODES.has(code))
    || /Connection terminated|timeout exceeded when trying to connect|Connection ended|connection error|not queryable/i.test(error.message);
}

/** `error` as the 503 store_unavailable a caller answers with when the database is out of reach; itself otherwise. */
function unavailableOr(error: unknown): unknown {
  return isUnreachable(error) ? storeUnavailable(error as Error) : error;
}

export function openPool(url: string, max: number, applicationName: string): Pool {
  const options: PoolConfig = {
    connectionString: url, max, types: numberTypes, application_name: applicationName,
    // a database that does not answer fails the query (and the call asking) instead of hanging it
    connectionTimeoutMillis: 5_000, idleTimeoutMillis: 30_000, keepAlive: true,
  };
  const pool = new Pool(options);
  // an idle client losing its connection must not crash the process; the next query reconnects
  pool.on('error', () => undefined);
  // every statement and checkout of the pool: a database out of reach is a 503 for whoever asked
  // (key API, usage log, …), never a 500 carrying the driver's message
  const query = pool.query.bind(pool) as (...args: unknown[]) => Promise<unknown>;
  pool.query = ((...args: unknown[]) => query(...args).catch((error: unknown) => { throw unavailableOr(error); })) as typeof pool.query;
  const connect = pool.connect.bind(pool) as (...args: unknown[]) => Promise<PoolClient> | undefined;
  // the callback form (pool.query uses it inside) passes through as it is
  pool.connect = ((...args: unknown[]) => args.length > 0 ? connect(...args)
    : connect()!.catch((error: unknown) => { throw unavailableOr(error); })) as typeof pool.connect;
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
