// One upstream HTTP exchange on undici's dispatch API: the request goes out on the pool, and the
// answer's body comes back as a BodySource, a small event source with backpressure, instead of a
// Node Readable.
//
// Why not undici's request(): it wraps every answer in a Readable stream and an AsyncResource, and
// delivers each chunk through the stream's buffering and its nextTick hops (bench/README.md has the
// cost). bench/passthrough.ts uses this module too, so the baseline and Tollgate call their upstream
// the same way.
//
// The body follows the Readable rules its consumers rely on: nothing is delivered before a 'data'
// listener is attached; 'end' comes after the last chunk; pause() holds chunks back (and pauses the
// upstream once 64 KiB wait); an error drops what is pending; destroy() aborts the upstream, and
// destroy(error) delivers that error. Errors and deliveries after a resume() come on a microtask,
// never from inside the call that caused them.
import type { Dispatcher } from './undici';
import { errors } from './undici-parts';
import type { CallSignal } from '../providers/types';

/** The part of a readable body the relays use; a Node Readable is one too (the simulator's are). */
export interface BodySource {
  on(event: 'data', listener: (chunk: Buffer) => void): unknown;
  on(event: 'end', listener: () => void): unknown;
  on(event: 'error', listener: (error: Error) => void): unknown;
  pause(): unknown;
  resume(): unknown;
  destroy(error?: Error): unknown;
}

export interface UpstreamHead {
  status: number;
  /** the first content-type header, '' if none */
  contentType: string;
  body: BodySource;
}

export interface UpstreamRequestOptions {
  method: 'GET' | 'POST';
  path: string;
  headers: Record<string, string>;
  body?: string | Buffer;
  /** undici's first-byte (headers) and idle (body) timeouts, ms */
  headersTimeout?: number;
  bodyTimeout?: number;
  signal?: CallSignal;
}

/** Chunks held for a consumer that has not attached or is paused, before the upstream is paused. */
const HELD_BYTES_BEFORE_PAUSE = 64 * 1024;
const CONTENT_TYPE = 'content-type';

function abortReason(signal: CallSignal): Error {
  return (signal.reason as Error | undefined) ?? new errors.RequestAbortedError();
}

/**
 * The undici handler of one exchange, and the body it hands to the caller (one object: a call
 * allocates it and nothing else of its own). `callback` runs once: with the head when the status
 * line and headers arrived, or with the transport error when none did.
 */
class UpstreamExchange implements BodySource {
  private abortUpstream: ((reason?: Error) => void) | null = null;
  private resumeUpstream: (() => void) | null = null;
  private callback: ((error: Error | null, head?: UpstreamHead) => void) | null;
  private readonly signal: CallSignal | undefined;
  private readonly onSignalAbort: (() => void) | undefined;
  private dataListener: ((chunk: Buffer) => void) | null = null;
  private endListener: (() => void) | null = null;
  private errorListener: ((error: Error) => void) | null = null;
  /** chunks not delivered yet, and their size */
  private held: Buffer[] | null = null;
  private heldBytes = 0;
  private paused = false;
  private upstreamPaused = false;
  /** the upstream finished the body (not yet told, while chunks are held) */
  private complete = false;
  /** an error of the body waiting for a flush */
  private failure: Error | null = null;
  /** 'end' or 'error' was delivered, or the consumer destroyed the body: nothing more goes out */
  private finished = false;
  private destroyed = false;
  private flushQueued = false;

  constructor(signal: CallSignal | undefined, callback: (error: Error | null, head?: UpstreamHead) => void) {
    this.callback = callback;
    this.signal = signal;
    if (signal !== undefined) {
      // not connected yet: onConnect sees the signal aborted and aborts at once
      this.onSignalAbort = () => this.abortUpstream?.(abortReason(signal));
      signal.addEventListener('abort', this.onSignalAbort);
    }
  }

  // ---- undici's side (Dispatcher.DispatchHandler, the callback flavour) ----

  onConnect(abort: (reason?: Error) => void): void {
    this.abortUpstream = abort;
    if (this.signal?.aborted) abort(abortReason(this.signal));
  }

  onHeaders(status: number, rawHeaders: Buffer[], resume: () => void): boolean {
    if (status < 200) return true;   // 1xx: the real answer follows
    this.resumeUpstream = resume;
    let contentType = '';
    for (let index = 0; index < rawHeaders.length; index += 2) {
      const name = rawHeaders[index];
      if (name.length === CONTENT_TYPE.length && name.toString('latin1').toLowerCase() === CONTENT_TYPE) {
        contentType = rawHeaders[index + 1].toString('latin1');
        break;
      }
    }
    const callback = this.callback!;
    this.callback = null;
    callback(null, { status, contentType, body: this });
    return true;
  }

