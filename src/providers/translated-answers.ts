// Answers of a translated call, turned back into the caller's dialect before any relay sees them:
// a stream becomes a Readable of the other dialect's SSE (decoded event by event, translated, sent
// on as soon as each event is complete), a whole answer becomes a buffered body.
import { Readable } from 'node:stream';
import { OpenAIToAnthropicStream } from '../formats/anthropic-to-openai';
import { AnthropicToOpenAIStream } from '../formats/anthropic-stream-to-openai';
import { SseDecoder, type SseEvent } from '../formats/sse';
import { utf8Text } from '../formats/utf8-text';
import { MAX_ANSWER_BYTES, readAnswer } from './http-call';
import { logWarnings, offloadThreshold, translate } from './translation';
import type { BodySource } from '../upstream/upstream-call';
import type { ProviderContext, UpstreamAnswer, UpstreamCall } from './types';

export interface EventTranslator {
  push(event: SseEvent): string;
  /** whether the upstream reported usage (asked once the stream is over) */
  usageReported?(): boolean;
  /**
   * Text that closes the translated stream at the upstream's end; '' when the upstream stopped
   * before finishing, so the relay sees an unfinished stream and reports it instead of a success.
   */
  end(): string;
}

/**
 * The upstream body decoded as SSE and translated, as a Readable. Backpressure and teardown go both
 * ways: a full result pauses the upstream until the result is read again; destroying the result
 * (client gone) destroys the upstream body, which aborts the upstream request; an upstream failure,
 * or a translation that throws, surfaces as the result's 'error'.
 */
export function translateSseStream(source: BodySource, translator: EventTranslator): Readable {
  const decoder = new SseDecoder();
  let sourceDone = false;
  const translate = (events: SseEvent[]): string => {
    let out = '';
    for (const event of events) out += translator.push(event);
    return out;
  };
  const result = new Readable({
    read() { source.resume(); },
    destroy(error, callback) {
      if (!sourceDone) { sourceDone = true; source.destroy(); }
      callback(error);
    },
  });
  source.on('data', (chunk: Buffer) => {
    if (sourceDone) return;
    let out: string;
    try { out = translate(decoder.push(chunk)); } catch (error) { result.destroy(error as Error); return; }   // destroys the source too
    if (out.length > 0 && !result.push(out)) source.pause();
  });
  source.on('end', () => {
    if (sourceDone) return;
    sourceDone = true;
    let out: string;
    try { out = translate(decoder.end()) + translator.end(); } catch (error) { result.destroy(error as Error); return; }
    if (out.length > 0) result.push(out);
    result.push(null);
  });
  source.on('error', (error: Error) => {
    if (sourceDone) return;
    sourceDone = true;
    result.destroy(error);
  });
  return result;
}

/** Anthropic events → OpenAI chunks, ending with the usage chunk and [DONE] once the message finished. */
export function anthropicToOpenAIEvents(model: string, includeUsage: boolean): EventTranslator {
  const converter = new AnthropicToOpenAIStream({ model, includeUsage });
  let stopped = false;
  return {
    push(event) {
      if (event.event === 'message_stop') stopped = true;
      return converter.push(event);
    },
    end: () => (stopped || converter.finishReason !== null ? converter.finish() : ''),
  };
}

/** OpenAI chunks → Anthropic events, ending with message_delta and message_stop once the answer finished. */
export function openAIToAnthropicEvents(model: string, inputTokensEstimate: number): EventTranslator {
  const converter = new OpenAIToAnthropicStream({ model, inputTokensEstimate });
  let sawDone = false;
  return {
    push(event) {
      if (event.data.trim() === '[DONE]') sawDone = true;
      return converter.push(event);
    },
    end: () => (sawDone || converter.stopReason !== null ? converter.finish() : ''),
    usageReported: () => converter.usageReported,
  };
}

export function streamAnswer(answer: UpstreamAnswer, translator: EventTranslator): UpstreamAnswer {
  const translated: UpstreamAnswer = { status: answer.status, contentType: 'text/event-stream', body: translateSseStream(answer.body, translator) };
  if (translator.usageReported) translated.usageReported = translator.usageReported;
  return translated;
}

export function jsonTextAnswer(status: number, text: string): UpstreamAnswer {
  return { status, contentType: 'application/json', body: Readable.from([Buffer.from(text)]) };
}

/**
 * A whole (non-stream) upstream answer translated into the caller's dialect: read (bounded), run
 * through the named answer translation (in the pool when large), warnings logged.
 */
export async function translateWholeAnswer(context: ProviderContext, call: UpstreamCall, answer: UpstreamAnswer,
  name: 'openAIToAnthropicAnswer' | 'anthropicToOpenAIAnswer', direction: string): Promise<UpstreamAnswer> {
  const bytes = await readAnswer(answer, MAX_ANSWER_BYTES, call.channel.name);
  const translated = await translate(context, name,
    { text: utf8Text(bytes), model: call.model.id, channel: call.channel.name }, bytes.length > offloadThreshold(context), call.signal);
  logWarnings(context, call.channel.name, direction, translated.warnings);
  return jsonTextAnswer(answer.status, translated.text);
}
