// Forwards an OpenAI chat stream as it arrives and rewrites only its tail (spec §4.2 rule 2: the final
// chunk has an empty delta, a non-null finish_reason and `usage`, then `data: [DONE]`).
//
// Why byte searches instead of an SSE decoder here: JSON-parsing every event of a 2,000-event
// stream costs ~8 ms (DESIGN §6). Ordinary events are recognised by the absence of a few byte
// patterns and passed on untouched; only the handful of terminal events (a finish_reason, a usage
// object, [DONE]) are parsed and held back. Inside JSON strings every quote is escaped, so a pattern
// such as `_reason":"` cannot come from generated text; a false alarm only costs one JSON.parse.
// Completion text for local counting is not extracted per event either (see completion-text.ts).
import { randomBytes } from 'node:crypto';
import { countTokens } from '../billing/tokens';
import { CompletionTextSample } from './completion-text';
import { isObject, type JsonObject } from './json-value';
import {
  eventStartBefore, scanResult,
  HAS_CALLS, MAY_BE_TERMINAL, endsAtEventEnd, endsWithDone, eventData, holdsDone, nextEventEnd, scanUnderscores,
} from './openai-stream-scan';
import { StreamIdentity } from './openai-stream-identity';
import { SseFramer } from './sse-framer';
import { canonicalUsage, normalizeUsage, type Usage } from './openai-usage';
import { MAX_EVENT_BYTES } from './sse';

export interface StreamTailResult {
  /** the rewritten end of the stream: text (the usual case: only the final chunk and [DONE]) or bytes */
  tail: Buffer | string;
  usage: Usage;
  usageSource: 'upstream' | 'estimated';
  finishReason: string | null;
  sawDone: boolean;
}

export interface StreamTailOptions {
  /** model name shown to the client in the rewritten tail */
  model: string;
  /** bound on forwarded bytes kept to extract completion text from for local counting (so on that text too) */
  maxTextBytes?: number;
  /** bound on the bytes held for one unfinished event (default MAX_EVENT_BYTES); past it the tail stops */
  maxEventBytes?: number;
  /** the client asked for `stream_options.include_usage`: usage also comes as a chunk of its own with `choices: []` */
  usageChunk?: boolean;
}

export interface FinishOptions {
  /** the stream is cut short: every choice finishes with `length`, and this event precedes [DONE] */
  cutEvent?: string;
  /**
   * Told the stream's usage once the last events are read: the usage the tail shows in its place
   * (the usage billed) and, unless `cutEvent` is given, the event that cuts the stream there.
   */
  bill?(usage: Usage): { usage: Usage; cutEvent?: string };
}

/**
 * Forwarded bytes kept per stream for counting when the upstream reports no usage (or the client
 * left first); past them the count is scaled by forwarded ÷ kept bytes. What is kept lives as long
 * as the stream, so this bounds what an open stream holds and what the garbage collector promotes
 * for it; past it an event costs a counter, nothing more.
 */
export const DEFAULT_MAX_TEXT_BYTES = 4 * 1024;

const LINE_FEED = 10;
const DONE_EVENT = 'data: [DONE]\n\n';
/** finish reasons when the upstream sent none */
const NO_REASON: readonly [number, string][] = [[0, 'stop']];

/**
 * The terminal events OpenAI and most compatible servers send, matched whole: top-level members with
 * plain values, `choices` empty or one choice finishing with an empty delta, `usage` absent, null or
 * an object. A match is read without JSON.parse of the event (the objects, arrays and interned keys
 * of two parsed events per stream). Only the usage object is parsed, and only if it is one JSON
 * value (a hand-written reader of it was slower than JSON.parse; bench/README.md).
 * Anything else (other members, content in the delta, several choices,
 * escapes) takes the general path below, which parses the event.
 */
const PLAIN_MEMBER = String.raw`(?!"usage"|"choices")"[a-z_]{1,64}":(?:"[^"\\]*"|\d{1,20}|null|true|false)`;
const TERMINAL_EVENT = new RegExp(String.raw`^\{(?:${PLAIN_MEMBER},)*"choices":\[(?:\{"index":(\d{1,6}),"delta":\{(?:"role":"assistant")?\},(?:"logprobs":null,)?"finish_reason":"([a-z_]{1,64})"\})?\](?:,${PLAIN_MEMBER})*(?:,"usage":(?:null|(\{.*\})))?(?:,${PLAIN_MEMBER})*\}$`);


function hasDeltaContent(choice: unknown): boolean {
  if (!isObject(choice) || !isObject(choice.delta)) return false;
  for (const key of Object.keys(choice.delta)) {
    if (key === 'role') continue;
    const value = choice.delta[key];
    if (value == null || value === '' || (Array.isArray(value) && value.length === 0)) continue;
    return true;
  }
  return false;
}

