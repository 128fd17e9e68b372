// One undici Pool per upstream origin and connect timeout, created on first use and shared by every
// request of the process (channels on one origin with different connect_ms get their own pool). request() with pipelining 1 and keep-alive; never the global fetch (far costlier per request; DESIGN §6).
import { Pool } from './undici-parts';

export interface PoolOptions { connectMs: number }

/**
 * Connections to one origin, per worker. HTTP/1.1 holds a connection for each open stream, so this
 * bounds the streams a worker can have open to one upstream at once (more wait in undici's queue).
 */
export const MAX_CONNECTIONS_PER_ORIGIN = 4096;

export class UpstreamPools {
  /** origin → connect timeout → pool (nested: no key string is built per request) */
  private readonly pools = new Map<string, Map<number, Pool>>();

  get(origin: string, options: PoolOptions): Pool {
    let byTimeout = this.pools.get(origin);
    if (!byTimeout) { byTimeout = new Map(); this.pools.set(origin, byTimeout); }
    let pool = byTimeout.get(options.connectMs);
    if (!pool) {
      pool = new Pool(origin, {
        connections: MAX_CONNECTIONS_PER_ORIGIN,
        pipelining: 1,
        keepAliveTimeout: 30_000,
        connect: { timeout: options.connectMs },
      });
      byTimeout.set(options.connectMs, pool);
    }
    return pool;
  }

  async close(): Promise<void> {
    const all = [...this.pools.values()].flatMap((byTimeout) => [...byTimeout.values()]);
    await Promise.all(all.map((pool) => pool.close().catch(() => pool.destroy())));
    this.pools.clear();
  }
}
