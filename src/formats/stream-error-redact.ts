// Error events inside an upstream's stream reach the client with the channel's secrets redacted, as
// an upstream's error body does (redact.ts). An event is looked at only when its bytes hold "error"
// (one byte search per output); it is rewritten only when it is an error event: an `event: error`
// field, or JSON data with a non-null "error" member or a "type"/"object" of "error". Generated text never
// matches those (its quotes are escaped), so a model's content passes unchanged. Pure: no I/O.
import { endsAtEventEnd, lastEventEnd, nextEventEnd } from './openai-stream-scan';
import { redactSecrets } from './redact';
import { MAX_EVENT_BYTES } from './sse';

const NEEDLE = 'error';
const ERROR_EVENT = /(?:^|[\r\n])event: ?error\s*(?:[\r\n]|$)|"error"\s*:(?!\s*(?:null|false)\b)|"(?:type|object)"\s*:\s*"error"/;

/** Whether text or bytes end exactly at the end of an event (a blank line). */
function endsAtEvent(out: Buffer | string): boolean {
  const length = out.length;
  if (typeof out === 'string') {
    return out.charCodeAt(length - 1) === 10 && (out.charCodeAt(length - 2) === 10 || (out.charCodeAt(length - 2) === 13 && out.charCodeAt(length - 3) === 10));
  }
  return endsAtEventEnd(out);
}

const R = 0x72;
const E = 0x65;
const O = 0x6f;
const RR = Buffer.from('rr');
/** Outputs from this many bytes on are searched for "rr" rather than for every "r" (see holdsNeedle). */
const PAIR_SEARCH_FROM_BYTES = 512;

/**
 * Whether "error" is in the output. Bytes are searched for its "r", then the bytes around it are
 * compared: Buffer.indexOf with a multi-byte needle sets up a search on every call, dearer than the
 * single-byte search on a chunk of one event or two, the shape models stream. A longer output (a
 * stream that arrived in one chunk, a burst of events) holds many "r": it is searched for "rr".
 */
function holdsNeedle(out: Buffer | string): boolean {
  if (typeof out === 'string') return out.includes(NEEDLE);
  if (out.length >= PAIR_SEARCH_FROM_BYTES) return holdsNeedleByPair(out);
  let at = out.indexOf(R, 1);
  while (at !== -1) {
    if (out[at + 1] === R && out[at - 1] === E && out[at + 2] === O && out[at + 3] === R) return true;
    at = out.indexOf(R, at + 1);
  }
  return false;
}

/** holdsNeedle for a long output: the search stops at each "rr" only. */
function holdsNeedleByPair(out: Buffer): boolean {
  for (let at = out.indexOf(RR, 1); at !== -1; at = out.indexOf(RR, at + 1)) {
    if (out[at - 1] === E && out[at + 2] === O && out[at + 3] === R) return true;
  }
  return false;
}

/**
 * `text` (one or more whole events) with the channel's secrets and anything key-shaped redacted
 * from its error events; other events as they were.
 */
export function redactErrorEvents(text: string, secrets: readonly string[]): string {
  if (!text.includes(NEEDLE)) return text;
  const bytes = Buffer.from(text);
  let out = '';
  let start = 0;
  while (start < bytes.length) {
    const end = nextEventEnd(bytes, start, bytes.length);
    const event = bytes.toString('utf8', start, end === -1 ? bytes.length : end);
    out += event.includes(NEEDLE) && ERROR_EVENT.test(event) ? redactEvent(event, secrets) : event;
    if (end === -1) break;
    start = end;
  }
  return out;
}

function redactEvent(event: string, secrets: readonly string[]): string {
  // an upstream that writes JSON may escape what a secret holds (a URL's slashes, a quote)
  const escaped = secrets.map((secret) => JSON.stringify(secret).slice(1, -1).replace(/\//g, '\\/'));
  return redactSecrets(event, [...secrets, ...escaped.filter((form, index) => form !== secrets[index])]);
}

/**
 * Sits between a stream's transform and the client. Outputs that end at an event boundary and hold
 * no "error" go on as they are (the usual case, and every transform that emits whole events); an
 * output that ends inside an event keeps that event back until its end arrives (at most
 * MAX_EVENT_BYTES), so a secret split over two upstream chunks is still seen whole.
 */
export class StreamErrorRedactor {
  private carry: Buffer | null = null;
  private secretList: readonly string[] | undefined;

  /** `source.secrets()` is asked for only when an error event is met */
  constructor(private readonly source: { secrets(): readonly string[] }) {}

  push(out: Buffer | string | null): Buffer | string | null {
    if (out === null || out.length === 0) return out;
    if (this.carry === null && endsAtEvent(out) && !holdsNeedle(out)) return out;
    const bytes = this.carry === null ? (typeof out === 'string' ? Buffer.from(out) : out) : Buffer.concat([this.carry, typeof out === 'string' ? Buffer.from(out) : out]);
    let end = lastEventEnd(bytes, this.carry === null ? 0 : this.carry.length);
    if (end === 0 && bytes.length > MAX_EVENT_BYTES) end = bytes.length;   // no event end in sight: what is held is bounded
    this.carry = end < bytes.length ? Buffer.from(bytes.subarray(end)) : null;
    if (end === 0) return null;
    const whole = bytes.subarray(0, end);
    return !holdsNeedle(whole) ? whole : redactErrorEvents(whole.toString('utf8'), this.list());
  }

  /**
   * The last output of the stream (its tail, an error event of the gateway's), after what is held.
   * An event the upstream never ended that holds "error" is dropped: a client discards an unended
   * event anyway, and it may end inside a secret that no redaction can recognise by half.
   */
  end(last: Buffer | string): Buffer | string {
    const held = this.carry;
    this.carry = null;
    const all = held === null || holdsNeedle(held) ? last : Buffer.concat([held, typeof last === 'string' ? Buffer.from(last) : last]);
    if (all.length === 0 || !holdsNeedle(all)) return all;
    return redactErrorEvents(typeof all === 'string' ? all : all.toString('utf8'), this.list());
  }

  private list(): readonly string[] {
    return (this.secretList ??= this.source.secrets());
  }
}
