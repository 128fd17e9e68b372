// One undici Pool per upstream origin, created on first use and shared by every request of the
// process. request() with pipelining 1 and keep-alive; never the global fetch (≈600 µs more).
import { Pool } from 'undici';

export interface PoolOptions { connectMs: number }

export class UpstreamPools {
  private readonly pools = new Map<string, Pool>();

  get(origin: string, options: PoolOptions): Pool {
    let pool = this.pools.get(origin);
    if (!pool) {
      pool = new Pool(origin, {
        connections: 256,
        pipelining: 1,
        keepAliveTimeout: 30_000,
        connect: { timeout: options.connectMs },
      });
      this.pools.set(origin, pool);
    }
    return pool;
  }

  async close(): Promise<void> {
    await Promise.all([...this.pools.values()].map((pool) => pool.close().catch(() => pool.destroy())));
    this.pools.clear();
  }
}
