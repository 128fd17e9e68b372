// The piscina pools of a process: only big or CPU-heavy work goes here (multipart parsing, large
// translations, token counting of big prompts). Small bodies stay inline: a trip through the pool
// costs more CPU and latency than they would (DESIGN §6).
//
// Two lanes, each its own threads and queue: image-edit forms ('media') never wait behind token
// counts and translations ('text'). Every task has a time bound (limits.pool_task_ms, from its
// submission: queue wait included) and is cancelled when its request goes away; a cancelled or
// timed-out task that is running is stopped by ending its thread (piscina replaces it). Overflow of
// a lane's queue answers 503, never queues forever.
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import type Piscina from 'piscina';
import { DEFAULT_POOL_TASK_MS } from './config';
import { GatewayError, isGatewayError } from './errors';

export const WORKERS_DIR = join(__dirname, '..', 'workers');
const MAX_QUEUE = 64;

export type Lane = 'media' | 'text';
/** Which lane each task file runs in. */
const LANES: Record<string, Lane> = { multipart: 'media', tokens: 'text', translate: 'text' };

/** Where a task learns that its request is gone: an Exchange, or a call's signal through `cancelOn`. */
export interface TaskCancel {
  readonly aborted: boolean;
  onAbort(listener: () => void): void;
}

/** A TaskCancel over an AbortSignal-like call signal. */
export function cancelOn(signal: { readonly aborted: boolean; addEventListener(type: 'abort', listener: () => void, options?: { once?: boolean }): void }): TaskCancel {
  return { get aborted() { return signal.aborted; }, onAbort: (listener) => signal.addEventListener('abort', listener, { once: true }) };
}

export interface RunOptions {
  transferList?: ArrayBuffer[];
  /** the task is cancelled when this reports its request gone */
  cancel?: TaskCancel;
}

const GONE = Symbol('request gone');
const TIMED_OUT = Symbol('time bound');

export class TaskPool {
  private readonly lanes = new Map<Lane, Piscina>();

  constructor(private readonly options: { taskTimeoutMs?: number } = {}) {}

  private lane(lane: Lane): Piscina {
    let pool = this.lanes.get(lane);
    if (pool === undefined) {
      // required on a lane's first task: most processes never offload anything, and the module is not free to load
      const { Piscina: PoolClass } = require('piscina') as typeof import('piscina');
      pool = new PoolClass({
        filename: join(WORKERS_DIR, lane === 'media' ? 'multipart.js' : 'tokens.js'),
        maxThreads: Math.max(1, Math.floor(availableParallelism() / 2)),
        minThreads: 0,
        idleTimeout: 30_000,
        maxQueue: MAX_QUEUE,
      });
      this.lanes.set(lane, pool);
    }
    return pool;
  }

  /** Runs export `name` of `workers/<file>.js`. Errors thrown as plain {status, code, …} objects keep their shape. */
  async run<T>(file: string, name: string, input: unknown, options: RunOptions = {}): Promise<T> {
    const timeoutMs = this.options.taskTimeoutMs ?? DEFAULT_POOL_TASK_MS;
    const lane = LANES[file] ?? 'text';
    const controller = new AbortController();
    const cancel = options.cancel;
    if (cancel?.aborted) throw goneError();
    cancel?.onAbort(() => controller.abort(GONE));
    const timer = timeoutMs > 0 ? setTimeout(() => controller.abort(TIMED_OUT), timeoutMs) : undefined;
    try {
      return await this.lane(lane).run(input, {
        filename: join(WORKERS_DIR, `${file}.js`), name, transferList: options.transferList as never, signal: controller.signal,
      }) as T;
    } catch (error) {
      if (controller.signal.aborted) {
        if (controller.signal.reason === TIMED_OUT) {
          throw new GatewayError({
            status: 503, type: 'api_error', code: 'pool_task_timeout', retryable: false,
            message: `processing this request took longer than limits.pool_task_ms (${timeoutMs} ms) and was stopped`,
          });
        }
        throw goneError();
      }
      if (isGatewayError(error)) throw new GatewayError(error);
      if ((error as Error)?.message?.includes('Task queue is at limit')) {
        throw new GatewayError({ status: 503, type: 'api_error', code: 'overloaded', message: `the worker pool is busy (queue limit ${MAX_QUEUE} for ${lane} tasks); retry shortly`, retryable: true });
      }
      throw error;
    } finally {
      clearTimeout(timer);
    }
  }

  /** Tasks waiting and running in a lane (for tests and diagnostics). */
  load(lane: Lane): { queued: number; threads: number } {
    const pool = this.lanes.get(lane);
    return { queued: pool?.queueSize ?? 0, threads: pool?.threads.length ?? 0 };
  }

  async close(): Promise<void> {
    const pools = [...this.lanes.values()];
    this.lanes.clear();
    await Promise.all(pools.map((pool) => pool.destroy()));
  }
}

function goneError(): GatewayError {
  return new GatewayError({ status: 499, type: 'api_error', code: 'client_gone', message: 'the client closed the request before its processing finished', retryable: false });
}
