// Upstream bytes → client as they arrive: backpressure (a slow client pauses the upstream, so
// memory stays bounded), abort propagation (client gone → upstream request aborted), one end reason.
// A failure before the first byte reaches the client rejects, so the caller can fail over. Error
// events in what goes out have the channel's secrets redacted (StreamErrorRedactor).
import type { ChannelConfig } from '../config';
import type { GatewayErrorShape } from '../errors';
import { upstreamSecrets } from '../formats/redact';
import { StreamErrorRedactor } from '../formats/stream-error-redact';
import type { Exchange, Headers } from '../http';
import { fromTransportError } from '../upstream/transport-errors';
import type { BodySource } from '../upstream/upstream-call';
import type { UpstreamAnswer } from '../providers/types';
import { flushAtTurnEnd, type TurnFlushable } from './turn-flush';

export interface StreamTransform {
  /** bytes to forward now (null/empty = nothing yet) */
  push(chunk: Buffer): Buffer | string | null;
  /** tail at a normal end of the upstream body */
  finish(): Buffer | string;
  /** text of an error event once the client has received bytes */
  fail(error: GatewayErrorShape): string;
  /**
   * Set by push() when the stream must end before the upstream's end (a bound was reached): the
   * pipe writes `tail` after push's output, aborts the upstream and ends with `reason`.
   */
  cut?: { tail: Buffer | string; reason: EndReason } | null;
}

export type EndReason = 'completed' | 'client_gone' | 'upstream_error' | 'quota_bounded' | 'upstream_event_too_large';

export interface PipeOutcome { endReason: EndReason; firstByteAt: number | null; error?: GatewayErrorShape }

const SSE_HEADERS: Headers = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache, no-transform',
  'x-accel-buffering': 'no',
};

type PipedChannel = Pick<ChannelConfig, 'name' | 'keys' | 'base_url'>;

export function pipeStream(exchange: Exchange, body: BodySource, transform: StreamTransform, abort: { abort(): void },
  channel: PipedChannel): Promise<PipeOutcome> {
  return new Promise((resolve, reject) => startPipe(exchange, body, transform, abort, channel, resolve, reject));
}

/**
 * pipeStream once the upstream's answer comes, its transform given or made from the answer. One
 * promise for the attempt: a promise for the answer whose callback returned pipeStream's would
 * adopt it, and every open stream would hold both and the adoption's reaction.
 */
export function pipeAnswer(exchange: Exchange, answer: Promise<UpstreamAnswer>,
  transform: StreamTransform | ((answer: UpstreamAnswer) => StreamTransform), abort: { abort(): void }, channel: PipedChannel): Promise<PipeOutcome> {
  return new Promise((resolve, reject) => {
    answer.then((upstream) => {
      try {
        startPipe(exchange, upstream.body, typeof transform === 'function' ? transform(upstream) : transform, abort, channel, resolve, reject);
      } catch (error) {
        reject(error);
      }
    }, reject);
  });
}

function startPipe(exchange: Exchange, body: BodySource, transform: StreamTransform, abort: { abort(): void }, channel: PipedChannel,
  resolve: (outcome: PipeOutcome) => void, reject: (error: unknown) => void): void {
  const pipe = new StreamPipe(exchange, body, transform, abort, channel, resolve, reject);
  // The data listener is an arrow: it runs for every event, and TurboFan inlines the pipe into it.
  // The listeners called once are bound methods: an arrow called once per stream keeps no optimized
  // code across full garbage collections, so V8 compiled it again after each one (bench/README.md).
  exchange.onAbort(pipe.clientGone.bind(pipe));
  body.on('data', (chunk: Buffer) => pipe.data(chunk));
  body.on('end', pipe.end.bind(pipe));
  body.on('error', pipe.error.bind(pipe));
}

