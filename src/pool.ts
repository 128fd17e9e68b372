// The piscina pool of a process: only big or CPU-heavy work goes here (multipart parsing, large
// translations, token counting of big prompts). Small bodies stay inline: a trip through the pool
// costs ~73 µs CPU and 0.1–0.25 ms latency (DESIGN §6). Overflow answers 503, never queues forever.
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import Piscina from 'piscina';
import { GatewayError, isGatewayError } from './errors';

export const WORKERS_DIR = join(__dirname, '..', 'workers');
const MAX_QUEUE = 64;

export class TaskPool {
  private pool: Piscina | null = null;

  private get piscina(): Piscina {
    this.pool ??= new Piscina({
      filename: join(WORKERS_DIR, 'multipart.js'),
      maxThreads: Math.max(1, Math.floor(availableParallelism() / 2)),
      minThreads: 0,
      idleTimeout: 30_000,
      maxQueue: MAX_QUEUE,
    });
    return this.pool;
  }

  /** Runs export `name` of `workers/<file>.js`. Errors thrown as plain {status, code, …} objects keep their shape. */
  async run<T>(file: string, name: string, input: unknown, transferList?: ArrayBuffer[]): Promise<T> {
    try {
      return await this.piscina.run(input, { filename: join(WORKERS_DIR, `${file}.js`), name, transferList: transferList as never }) as T;
    } catch (error) {
      if (isGatewayError(error)) throw new GatewayError(error);
      if ((error as Error)?.message?.includes('Task queue is at limit')) {
        throw new GatewayError({ status: 503, type: 'api_error', code: 'overloaded', message: `the worker pool is busy (queue limit ${MAX_QUEUE}); retry shortly`, retryable: true });
      }
      throw error;
    }
  }

  async close(): Promise<void> {
    if (this.pool) await this.pool.destroy();
    this.pool = null;
  }
}
