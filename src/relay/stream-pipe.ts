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
  channel: Pick<ChannelConfig, 'name' | 'keys' | 'base_url'>, headers: Headers = SSE_HEADERS): Promise<PipeOutcome> {
  const redactor = new StreamErrorRedactor(() => upstreamSecrets(channel));
  return new Promise((resolve, reject) => {
    let started = false;
    let firstByteAt: number | null = null;
    let settled = false;
    /**
     * The transform's output of this turn's data events, not written yet: it goes out as one write on
     * the next microtask, or with the end when that comes in the same turn. Events that arrive
     * together (one socket read holds many HTTP chunks) reach the client in one send, not one each.
     * One output is held as it is, several in an array (an array emptied after every event would
     * allocate its storage again for every event).
     */
    let pending: Buffer | string | Array<Buffer | string> | null = null;
    const hold = (out: Buffer | string) => {
      if (pending === null) pending = out;
      else if (Array.isArray(pending)) pending.push(out);
      else pending = [pending, out];
    };
    let scheduled = false;
    const settle = (outcome: PipeOutcome) => { if (!settled) { settled = true; resolve(outcome); } };
    const begin = () => {
      if (!started) { started = true; firstByteAt = Date.now(); exchange.startStream(200, headers); }
    };
    const writePending = () => {
      scheduled = false;
      const held = pending;
      if (held === null || settled) return;
      pending = null;
      const bytes = Array.isArray(held) ? Buffer.concat(held.map((part) => (typeof part === 'string' ? Buffer.from(part) : part))) : held;
      begin();
      if (!exchange.write(bytes)) {
        body.pause();
        exchange.onWritable(() => { if (!settled) body.resume(); });
      }
    };
    const endWith = (tail: Buffer | string) => {
      const last = redactor.end(tail);
      begin();
      const held = pending;
      pending = null;
      if (held === null) exchange.end(last);
      else if (Array.isArray(held)) exchange.end(...held, last);
      else exchange.end(held, last);
    };
    exchange.onAbort(() => {
      abort.abort();
      body.destroy();
      settle({ endReason: 'client_gone', firstByteAt });
    });
    body.on('data', (chunk: Buffer) => {
      if (settled) return;
      const out = redactor.push(transform.push(chunk));
      const cut = transform.cut;
      if (cut != null) {
        if (out !== null && out.length > 0) hold(out);
        endWith(cut.tail);
        abort.abort();
        body.destroy();
        settle({ endReason: cut.reason, firstByteAt });
        return;
      }
      if (out === null || out.length === 0) return;
      hold(out);
      if (!scheduled) { scheduled = true; queueMicrotask(writePending); }
    });
    body.on('end', () => {
      if (settled) return;
      endWith(transform.finish());
      settle({ endReason: 'completed', firstByteAt });
    });
    body.on('error', (error: unknown) => {
      if (settled) return;
      if (exchange.aborted) { settle({ endReason: 'client_gone', firstByteAt }); return; }
      const mapped = fromTransportError(error, channel.name);
      // nothing produced for the client yet: the caller may try another channel
      if (!started && pending === null) { settled = true; reject(mapped); return; }
      endWith(transform.fail(mapped));
      settle({ endReason: 'upstream_error', firstByteAt, error: mapped });
    });
  });
}