export class OpenAIStreamTail {
  private readonly model: string;
  /** complete events out of the chunks; it holds the incomplete last one */
  private readonly framer: SseFramer;
  private done = false;
  private sawDone = false;
  private forwardedAny = false;
  /** id, created and system_fingerprint, which the rewritten tail repeats */
  private readonly identity = new StreamIdentity();
  private upstreamUsage: Usage | undefined;
  /** the upstream's own text of upstreamUsage when canonicalUsage read it */
  private upstreamUsageText: string | undefined;
  private readonly finishReasons = new Map<number, string>();
  private lastFinishReason: string | null = null;
  private readonly text: CompletionTextSample;
  private readonly usageChunk: boolean;
  /** an event grew past maxEventBytes: nothing more is taken from the upstream */
  overflowed = false;
  private usageResult: { usage: Usage; source: 'upstream' | 'estimated' } | undefined;
  /**
   * What an ordinary event touches besides the tail is kept to its bytes: the identity is asked
   * until it is settled, the framer only while it holds part of an event (a chunk of whole events
   * and nothing held before it is handed back as it is), and once the text sample no longer copies,
   * forwarded bytes are counted here and told to it when it is read.
   */
  private identitySettled = false;
  private framerIdle = true;
  private sampleFull = false;
  private untoldBytes = 0;

  constructor(options: StreamTailOptions) {
    this.model = options.model;
    this.text = new CompletionTextSample(options.maxTextBytes ?? DEFAULT_MAX_TEXT_BYTES);
    this.framer = new SseFramer(options.maxEventBytes ?? MAX_EVENT_BYTES);
    this.usageChunk = options.usageChunk ?? false;
  }

  get firstContentSeen(): boolean {
    return this.forwardedAny;
  }

  /**
   * Bytes to send to the client now, or null when everything was held back. What is kept for
   * local counting is a copy: the chunk is not held after the call.
   */
  push(chunk: Buffer): Buffer | null {
    if (this.done || chunk.length === 0) return null;
    let buffer: Buffer | null = chunk;
    let completeEnd = chunk.length;
    // a chunk that ends at an event's end, with nothing held before it, is whole events:
    // the framer would hand it back as it is
    if (!this.framerIdle || !endsAtEventEnd(chunk)) {
      buffer = this.framer.push(chunk);
      this.framerIdle = this.framer.heldBytes === 0;
      if (this.framer.overflowed) {
        // an event without its end past the bound: stop here rather than hold the upstream's bytes without limit
        this.overflowed = true;
        this.done = true;
      }
      if (buffer === null) return null;
      completeEnd = this.framer.end;
    }
    if (!this.identitySettled) {
      this.identity.scan(buffer, completeEnd);
      this.identitySettled = this.identity.settled;
    }

    let output: Buffer | null;
    const flags = scanUnderscores(buffer, 0, completeEnd);
    if (flags & HAS_CALLS) this.text.withArguments = true;
    if ((flags & MAY_BE_TERMINAL) === 0 && !holdsDone(buffer, completeEnd)) {
      output = completeEnd === buffer.length ? buffer : buffer.subarray(0, completeEnd);
    } else if ((flags & MAY_BE_TERMINAL) !== 0) {
      // Terminal events close a stream: the events before the first marker go out as one slice,
      // and only the rest is walked event by event (a whole stream in one chunk stays cheap).
      const from = eventStartBefore(buffer, scanResult.terminalAt);
      const rest = this.processEvents(from === 0 ? buffer : buffer.subarray(from), completeEnd - from);
      output = from === 0 ? rest : rest === null ? buffer.subarray(0, from) : Buffer.concat([buffer.subarray(0, from), rest]);
    } else {
      output = this.processEvents(buffer, completeEnd);
    }
    if (output !== null) this.keep(output);
    return output;
  }

  /**
   * The stream's usage: the upstream's, or else the fallback over the delivered text (scaled past
   * the kept bound). Read once the stream is over; finish() answers the same.
   */
  usage(fallbackUsage?: (completionText: string) => Usage): { usage: Usage; source: 'upstream' | 'estimated' } {
    if (this.usageResult !== undefined) return this.usageResult;
    if (this.upstreamUsage !== undefined) return (this.usageResult = { usage: this.upstreamUsage, source: 'upstream' });
    const text = this.sample().text();
    const usage = this.scaleUsage(fallbackUsage ? fallbackUsage(text) : { prompt_tokens: 0, completion_tokens: countTokens(text), total_tokens: 0 });
    return (this.usageResult = { usage, source: 'estimated' });
  }