  onData(chunk: Buffer): boolean {
    if (this.finished || this.destroyed) return true;
    if (this.dataListener !== null && !this.paused && this.held === null) {
      this.dataListener(chunk);
      if (!this.paused) return true;
      this.upstreamPaused = true;   // the consumer paused: so does the upstream, until resume()
      return false;
    }
    (this.held ??= []).push(chunk);
    this.heldBytes += chunk.length;
    if (this.heldBytes < HELD_BYTES_BEFORE_PAUSE) return true;
    this.upstreamPaused = true;
    return false;
  }

  onComplete(): void {
    this.removeSignalListener();
    this.complete = true;
    if (this.finished || this.destroyed) return;
    if (this.dataListener !== null && !this.paused && this.held === null) this.deliverEnd();
  }

  onError(error: Error): void {
    this.removeSignalListener();
    const callback = this.callback;
    if (callback !== null) {
      this.callback = null;
      callback(error);
      return;
    }
    if (this.finished || this.destroyed) return;
    this.held = null;
    this.heldBytes = 0;
    this.failure = error;
    this.queueFlush();
  }

  // ---- the consumer's side (BodySource) ----

  on(event: 'data' | 'end' | 'error', listener: ((chunk: Buffer) => void) | (() => void) | ((error: Error) => void)): this {
    if (event === 'data') this.dataListener = listener as (chunk: Buffer) => void;
    else if (event === 'end') this.endListener = listener as () => void;
    else this.errorListener = listener as (error: Error) => void;
    if (this.held !== null || this.complete || this.failure !== null) this.queueFlush();
    return this;
  }

  pause(): this {
    this.paused = true;
    return this;
  }

  resume(): this {
    if (this.paused) {
      this.paused = false;
      this.queueFlush();
    }
    return this;
  }

  destroy(error?: Error): this {
    if (this.destroyed) return this;
    this.destroyed = true;
    this.held = null;
    this.heldBytes = 0;
    if (!this.complete) this.abortUpstream?.(error ?? new errors.RequestAbortedError());
    if (error !== undefined && !this.finished) {
      this.failure = error;
      this.queueFlush();
    } else {
      this.finished = true;
    }
    return this;
  }

  private queueFlush(): void {
    if (this.flushQueued) return;
    this.flushQueued = true;
    // a bound method, not an arrow made per call (see StreamPipe's listeners in relay/stream-pipe.ts)
    queueMicrotask(this.flush.bind(this));
  }

  private flush(): void {
    this.flushQueued = false;
    if (this.finished) return;
    if (this.failure !== null) {
      if (this.errorListener === null) return;   // delivered when one is attached
      this.finished = true;
      this.errorListener(this.failure);
      return;
    }
    const listener = this.dataListener;
    if (listener === null) return;
    while (this.held !== null && !this.paused && !this.finished) {
      const chunk = this.held.shift()!;
      this.heldBytes -= chunk.length;
      if (this.held.length === 0) this.held = null;
      listener(chunk);
    }
    if (this.paused || this.finished || this.held !== null) return;
    if (this.complete) this.deliverEnd();
    else if (this.upstreamPaused) {
      this.upstreamPaused = false;
      this.resumeUpstream!();
    }
  }

  private deliverEnd(): void {
    if (this.endListener === null) return;   // delivered when one is attached
    this.finished = true;
    this.endListener();
  }

  private removeSignalListener(): void {
    if (this.onSignalAbort !== undefined) this.signal!.removeEventListener('abort', this.onSignalAbort);
  }
}

/**
 * Sends one request on `dispatcher` (a pool). `callback` gets the head once the upstream answered
 * (any status; the body is the caller's to read or destroy), or the transport error.
 */
export function requestUpstream(dispatcher: Dispatcher, options: UpstreamRequestOptions,
  callback: (error: Error | null, head?: UpstreamHead) => void): void {
  const exchange = new UpstreamExchange(options.signal, callback);
  if (options.signal?.aborted) {
    exchange.onError(abortReason(options.signal));
    return;
  }
  dispatcher.dispatch({
    method: options.method,
    path: options.path,
    headers: options.headers,
    body: options.body,
    headersTimeout: options.headersTimeout,
    bodyTimeout: options.bodyTimeout,
  }, exchange);
}
