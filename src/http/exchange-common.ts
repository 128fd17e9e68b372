// What both fronts share: running the handler with its last-resort 500, and about a request body: the size limit, the time limit, one settlement, and
// the errors they produce; plus the abort bookkeeping every exchange has. Each front only feeds it bytes.
import { GatewayError } from '../errors';
import { withListener } from '../listeners';
import type { Exchange, ServerOptions } from './types';

export const NO_BODY = Buffer.alloc(0);
const ignore = (): void => undefined;

export const bodyErrors = {
  tooLarge: (limit: number) => new GatewayError({
    status: 413, type: 'invalid_request_error', code: 'payload_too_large', message: `request body exceeds the ${limit}-byte limit`,
  }),
  timeout: (ms: number) => new GatewayError({
    status: 408, type: 'invalid_request_error', code: 'request_timeout', message: `request body not received within ${ms} ms`,
  }),
  clientClosed: () => new GatewayError({ status: 499, type: 'invalid_request_error', code: 'client_closed', message: 'client closed the request' }),
  unreadable: () => new GatewayError({ status: 400, type: 'invalid_request_error', code: 'bad_request', message: 'request body could not be read' }),
  busy: (limit: number) => new GatewayError({
    status: 503, type: 'api_error', code: 'server_busy',
    message: `request bodies still arriving on this server exceed the ${limit}-byte limit of their sum: retry shortly`,
  }),
};

/**
 * The bytes of request bodies a server holds while they arrive, over all its connections. Each body
 * is bounded by its route's limit; this bounds their sum, so many slow uploads at once cannot take
 * the worker's memory. The chunk that would pass it refuses its body (503) and closes its connection;
 * a body is counted until it is complete or refused.
 */
export class PendingBodies {
  held = 0;
  constructor(readonly limit: number) {}
}

/**
 * A body refused as too large is still read, and dropped, when its rest is at most this many bytes
 * and arrives within LINGER_MS: a client that writes its whole body before it reads (Node's fetch,
 * the openai SDK) then sees the 413 instead of a reset connection (nginx's lingering close). A longer
 * rest, or one that takes longer, gets the connection closed.
 */
export const LINGER_BYTES = 64 * 1024 * 1024;
export const LINGER_MS = 10_000;

/** Whether a refused body's rest is worth reading: its length is known and within LINGER_BYTES. */
export function lingerable(declaredLength: string | undefined, received: number): boolean {
  if (declaredLength === undefined) return false;
  const rest = Number(declaredLength) - received;
  return Number.isSafeInteger(rest) && rest <= LINGER_BYTES;
}

/** What the sweep keeps: a deadline, and the slot the sweep gave it (-1 when it holds none). */
interface Deadline { readonly deadline: number; sweepSlot: number; expire(): void }

/**
 * Body deadlines, checked by one sweep instead of a timer per request (a Node timer set and cleared
 * per request costs more than the sweep). The sweep runs every tenth of the shortest timeout in use (50 ms to
 * 1 s), so a slow body is refused at most that much late; it runs only while bodies are pending.
 * Pending bodies sit in an array, each knowing its slot: adding and removing one is O(1) and
 * allocates nothing (a Set grew and shrank its table with the load; its rehashes, page faults
 * included, showed in the saturated profile).
 */
class DeadlineSweep {
  private readonly pending: Deadline[] = [];
  private timer: NodeJS.Timeout | null = null;
  private periodMs = 1_000;

  add(entry: Deadline, timeoutMs: number): void {
    if (entry.sweepSlot !== -1) return;
    entry.sweepSlot = this.pending.length;
    this.pending.push(entry);
    const period = Math.min(1_000, Math.max(50, Math.floor(timeoutMs / 10)));
    if (this.timer !== null && period >= this.periodMs) return;
    if (this.timer !== null) clearInterval(this.timer);
    this.periodMs = period;
    this.timer = setInterval(() => this.sweep(), period);
    this.timer.unref();
  }

  delete(entry: Deadline): void {
    const slot = entry.sweepSlot;
    if (slot === -1) return;
    entry.sweepSlot = -1;
    const last = this.pending.pop()!;
    if (last !== entry) { this.pending[slot] = last; last.sweepSlot = slot; }
  }

  private sweep(): void {
    if (this.pending.length === 0) {
      clearInterval(this.timer!);
      this.timer = null;
      this.periodMs = 1_000;
      return;
    }
    const now = Date.now();
    // from the end: an expired entry leaves its slot to the last one, which was already looked at
    for (let slot = this.pending.length - 1; slot >= 0; slot -= 1) {
      const entry = this.pending[slot];
      if (entry !== undefined && entry.deadline <= now) entry.expire();
    }
  }
}

const deadlines = new DeadlineSweep();

export class BodyCollector implements Deadline {
  readonly promise: Promise<Buffer>;
  readonly deadline: number;
  /** the deadline sweep's bookkeeping */
  sweepSlot = -1;
  private readonly parts: Buffer[] = [];
  private received = 0;
  /** what this body adds to `pending.held` */
  private counted = 0;
  private settled = false;
  private resolve!: (body: Buffer) => void;
  private reject!: (error: GatewayError) => void;