  /** Completion tokens delivered so far, counted on the kept text and scaled past it (for bounds mid-stream). */
  deliveredCompletionTokens(): number {
    const sample = this.sample();
    return Math.ceil(countTokens(sample.text()) * sample.scale);
  }

  finish(fallbackUsage?: (completionText: string) => Usage, options: FinishOptions = {}): StreamTailResult {
    const parts: Buffer[] = [];
    // A last event the upstream did not close with a blank line still counts if its lines are complete.
    const carry = this.framer.takeHeld();
    if (!this.done && carry.length > 0 && carry[carry.length - 1].at(-1) === LINE_FEED) {
      const closed = Buffer.concat([...carry, Buffer.from('\n')]);
      const output = this.processEvents(closed, closed.length);
      if (output !== null) {
        this.keep(output);
        parts.push(output);
      }
    }
    this.done = true;

    const { usage, source: usageSource } = this.usage(fallbackUsage);
    const billed = options.bill?.(usage);
    const cutEvent = options.cutEvent ?? billed?.cutEvent;
    const shown = billed?.usage ?? usage;

    let reasons = this.finishReasons.size === 0 ? NO_REASON
      : this.finishReasons.size === 1 ? [this.finishReasons.entries().next().value as [number, string]]
        : [...this.finishReasons].sort((left, right) => left[0] - right[0]);
    if (cutEvent !== undefined) {
      reasons = reasons.map(([index]) => [index, 'length'] as [number, string]);
      this.lastFinishReason = 'length';
    }
    const identity = this.identity;
    const id = identity.id ?? `chatcmpl-${randomBytes(12).toString('hex')}`;
    const created = identity.created ?? Math.floor(Date.now() / 1000);
    // Written out rather than JSON.stringify of a built object (half the cost): only the strings and
    // the usage object go through JSON.stringify, the usage only when the upstream's own text of it
    // cannot be re-emitted (see canonicalUsage). Members in the order OpenAI sends them.
    const head = `data: {"id":${JSON.stringify(id)},"object":"chat.completion.chunk","created":${created},"model":${JSON.stringify(this.model)},"choices":[{"index":`;
    const fingerprint = identity.systemFingerprint === undefined ? '' : `,"system_fingerprint":${JSON.stringify(identity.systemFingerprint)}`;
    const usageText = shown !== usage ? JSON.stringify(shown) : this.upstreamUsageText ?? JSON.stringify(usage);
    let tail = '';
    for (let index = 0; index < reasons.length; index += 1) {
      const usagePart = index === reasons.length - 1 ? `,"usage":${usageText}` : '';
      tail += `${head}${JSON.stringify(reasons[index][0])},"delta":{},"finish_reason":${JSON.stringify(reasons[index][1])}}]${fingerprint}${usagePart}}\n\n`;
    }
    if (this.usageChunk) {
      tail += `data: {"id":${JSON.stringify(id)},"object":"chat.completion.chunk","created":${created},"model":${JSON.stringify(this.model)},"choices":[]${fingerprint},"usage":${usageText}}\n\n`;
    }
    if (cutEvent !== undefined) tail += cutEvent;
    tail += DONE_EVENT;

    // A plain object: a getter in a per-request literal costs V8 an old-space AccessorPair, which
    // keeps the young request graph alive through scavenges (measured: 17× more mark-compacts).
    // The tail stays text when nothing precedes it: the front encodes it as it writes (no Buffer here).
    return {
      tail: parts.length === 0 ? tail : Buffer.concat([...parts, Buffer.from(tail)]),
      usage,
      usageSource,
      finishReason: this.lastFinishReason,
      sawDone: this.sawDone,
    };
  }

  /** UTF-8 bytes of completion text (content, reasoning, tool arguments), scaled past maxTextBytes. */
  completionTextBytes(): number {
    return this.sample().bytes();
  }

  /** Slow path, for the rare pushes that may hold a terminal event: walk them event by event. */
  private processEvents(buffer: Buffer, completeEnd: number): Buffer | null {
    const outputs: Buffer[] = [];
    let runStart = 0; // start of the current run of ordinary events, forwarded as one slice
    let eventStart = 0;
    while (eventStart < completeEnd) {
      const eventEnd = nextEventEnd(buffer, eventStart, completeEnd);
      if (eventEnd === -1) break;
      const flags = scanUnderscores(buffer, eventStart, eventEnd);
      if (flags & HAS_CALLS) this.text.withArguments = true;
      if ((flags & MAY_BE_TERMINAL) !== 0 || endsWithDone(buffer, eventStart, eventEnd)) {
        const handled = this.handleTerminal(buffer.toString('utf8', eventStart, eventEnd));
        if (handled !== undefined) {
          if (eventStart > runStart) outputs.push(buffer.subarray(runStart, eventStart));
          if (handled.length > 0) outputs.push(Buffer.from(handled));
          runStart = eventEnd;
        }
        if (this.done) {
          this.framer.takeHeld(); // nothing after [DONE] is forwarded
          return this.joinOutputs(outputs);
        }
      }
      eventStart = eventEnd;
    }
    if (completeEnd > runStart) outputs.push(buffer.subarray(runStart, completeEnd));
    return this.joinOutputs(outputs);
  }

