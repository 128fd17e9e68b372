// Server-sent events, both directions, per the WHATWG "event stream interpretation" rules:
// bytes → text (a StringDecoder keeps a multi-byte UTF-8 character split across chunks intact)
// → lines (ended by \n, \r\n or \r, even when the \r and the \n arrive in different chunks)
// → events (dispatched on a blank line). A small state machine, no regular expressions on chunks.
import { StringDecoder } from 'node:string_decoder';
import { GatewayError } from '../errors';

export interface SseEvent {
  event?: string;
  data: string;
  id?: string;
}

export interface SseDecoderOptions {
  /**
   * WHATWG discards an event that the stream ends in the middle of (no blank line after it).
   * Set this to dispatch it from `end()` instead, for lenient upstreams.
   */
  dispatchIncompleteAtEnd?: boolean;
  /** bound on the characters held for one event (its lines so far); past it push() throws */
  maxEventChars?: number;
}

/** An upstream event is held whole until its blank line: this bounds the memory one event can take. */
export const MAX_EVENT_BYTES = 1024 * 1024;

export function eventTooLarge(limit = MAX_EVENT_BYTES): GatewayError {
  return new GatewayError({
    status: 502, type: 'api_error', code: 'upstream_event_too_large',
    message: `the upstream sent a stream event larger than ${limit} bytes (the limit on one event); the stream was ended`,
  });
}

const LINE_FEED = '\n';
const CARRIAGE_RETURN = '\r';

export class SseDecoder {
  private readonly utf8 = new StringDecoder('utf8');
  private readonly dispatchIncompleteAtEnd: boolean;
  private readonly maxEventChars: number;
  /** characters of the current event's data lines so far */
  private dataChars = 0;
  /** Text of the current line received so far (its end has not arrived yet). */
  private partialLine = '';
  /** The previous chunk ended with \r: a \n at the start of the next one belongs to the same line end. */
  private pendingCarriageReturn = false;
  private atStreamStart = true;
  private dataLines: string[] = [];
  private eventName: string | undefined;
  private eventId: string | undefined;

  constructor(options: SseDecoderOptions = {}) {
    this.dispatchIncompleteAtEnd = options.dispatchIncompleteAtEnd ?? false;
    this.maxEventChars = options.maxEventChars ?? MAX_EVENT_BYTES;
  }

  push(chunk: Buffer | string): SseEvent[] {
    const text = typeof chunk === 'string' ? chunk : this.utf8.write(chunk);
    const events: SseEvent[] = [];
    this.processText(text, events);
    return events;
  }

  end(): SseEvent[] {
    const events: SseEvent[] = [];
    this.processText(this.utf8.end(), events);
    if (this.dispatchIncompleteAtEnd) {
      if (this.partialLine.length > 0) this.processLine(this.partialLine, events);
      this.dispatch(events);
    }
    this.partialLine = '';
    this.resetEvent();
    return events;
  }

  private processText(text: string, events: SseEvent[]): void {
    if (text.length === 0) return;
    let start = 0;
    if (this.atStreamStart) {
      this.atStreamStart = false;
      if (text.charCodeAt(0) === 0xfeff) start = 1; // a leading byte order mark is not part of the stream
    }
    if (this.pendingCarriageReturn) {
      this.pendingCarriageReturn = false;
      if (text.charCodeAt(start) === 10) start += 1;
    }
    const length = text.length;
    let nextLineFeed = text.indexOf(LINE_FEED, start);
    let nextCarriageReturn = text.indexOf(CARRIAGE_RETURN, start);
    while (nextLineFeed !== -1 || nextCarriageReturn !== -1) {
      let lineEnd: number;
      let afterEnd: number;
      if (nextCarriageReturn !== -1 && (nextLineFeed === -1 || nextCarriageReturn < nextLineFeed)) {
        lineEnd = nextCarriageReturn;
        if (nextLineFeed === nextCarriageReturn + 1) afterEnd = nextLineFeed + 1;
        else {
          afterEnd = nextCarriageReturn + 1;
          if (afterEnd === length) this.pendingCarriageReturn = true;
        }
      } else {
        lineEnd = nextLineFeed;
        afterEnd = nextLineFeed + 1;
      }
      let line = text.slice(start, lineEnd);
      if (this.partialLine.length > 0) {
        line = this.partialLine + line;
        this.partialLine = '';
      }
      this.processLine(line, events);
      start = afterEnd;
      if (nextLineFeed !== -1 && nextLineFeed < start) nextLineFeed = text.indexOf(LINE_FEED, start);
      if (nextCarriageReturn !== -1 && nextCarriageReturn < start) nextCarriageReturn = text.indexOf(CARRIAGE_RETURN, start);
    }
    if (start < length) this.partialLine += text.slice(start);
    if (this.partialLine.length + this.dataChars > this.maxEventChars) {
      this.partialLine = '';
      this.resetEvent();
      throw eventTooLarge(this.maxEventChars);
    }
  }

  private processLine(line: string, events: SseEvent[]): void {
    if (line.length === 0) {
      this.dispatch(events);
      return;
    }
    if (line.charCodeAt(0) === 58) return; // ':' starts a comment
    const colon = line.indexOf(':');
    let field: string;
    let value: string;
    if (colon === -1) {
      field = line;
      value = '';
    } else {
      field = line.slice(0, colon);
      // exactly one space after the colon is part of the syntax, not of the value
      value = line.charCodeAt(colon + 1) === 32 ? line.slice(colon + 2) : line.slice(colon + 1);
    }
    switch (field) {
      case 'data':
        this.dataLines.push(value);
        this.dataChars += value.length;
        if (this.dataChars > this.maxEventChars) {
          this.resetEvent();
          throw eventTooLarge(this.maxEventChars);
        }
        break;
      case 'event':
        this.eventName = value;
        break;
      case 'id':
        if (!value.includes('\0')) this.eventId = value;
        break;
      default:
        break; // `retry` and unknown fields do not concern a proxy
    }
  }

  private dispatch(events: SseEvent[]): void {
    // WHATWG: an event with an empty data buffer is not dispatched
    if (this.dataLines.length > 0) {
      const event: SseEvent = { data: this.dataLines.length === 1 ? this.dataLines[0] : this.dataLines.join('\n') };
      if (this.eventName !== undefined && this.eventName !== '') event.event = this.eventName;
      if (this.eventId !== undefined) event.id = this.eventId;
      events.push(event);
    }
    this.resetEvent();
  }

  private resetEvent(): void {
    this.dataLines = [];
    this.dataChars = 0;
    this.eventName = undefined;
    this.eventId = undefined;
  }
}

/**
 * One event in wire form. Multi-line data becomes several `data:` lines (a bare newline inside a
 * `data:` line would end the event early); a CR or LF in the event name would let the caller
 * inject fields, so it is refused.
 */
export function encodeSseEvent(data: string, event?: string): string {
  let out = '';
  if (event !== undefined) {
    if (event.includes('\n') || event.includes('\r')) throw new TypeError('SSE event name must not contain CR or LF');
    out = `event: ${event}\n`;
  }
  if (!data.includes('\n') && !data.includes('\r')) return `${out}data: ${data}\n\n`;
  for (const line of data.split(/\r\n|\r|\n/)) out += `data: ${line}\n`;
  return `${out}\n`;
}
