// The one function every HTTP provider uses to call its upstream: one undici dispatch on the
// channel's pool (src/upstream/upstream-call.ts) with the channel's timeouts, abort signal, status
// mapping and bounded error bodies.
import { upstreamSecrets } from '../formats/redact';
import { CallAbort } from '../upstream/call-abort';
import { fromTransportError, fromUpstreamStatus } from '../upstream/transport-errors';
import { requestUpstream, type BodySource } from '../upstream/upstream-call';
import type { UpstreamCall, UpstreamAnswer, ProviderContext } from './types';

const MAX_ERROR_BODY = 64 * 1024;
/** bound on a whole (non-stream) chat or messages answer held in memory */
export const MAX_ANSWER_BYTES = 64 * 1024 * 1024;
/** first-byte timeouts shorter than this are timed exactly (see callUpstream) */
const EXACT_FIRST_BYTE_BELOW_MS = 10_000;

/** The start of an error body as text: at most `limit` bytes, then the upstream is let go. */
function readBounded(body: BodySource, limit: number): Promise<string> {
  return new Promise((resolve) => {
    const parts: Buffer[] = [];
    let size = 0;
    const done = () => resolve(Buffer.concat(parts).toString('utf8'));
    body.on('data', (chunk: Buffer) => {
      if (size >= limit) return;
      const piece = chunk.length > limit - size ? chunk.subarray(0, limit - size) : chunk;
      parts.push(piece);
      size += piece.length;
      if (size >= limit) { body.destroy(); done(); }
    });
    body.on('end', done);
    body.on('error', done);   // the status says enough
  });
}

export interface HttpRequestSpec {
  method: 'GET' | 'POST';
  url: string;
  headers: Record<string, string>;
  body?: string | Buffer;
}

/** Upstream URLs come from config: parse each one once, not per request. */
const parsedUrls = new Map<string, { origin: string; path: string }>();
function splitUrl(spec: string): { origin: string; path: string } {
  let parsed = parsedUrls.get(spec);
  if (!parsed) {
    const url = new URL(spec);
    parsed = { origin: url.origin, path: url.pathname + url.search };
    if (parsedUrls.size > 1_000) parsedUrls.clear();
    parsedUrls.set(spec, parsed);
  }
  return parsed;
}

export function callUpstream(context: ProviderContext, call: UpstreamCall, spec: HttpRequestSpec): Promise<UpstreamAnswer> {
  // what the answer's callbacks need, taken out of `call`: they do not hold the call (and the request
  // body it carries) while the upstream takes its time
  const { channel, readLimit, signal: callSignal } = call;
  const url = splitUrl(spec.url);
  const pool = context.pools.get(url.origin, { connectMs: channel.timeouts.connectMs });
  const firstByteMs = channel.timeouts.firstByteMs;
  // undici's headersTimeout runs on its coarse (~0.5–1 s tick) timers, so a first-byte timeout of a
  // few hundred ms would fire seconds late across failover attempts: short ones get an exact timer
  // and an abort handle of their own here. Long ones (the default is 60 s) are left to undici, where
  // a tick is noise, and the call's own signal goes to undici as it is.
  let signal = callSignal;
  let firstByteTimer: NodeJS.Timeout | undefined;
  let timedOut = false;
  let forwardAbort: (() => void) | undefined;
  if (firstByteMs < EXACT_FIRST_BYTE_BELOW_MS) {
    const controller = new CallAbort();
    forwardAbort = () => controller.abort(callSignal.reason);
    if (callSignal.aborted) forwardAbort();
    else callSignal.addEventListener('abort', forwardAbort, { once: true });
    firstByteTimer = setTimeout(() => { timedOut = true; controller.abort(); }, firstByteMs);
    signal = controller.signal;
  }
  return new Promise((resolve, reject) => {
    requestUpstream(pool, {
      method: spec.method,
      path: url.path,
      headers: spec.headers,
      body: spec.body,
      signal,
      headersTimeout: firstByteMs,
      bodyTimeout: channel.timeouts.idleMs,
    }, (error, head) => {
      clearTimeout(firstByteTimer);
      if (error) {
        if (forwardAbort) callSignal.removeEventListener('abort', forwardAbort);
        reject(fromTransportError(timedOut ? { code: 'UND_ERR_HEADERS_TIMEOUT' } : error, channel.name));
        return;
      }
      const { status, contentType, body } = head!;
      if (status < 200 || status >= 300) {
        readBounded(body, MAX_ERROR_BODY).then((text) => reject(fromUpstreamStatus(status, text, channel.name, upstreamSecrets(channel))));
        return;
      }
      if (readLimit === undefined) { resolve({ status, contentType, body }); return; }
      // Read as it arrives (undici hands over the body in the same turn as the head, usually): no
      // chunks held for a reader attached later, no second promise.
      collectBody(body, readLimit, channel.name, (error, bytes) => {
        if (error) reject(error); else resolve({ status, contentType, body, bytes });
      });
    });
  });
}

/**
 * Reads a whole 2xx body, bounded; `done` is called once. Over the bound, or a transport failure
 * while reading, is an upstream error of the channel (retryable), never a crash.
 */
function collectBody(body: BodySource, limit: number, channel: string, done: (error: Error | null, bytes?: Buffer) => void): void {
  const parts: Buffer[] = [];
  let size = 0;
  body.on('data', (chunk: Buffer) => {
    size += chunk.length;
    if (size > limit) {
      body.destroy(Object.assign(new Error(`upstream response exceeds ${limit} bytes`), { code: 'UPSTREAM_TOO_LARGE' }));
      return;
    }
    parts.push(chunk);
  });
  body.on('end', () => done(null, parts.length === 1 ? parts[0] : Buffer.concat(parts, size)));
  body.on('error', (error: Error) => done(fromTransportError(error, channel)));
}

/** The whole 2xx body, bounded (see collectBody); at once when the call read it already (readLimit). */
export function readAnswer(answer: UpstreamAnswer, limit: number, channel: string): Promise<Buffer> {
  if (answer.bytes !== undefined) return Promise.resolve(answer.bytes);
  return new Promise((resolve, reject) => collectBody(answer.body, limit, channel, (error, bytes) => {
    if (error) reject(error); else resolve(bytes!);
  }));
}
