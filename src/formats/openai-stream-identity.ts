// The identity of an OpenAI chat stream (id, created, system_fingerprint), which the rewritten tail
// repeats in the events it writes: read off the bytes of the stream's first event without decoding
// it, or taken from a terminal event the tail parsed. Pure: no I/O.
import type { JsonObject } from './json-value';
import { QUOTE, matchesAt, nextEventEnd, readStringValue, valueAfterKey } from './openai-stream-scan';

/** A stream that starts with comments may show its id late; stop looking after this many pushes. */
const IDENTITY_SCAN_PUSHES = 8;
/** searched for as bytes (a string needle is encoded again on every search) */
const ID_KEY = Buffer.from('"id"');
const CREATED_KEY = Buffer.from('"created"');
const FINGERPRINT_KEY = Buffer.from('"system_fingerprint"');
/** The start of a first event in OpenAI's own layout, in its order (see StreamIdentity.inPlace) */
const EVENT_HEAD = Buffer.from('data: {"id":"');
const AFTER_ID = Buffer.from('","object":"chat.completion.chunk","created":');
const MODEL_MEMBER = Buffer.from(',"model":"');
const FINGERPRINT_MEMBER = Buffer.from('","system_fingerprint":"');

export class StreamIdentity {
  id: string | undefined;
  created: number | undefined;
  systemFingerprint: string | undefined;
  private scans = 0;

  /** Known, or no longer looked for: scan() would do nothing more. */
  get settled(): boolean {
    return this.id !== undefined || this.scans >= IDENTITY_SCAN_PUSHES;
  }

  /**
   * Reads id, created and system_fingerprint off the first event among the complete events
   * [0, completeEnd) of a push; the caller asks while the id is unknown, at most
   * IDENTITY_SCAN_PUSHES times.
   */
  scan(whole: Buffer, completeEnd: number): void {
    if (this.scans >= IDENTITY_SCAN_PUSHES) return;
    this.scans += 1;
    if (this.inPlace(whole, completeEnd)) return;
    const idKey = whole.indexOf(ID_KEY);
    if (idKey === -1 || idKey >= completeEnd) return;
    // the rest is looked for in the event holding the id only: a whole stream in one chunk is not
    // searched to its end for a fingerprint it may not have
    const eventEnd = nextEventEnd(whole, idKey, completeEnd);
    const end = eventEnd === -1 ? completeEnd : eventEnd;
    const buffer = end === whole.length ? whole : whole.subarray(0, end);
    const id = readStringValue(buffer, idKey + 4, end);
    if (id === undefined) return;
    this.id = id;
    const createdKey = buffer.indexOf(CREATED_KEY);
    if (createdKey !== -1 && createdKey < end) {
      let position = valueAfterKey(buffer, createdKey + 9, end);
      let created = 0;
      let digits = 0;
      while (position !== -1 && position < end && buffer[position] >= 48 && buffer[position] <= 57 && digits < 12) {
        created = created * 10 + buffer[position] - 48;
        position += 1;
        digits += 1;
      }
      if (digits > 0) this.created = created;
    }
    const fingerprintKey = buffer.indexOf(FINGERPRINT_KEY);
    if (fingerprintKey !== -1 && fingerprintKey < end) this.systemFingerprint = readStringValue(buffer, fingerprintKey + 20, end);
  }

  /**
   * The identity of a first event in OpenAI's own layout (`data: {"id":…,"object":…,"created":…,
   * "model":…,"system_fingerprint":…`), read by position: byte compares and single-byte searches
   * instead of scan's three key searches. It
   * finds what they would find: each key is the first of its kind in the event. Any other layout
   * (spaces, another order, no fingerprint there, a quote in a value) returns false and is searched.
   */
  private inPlace(buffer: Buffer, end: number): boolean {
    if (!matchesAt(buffer, 0, EVENT_HEAD)) return false;
    const idEnd = buffer.indexOf(QUOTE, EVENT_HEAD.length);
    if (idEnd === -1 || !matchesAt(buffer, idEnd, AFTER_ID)) return false;
    const digits = idEnd + AFTER_ID.length;
    let position = digits;
    let created = 0;
    while (position - digits < 12 && buffer[position] >= 48 && buffer[position] <= 57) {
      created = created * 10 + buffer[position] - 48;
      position += 1;
    }
    if (position === digits || !matchesAt(buffer, position, MODEL_MEMBER)) return false;
    const modelEnd = buffer.indexOf(QUOTE, position + MODEL_MEMBER.length);
    if (modelEnd === -1 || !matchesAt(buffer, modelEnd, FINGERPRINT_MEMBER)) return false;
    const fingerprint = modelEnd + FINGERPRINT_MEMBER.length;
    const fingerprintEnd = buffer.indexOf(QUOTE, fingerprint);
    if (fingerprintEnd === -1 || fingerprintEnd >= end) return false;
    this.id = buffer.toString('utf8', EVENT_HEAD.length, idEnd);
    this.created = created;
    this.systemFingerprint = buffer.toString('utf8', fingerprint, fingerprintEnd);
    return true;
  }

  /** What a parsed event carries and is still unknown. */
  fillFrom(chunk: JsonObject): void {
    if (this.id === undefined && typeof chunk.id === 'string') this.id = chunk.id;
    if (this.created === undefined && typeof chunk.created === 'number') this.created = chunk.created;
    if (this.systemFingerprint === undefined && typeof chunk.system_fingerprint === 'string') {
      this.systemFingerprint = chunk.system_fingerprint;
    }
  }
}