/** One stream's state: an object with methods rather than closures (fewer objects kept per open stream). */
class StreamPipe implements TurnFlushable {
  private readonly redactor: StreamErrorRedactor;
  private started = false;
  private firstByteAt: number | null = null;
  private settled = false;
  /**
   * The transform's output of this turn's data events, not written yet: it goes out as one write at
   * the end of the turn (flushAtTurnEnd), with the end when that comes in the same turn. Events
   * that arrive together (one socket read holds many HTTP chunks) reach the client in one send, not
   * one each. One output is held as it is, several in an array (an array emptied after every event
   * would allocate its storage again for every event).
   */
  private pending: Buffer | string | Array<Buffer | string> | null = null;
  /**
   * The tail of a stream the upstream ended: it goes out with the end at the end of the turn, with
   * the turn's other sends, and the pipe settles then (a client gone before it settles it as gone).
   */
  private ending: Buffer | string | null = null;
  flushQueued = false;

  constructor(private readonly exchange: Exchange, private readonly body: BodySource, private readonly transform: StreamTransform,
    private readonly abort: { abort(): void }, private readonly channel: PipedChannel,
    private readonly resolve: (outcome: PipeOutcome) => void, private readonly reject: (error: unknown) => void) {
    this.redactor = new StreamErrorRedactor(this);
  }

  /** What the redactor takes out of the stream's error events (asked for only when one comes). */
  secrets(): string[] {
    return upstreamSecrets(this.channel);
  }

  data(chunk: Buffer): void {
    if (this.settled) return;
    const out = this.redactor.push(this.transform.push(chunk));
    const cut = this.transform.cut;
    if (cut != null) {
      if (out !== null && out.length > 0) this.hold(out);
      this.endWith(cut.tail);
      this.abort.abort();
      this.body.destroy();
      this.settle(cut.reason);
      return;
    }
    if (out === null || out.length === 0) return;
    this.hold(out);
    flushAtTurnEnd(this);
  }

  end(): void {
    if (this.settled || this.ending !== null) return;
    this.ending = this.transform.finish();
    flushAtTurnEnd(this);
  }

  error(error: unknown): void {
    if (this.settled || this.ending !== null) return;
    if (this.exchange.aborted) { this.settle('client_gone'); return; }
    const mapped = fromTransportError(error, this.channel.name);
    // nothing produced for the client yet: the caller may try another channel
    if (!this.started && this.pending === null) { this.settled = true; this.reject(mapped); return; }
    this.endWith(this.transform.fail(mapped));
    this.settle('upstream_error', mapped);
  }

  clientGone(): void {
    this.abort.abort();
    this.body.destroy();
    this.settle('client_gone');
  }

  /** Writes what this turn's data events produced, or the end (flushAtTurnEnd); a full client pauses the upstream. */
  flush(): void {
    const ending = this.ending;
    if (ending !== null) {
      this.ending = null;
      this.endWith(ending);
      this.settle('completed');
      return;
    }
    const held = this.pending;
    if (held === null || this.settled) return;
    this.pending = null;
    const bytes = Array.isArray(held) ? Buffer.concat(held.map((part) => (typeof part === 'string' ? Buffer.from(part) : part))) : held;
    this.begin();
    if (!this.exchange.write(bytes)) {
      this.body.pause();
      this.exchange.onWritable(() => { if (!this.settled) this.body.resume(); });
    }
  }

  private hold(out: Buffer | string): void {
    const pending = this.pending;
    if (pending === null) this.pending = out;
    else if (Array.isArray(pending)) pending.push(out);
    else this.pending = [pending, out];
  }

  private begin(): void {
    if (!this.started) { this.started = true; this.firstByteAt = Date.now(); this.exchange.startStream(200, SSE_HEADERS); }
  }

  private endWith(tail: Buffer | string): void {
    const last = this.redactor.end(tail);
    this.begin();
    const held = this.pending;
    this.pending = null;
    if (held === null) this.exchange.end(last);
    else if (Array.isArray(held)) this.exchange.end(...held, last);
    else this.exchange.end(held, last);
  }

  private settle(endReason: EndReason, error?: GatewayErrorShape): void {
    if (this.settled) return;
    this.settled = true;
    this.resolve(error === undefined ? { endReason, firstByteAt: this.firstByteAt } : { endReason, firstByteAt: this.firstByteAt, error });
  }
}
