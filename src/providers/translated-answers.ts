// Answers of a translated call, turned back into the caller's dialect before any relay sees them:
// a stream becomes a Readable of the other dialect's SSE (decoded event by event, translated, sent
// on as soon as each event is complete), a whole answer becomes a buffered body.
import { pipeline, Readable, Transform } from 'node:stream';
import { OpenAIToAnthropicStream } from '../formats/anthropic-to-openai';
import { AnthropicToOpenAIStream } from '../formats/openai-to-anthropic';
import { SseDecoder, type SseEvent } from '../formats/sse';
import { readAnswer } from './http-call';
import { logWarnings, offloadThreshold, translate } from './translation';
import type { ProviderContext, UpstreamAnswer, UpstreamCall } from './types';

/** bound on a non-stream upstream answer held in memory (as the chat relay's) */
const MAX_ANSWER_BYTES = 64 * 1024 * 1024;

export interface EventTranslator {
  push(event: SseEvent): string;
  /**
   * Text that closes the translated stream at the upstream's end; '' when the upstream stopped
   * before finishing, so the relay sees an unfinished stream and reports it instead of a success.
   */
  end(): string;
}

/**
 * The upstream body decoded as SSE and translated. Backpressure and teardown go both ways through
 * `pipeline`: a paused result pauses the upstream; destroying the result (client gone) aborts the
 * upstream; an upstream failure surfaces as the result's 'error'.
 */
export function translateSseStream(source: Readable, translator: EventTranslator): Readable {
  const decoder = new SseDecoder();
  const translate = (events: SseEvent[]): string => {
    let out = '';
    for (const event of events) out += translator.push(event);
    return out;
  };
  const result = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      try {
        const out = translate(decoder.push(chunk));
        if (out.length > 0) this.push(out);
        callback();
      } catch (error) {
        callback(error as Error);
      }
    },
    flush(callback) {
      try {
        const out = translate(decoder.end()) + translator.end();
        if (out.length > 0) this.push(out);
        callback();
      } catch (error) {
        callback(error as Error);
      }
    },
  });
  // Errors reach the consumer through `result` itself; the callback only keeps pipeline from throwing.
  pipeline(source, result, () => undefined);
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
  };
}

export function streamAnswer(answer: UpstreamAnswer, translator: EventTranslator): UpstreamAnswer {
  return { status: answer.status, contentType: 'text/event-stream', body: translateSseStream(answer.body, translator) };
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
    { text: bytes.toString('utf8'), model: call.model.id, channel: call.channel.name }, bytes.length > offloadThreshold(context));
  logWarnings(context, call.channel.name, direction, translated.warnings);
  return jsonTextAnswer(answer.status, translated.text);
}