  private joinOutputs(outputs: Buffer[]): Buffer | null {
    if (outputs.length === 0) return null;
    return outputs.length === 1 ? outputs[0] : Buffer.concat(outputs);
  }

  /**
   * Absorbs a terminal event. Returns the text to forward in its place ('' for nothing), or
   * undefined when it was not terminal after all and goes out verbatim.
   */
  private handleTerminal(block: string): string | undefined {
    const data = eventData(block);
    if (data === undefined) return undefined;
    if (data.trim() === '[DONE]') {
      this.sawDone = true;
      this.done = true;
      return '';
    }
    // the identity comes from the first event; a terminal event that would still set it is parsed
    const identity = this.identity;
    if (identity.id !== undefined && identity.created !== undefined
      && (identity.systemFingerprint !== undefined || !data.includes('"system_fingerprint":"'))) {
      const handled = this.plainTerminal(data);
      if (handled !== undefined) return handled;
    }
    let chunk: unknown;
    try {
      chunk = JSON.parse(data);
    } catch {
      return undefined;
    }
    if (!isObject(chunk)) return undefined;
    const usage = normalizeUsage(chunk.usage);
    const choices = Array.isArray(chunk.choices) ? chunk.choices : [];
    let finishing = false;
    for (const choice of choices) {
      if (!isObject(choice) || choice.finish_reason == null) continue;
      const reason = String(choice.finish_reason);
      this.finishReasons.set(typeof choice.index === 'number' ? choice.index : 0, reason);
      this.lastFinishReason = reason;
      finishing = true;
    }
    if (usage === undefined && !finishing) return undefined;
    if (usage !== undefined) {
      this.upstreamUsage = usage;
      this.upstreamUsageText = undefined;
    }
    identity.fillFrom(chunk);
    // content must never be lost: what the terminal chunk carried goes on, unfinished
    const carrying = choices.filter(hasDeltaContent);
    if (carrying.length === 0) return '';
    const rest: JsonObject = { ...chunk, choices: carrying.map((choice) => ({ ...(choice as JsonObject), finish_reason: null })) };
    delete rest.usage;
    return `data: ${JSON.stringify(rest)}\n\n`;
  }

  /** A terminal event in the common layout (TERMINAL_EVENT), or undefined for the general path. */
  private plainTerminal(data: string): string | undefined {
    const match = TERMINAL_EVENT.exec(data);
    if (match === null) return undefined;
    const reason = match[2];
    const usageText = match[3];
    let usage: Usage | undefined;
    let canonical = false;
    if (usageText !== undefined) {
      usage = canonicalUsage(usageText);
      canonical = usage !== undefined;
      if (!canonical) {
        try { usage = normalizeUsage(JSON.parse(usageText)); } catch { return undefined; }
      }
    }
    if (reason === undefined && usage === undefined) return undefined;
    if (reason !== undefined) {
      this.finishReasons.set(Number(match[1]), reason);
      this.lastFinishReason = reason;
    }
    if (usage !== undefined) {
      this.upstreamUsage = usage;
      this.upstreamUsageText = canonical ? usageText : undefined;
    }
    return '';   // the delta is empty by the pattern: nothing to carry on
  }

  /** Forwarded bytes for the local count; none are copied once the upstream reported usage (usage() answers it). */
  private keep(output: Buffer): void {
    this.forwardedAny = true;
    if (this.sampleFull || this.upstreamUsage !== undefined) { this.untoldBytes += output.length; return; }
    this.text.add(output);
    this.sampleFull = this.text.full;
  }

  /** The text sample, told of the bytes forwarded since it stopped copying. */
  private sample(): CompletionTextSample {
    if (this.untoldBytes > 0) {
      this.text.skip(this.untoldBytes);
      this.untoldBytes = 0;
    }
    return this.text;
  }

  /** Completion counts from the kept text, scaled up when more was forwarded than kept. */
  private scaleUsage(usage: Usage): Usage {
    const scale = this.sample().scale;
    const completion = scale === 1 ? usage.completion_tokens : Math.ceil(usage.completion_tokens * scale);
    return { ...usage, completion_tokens: completion, total_tokens: usage.prompt_tokens + completion };
  }
}