  /**
   * `onFail` runs once when the body is refused, with the refusal and the bytes received by then (the
   * front then closes the connection after answering, or reads the rest and drops it).
   */
  constructor(private readonly limit: number, private readonly timeoutMs: number, private readonly onFail: (error: GatewayError, received: number) => void,
    private readonly pending: PendingBodies) {
    this.promise = new Promise<Buffer>((resolve, reject) => { this.resolve = resolve; this.reject = reject; });
    this.deadline = Date.now() + timeoutMs;
    deadlines.add(this, timeoutMs);
  }

  get done(): boolean { return this.settled; }

  /** Takes ownership of `chunk` (copy it first if the front reuses its memory). */
  add(chunk: Buffer): void {
    if (this.settled) return;
    this.received += chunk.length;
    if (this.received > this.limit) { this.fail(bodyErrors.tooLarge(this.limit)); return; }
    const pending = this.pending;
    if (pending.held + chunk.length > pending.limit) { this.fail(bodyErrors.busy(pending.limit)); return; }
    pending.held += chunk.length;
    this.counted += chunk.length;
    this.parts.push(chunk);
  }

  end(): void {
    if (this.settled) return;
    this.settled = true;
    deadlines.delete(this);
    this.release();
    const body = this.parts.length === 1 ? this.parts[0] : Buffer.concat(this.parts, this.received);
    // the exchange keeps its collector (an abort listener) for the call's life: it keeps no chunk
    this.parts.length = 0;
    this.resolve(body);
  }

  /** This body no longer counts in what the server holds of bodies still arriving. */
  private release(): void {
    this.pending.held -= this.counted;
    this.counted = 0;
  }

  /** The deadline passed (called by the sweep). */
  expire(): void {
    this.fail(bodyErrors.timeout(this.timeoutMs));
  }

  fail(error: GatewayError): void {
    if (this.settled) return;
    this.settled = true;
    deadlines.delete(this);
    this.release();
    this.parts.length = 0;
    this.onFail(error, this.received);
    // handled from the moment it is refused: a handler that has not asked for the body yet must not
    // turn a refusal into an unhandled rejection (a handler already awaiting it still gets the error)
    this.promise.catch(ignore);
    this.reject(error);
  }
}

/** Listeners for "the client went away", fired once. */
export class AbortListeners {
  private listeners: (() => void)[] | null = null;
  fired = false;

  add(listener: () => void): void {
    if (this.fired) listener(); else this.listeners = withListener(this.listeners, listener);
  }

  fire(): void {
    if (this.fired) return;
    this.fired = true;
    const listeners = this.listeners;
    this.listeners = null;
    if (listeners !== null) for (const listener of listeners) listener();
  }
}

/**
 * State both fronts' exchanges share: ended or not, client gone or not, and the one place that
 * turns "the client went away" into the end of the exchange (counted once) and the listeners' calls.
 */
export abstract class ExchangeLifecycle {
  aborted = false;
  finished = false;
  status = 0;
  model = '';
  /** set when the body could not be read (too large, too slow): the rest of it is never read, so the connection must go */
  protected closeAfterAnswer = false;
  protected readonly aborts = new AbortListeners();
  /** the body being read: held only while it comes, not for the minutes a streamed answer can take */
  protected bodyCollector: BodyCollector | null = null;

  onAbort(listener: () => void): void { this.aborts.add(listener); }

  /** false when the client had already gone; `ended` runs only if the answer had not ended yet. */
  protected clientGone(ended: () => void): boolean {
    if (this.aborted) return false;
    const wasFinished = this.finished;
    this.aborted = true;
    this.finished = true;
    if (!wasFinished) ended();
    this.failBody(bodyErrors.clientClosed());
    this.aborts.fire();
    return true;
  }

  /** Refuses the body being read, if one is, and lets its collector go. */
  protected failBody(error: GatewayError): void {
    const collector = this.bodyCollector;
    this.bodyCollector = null;
    collector?.fail(error);
  }

  /** Adds a chunk of the body being read (ignored once it is read or refused). */
  protected bodyChunk(chunk: Buffer): void {
    const collector = this.bodyCollector;
    if (collector === null) return;
    collector.add(chunk);
    if (collector.done) this.bodyCollector = null;
  }

  /** The body being read is complete. */
  protected bodyEnd(): void {
    const collector = this.bodyCollector;
    this.bodyCollector = null;
    collector?.end();
  }
}

/**
 * Runs the handler; anything it throws or rejects with (which the router should have answered) is
 * logged as a warning and answered 500 in the path's dialect, if the exchange is still open.
 */
export function runHandler(options: ServerOptions, exchange: Exchange): void {
  const failed = (error: unknown) => {
    process.emitWarning(`unhandled error in request handler: ${(error as Error)?.stack ?? String(error)}`);
    if (exchange.finished) return;
    const answer = options.rejection(500, 'internal error', exchange.path);
    exchange.respond(500, answer.headers, answer.body);
  };
  try {
    const result = options.handler(exchange);
    if (result && typeof (result as Promise<void>).catch === 'function') (result as Promise<void>).catch(failed);
  } catch (error) {
    failed(error);
  }
}
