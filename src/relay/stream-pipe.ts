// Upstream bytes → client as they arrive: backpressure (a slow client pauses the upstream, so
// memory stays bounded), abort propagation (client gone → upstream request aborted), one end reason.
// A failure before the first byte reaches the client rejects, so the caller can fail over.
import type { GatewayErrorShape } from '../errors';
import type { Exchange, Headers } from '../http';
import { fromTransportError } from '../upstream/transport-errors';
import type { BodySource } from '../upstream/upstream-call';

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

export const SSE_HEADERS: Headers = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache, no-transform',
  'x-accel-buffering': 'no',
};

export function pipeStream(exchange: Exchange, body: BodySource, transform: StreamTransform, abort: { abort(): void },
  channel: string, headers: Headers = SSE_HEADERS): Promise<PipeOutcome> {
  return new Promise((resolve, reject) => {
    let started = false;
    let firstByteAt: number | null = null;
    let settled = false;
    /**
     * The transform's output of the latest data event, not written yet: it goes out on the next
     * microtask, or with the end when that comes in the same turn (the usual last chunk: the final
     * events and the end of the body arrive together). One send to the client instead of two:
     * −1.5 to −2.7 µs a streamed call at saturation (medians of two sets of 8 alternated rounds).
     */
    let pending: Buffer | string | null = null;
    const settle = (outcome: PipeOutcome) => { if (!settled) { settled = true; resolve(outcome); } };
    const begin = () => {
      if (!started) { started = true; firstByteAt = Date.now(); exchange.startStream(200, headers); }
    };
    const writePending = () => {
      const bytes = pending;
      if (bytes === null || settled) return;
      pending = null;
      begin();
      if (!exchange.write(bytes)) {
        body.pause();
        exchange.onWritable(() => { if (!settled) body.resume(); });
      }
    };
    const endWith = (last: Buffer | string) => {
      begin();
      const before = pending;
      pending = null;
      if (before === null) exchange.end(last); else exchange.end(before, last);
    };
    exchange.onAbort(() => {
      abort.abort();
      body.destroy();
      settle({ endReason: 'client_gone', firstByteAt });
    });
    body.on('data', (chunk: Buffer) => {
      if (settled) return;
      const out = transform.push(chunk);
      const cut = transform.cut;
      if (cut != null) {
        if (out !== null && out.length > 0) { if (pending !== null) writePending(); pending = out; }
        endWith(cut.tail);
        abort.abort();
        body.destroy();
        settle({ endReason: cut.reason, firstByteAt });
        return;
      }
      if (out === null || out.length === 0) return;
      if (pending !== null) writePending();
      pending = out;
      queueMicrotask(writePending);
    });
    body.on('end', () => {
      if (settled) return;
      endWith(transform.finish());
      settle({ endReason: 'completed', firstByteAt });
    });
    body.on('error', (error: unknown) => {
      if (settled) return;
      if (exchange.aborted) { settle({ endReason: 'client_gone', firstByteAt }); return; }
      const mapped = fromTransportError(error, channel);
      // nothing produced for the client yet: the caller may try another channel
      if (!started && pending === null) { settled = true; reject(mapped); return; }
      endWith(transform.fail(mapped));
      settle({ endReason: 'upstream_error', firstByteAt, error: mapped });
    });
  });
}
