// The writer of a worker's settled charges and usage records, on a thread of its own that runs at a
// lower CPU priority than request handling (LEDGER_WRITER_NICE above the process's own niceness).
//
// Why a thread: a batch commit costs ~1 ms of CPU (writes, two fsyncs, their VM exits). Committed at
// the request handlers' priority (then on the supervisor's main thread), the scheduler did not let a
// worker that woke up for a request preempt it, so one request per batch (then every 25 ms) waited
// for the commit: at one connection that was ~1.6% of requests, and the added p99 sat at 0.9–1.1 ms.
// A thread at nice 10 is preempted by request handling (measured, alternating two builds:
// 1-connection p99 1.02–1.25 → 0.85–1.04 ms, half as many requests over 0.9 ms) and still gets ~10%
// of a saturated core, twice what the commits need at full load. Only this thread is reniced: on
// Linux a priority is per thread.
// Why in the worker rather than the supervisor: the batch no longer crosses the cluster pipe and the
// supervisor's event loop.
import { Worker } from 'node:worker_threads';
import type { Charge } from '../types';
import type { UsageGroup } from '../records';

/** How much nicer than the process the writer thread runs (niceness is capped at 19, the lowest priority). */
export const LEDGER_WRITER_NICE = 10;

export type WriterRequest =
  | { id: number; type: 'commit'; workerId: string; charges: Charge[]; usage: UsageGroup[] }
  | { id: number; type: 'close' };

export type WriterReply =
  | { type: 'ready'; nice: number | null }
  | { type: 'done'; id: number; error?: string };

interface Pending { resolve(): void; reject(error: Error): void }

export interface LedgerWriterOptions {
  nice?: number;
  /** the thread crashed and a new one took over (the writes in flight failed) */
  onRestart?: (error: Error) => void;
  /** the thread crashed again within a second of its start: the writer gave up */
  onFatal?: (error: Error) => void;
}

/** A thread that dies sooner than this after its start is not started again. */
const MIN_THREAD_LIFE_MS = 1_000;

export class LedgerWriter {
  private thread: Worker;
  private startedAt = Date.now();
  private readonly pending = new Map<number, Pending>();
  private sequence = 0;
  private stopped: Error | null = null;

  private constructor(private readonly dataDir: string, private readonly options: LedgerWriterOptions) {
    this.thread = this.spawn();
  }

  /**
   * Starts the thread and waits until it has the store open. `nice` is what it got: null where the
   * platform has no per-thread priority (it then runs at the default).
   */
  static async start(dataDir: string, options: LedgerWriterOptions = {}): Promise<{ writer: LedgerWriter; nice: number | null }> {
    const writer = new LedgerWriter(dataDir, options);
    const nice = await new Promise<number | null>((resolve, reject) => {
      const onMessage = (reply: WriterReply) => {
        if (reply.type !== 'ready') return;
        writer.thread.off('message', onMessage);
        writer.thread.off('exit', onExit);
        resolve(reply.nice);
      };
      const onExit = (code: number) => reject(new Error(`the ledger writer thread exited with code ${code} while starting`));
      writer.thread.on('message', onMessage);
      writer.thread.once('exit', onExit);
    });
    return { writer, nice };
  }

  /** Commits one worker's batch; batches are written in the order they were handed over. */
  commit(workerId: string, charges: Charge[], usage: UsageGroup[]): Promise<void> {
    return this.ask({ id: 0, type: 'commit', workerId, charges, usage });
  }

  /** Writes what was handed over so far, closes the thread's store and stops the thread. */
  async close(): Promise<void> {
    if (this.stopped) return;
    await this.ask({ id: 0, type: 'close' }).catch(() => undefined);
    this.stopped = new Error('the ledger writer is closed');
    await this.thread.terminate();
  }

  private spawn(): Worker {
    this.startedAt = Date.now();
    const thread = new Worker(require.resolve('./ledger-writer-thread'), {
      workerData: { dataDir: this.dataDir, nice: this.options.nice ?? LEDGER_WRITER_NICE },
    });
    thread.on('message', (reply: WriterReply) => {
      if (reply.type !== 'done') return;
      const entry = this.pending.get(reply.id);
      this.pending.delete(reply.id);
      if (reply.error !== undefined) entry?.reject(new Error(reply.error)); else entry?.resolve();
    });
    thread.on('error', (error) => this.failed(thread, error));
    thread.on('exit', (code) => this.failed(thread, new Error(`the ledger writer thread exited with code ${code}`)));
    return thread;
  }

  /**
   * The thread died (it catches the errors of every write, so this is a crash): the writes in flight
   * fail (a worker keeps a failed batch and hands it over again with its next one) and a new thread
   * takes over, unless the last one died right after its start.
   */
  private failed(thread: Worker, error: Error): void {
    if (thread !== this.thread || this.stopped) return;
    for (const entry of this.pending.values()) entry.reject(error);
    this.pending.clear();
    if (Date.now() - this.startedAt < MIN_THREAD_LIFE_MS) {
      this.stopped = error;
      this.options.onFatal?.(error);
      return;
    }
    this.options.onRestart?.(error);
    this.thread = this.spawn();
  }

  private ask(request: WriterRequest): Promise<void> {
    if (this.stopped) return Promise.reject(this.stopped);
    return new Promise((resolve, reject) => {
      const id = ++this.sequence;
      this.pending.set(id, { resolve, reject });
      this.thread.postMessage({ ...request, id });
    });
  }
}
