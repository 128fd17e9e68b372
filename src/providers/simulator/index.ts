// The in-process `simulator` channel: deterministic answers in the real wire formats, paced by the
// channel's first-token delay and tokens per second, so `npm start` answers model calls out of the
// box. It goes through the same relay, billing and stream code as a real upstream.
import { Readable } from 'node:stream';
import { countChatPromptTokens } from '../../billing/tokens';
import { countEmbeddingTokens, embeddingInputs, simulateEmbeddings } from '../../formats/openai-embeddings';
import { simulateChatCompletion, simulateChatStream } from '../../formats/simulated-chat';
import { countPromptTokens } from '../../formats/openai-completions';
import { simulateCompletion, simulateCompletionStream, type SimulatedCompletionsRequest } from '../../formats/simulated-completions';
import { simulateImages } from '../../formats/simulated-images';
import { newTaskId, simulateVideoStep, type VideoTask } from '../../formats/video';
import { messagesOverChat } from '../translated-messages';
import { responsesOverChat } from '../translated-responses';
import type { CallSignal, JsonCall, MultipartCall, Provider, ProviderContext, ProviderFactory, UpstreamAnswer, VideoCall } from '../types';

/**
 * The prompt count the simulator reports: the one the client was already shown (a translated
 * stream's message_start), else the tokenizer count the chat relay bills when usage is missing.
 */
function promptTokensOf(call: JsonCall): number {
  if (call.promptTokens !== undefined) return call.promptTokens;
  return countChatPromptTokens(Array.isArray(call.body.messages) ? call.body.messages : []);
}

function delay(ms: number, signal: CallSignal): Promise<void> {
  if (ms <= 0) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => { signal.removeEventListener('abort', onAbort); resolve(); }, ms);
    const onAbort = () => { clearTimeout(timer); reject(Object.assign(new Error('aborted'), { name: 'AbortError' })); };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/** Emits pre-built SSE events: the first after the first-token delay, then at tokens_per_second. */
function pacedStream(events: string[], firstDelayMs: number, tokensPerSecond: number, signal: CallSignal): Readable {
  const gapMs = tokensPerSecond > 0 ? 1000 / tokensPerSecond : 0;
  let index = 0;
  let timer: NodeJS.Timeout | null = null;
  const stream = new Readable({
    read() {
      if (timer) return;
      const push = () => {
        timer = null;
        if (index >= events.length) { stream.push(null); return; }
        const more = stream.push(events[index++]);
        if (more) timer = setTimeout(push, index === 0 ? firstDelayMs : gapMs);
      };
      timer = setTimeout(push, index === 0 ? firstDelayMs : gapMs);
    },
    destroy(error, callback) { if (timer) clearTimeout(timer); callback(error); },
  });
  signal.addEventListener('abort', () => stream.destroy(), { once: true });
  return stream;
}

function jsonAnswer(value: unknown): UpstreamAnswer {
  return { status: 200, contentType: 'application/json', body: Readable.from([Buffer.from(JSON.stringify(value))]) };
}

/**
 * /v1/messages is answered the way an OpenAI-compatible upstream answers it, /v1/responses the way
 * an Anthropic channel answers it: through translation to and from chat completions.
 */
function withTranslatedMessages(context: ProviderContext, provider: Provider): Provider {
  const chatCompletions = provider.chatCompletions!;
  return {
    ...provider,
    messages: messagesOverChat(context, (call, bodyText) => chatCompletions({ ...call, body: JSON.parse(bodyText), raw: undefined })),
    responses: responsesOverChat(context, chatCompletions),
  };
}

export const simulatorProvider: ProviderFactory = (context): Provider => withTranslatedMessages(context, {
  async chatCompletions(call: JsonCall): Promise<UpstreamAnswer> {
    const { first_token_delay_ms: firstDelay, tokens_per_second: tokensPerSecond } = call.channel.simulator;
    const request = { ...call.body, model: call.upstreamModel } as Parameters<typeof simulateChatCompletion>[0];
    const info = { promptTokens: promptTokensOf(call) };
    if (call.stream) {
      const includeUsage = (call.body.stream_options as { include_usage?: boolean } | undefined)?.include_usage === true;
      const events = simulateChatStream(request, info, { includeUsage });
      return { status: 200, contentType: 'text/event-stream', body: pacedStream(events, firstDelay, tokensPerSecond, call.signal) };
    }
    const completion = simulateChatCompletion(request, info) as { usage?: { completion_tokens?: number } };
    const tokens = completion.usage?.completion_tokens ?? 0;
    await delay(firstDelay + (tokensPerSecond > 0 ? (tokens * 1000) / tokensPerSecond : 0), call.signal);
    return jsonAnswer(completion);
  },
  async completions(call: JsonCall): Promise<UpstreamAnswer> {
    const { first_token_delay_ms: firstDelay, tokens_per_second: tokensPerSecond } = call.channel.simulator;
    const request = { ...call.body, model: call.upstreamModel } as unknown as SimulatedCompletionsRequest;
    // the tokenizer count, which the relay would bill were usage missing
    const promptTokens = countPromptTokens(call.body);
    if (call.stream) {
      const includeUsage = (call.body.stream_options as { include_usage?: boolean } | undefined)?.include_usage === true;
      return { status: 200, contentType: 'text/event-stream', body: pacedStream(simulateCompletionStream(request, promptTokens, includeUsage), firstDelay, tokensPerSecond, call.signal) };
    }
    const completion = simulateCompletion(request, promptTokens) as { usage: { completion_tokens: number } };
    await delay(firstDelay + (tokensPerSecond > 0 ? (completion.usage.completion_tokens * 1000) / tokensPerSecond : 0), call.signal);
    return jsonAnswer(completion);
  },
  async embeddings(call: JsonCall): Promise<UpstreamAnswer> {
    await delay(call.channel.simulator.first_token_delay_ms, call.signal);
    return jsonAnswer(simulateEmbeddings({
      model: call.upstreamModel, inputs: embeddingInputs(call.body.input), promptTokens: countEmbeddingTokens(call.body.input),
      encodingFormat: call.body.encoding_format === 'base64' ? 'base64' : 'float',
      dimensions: typeof call.body.dimensions === 'number' ? call.body.dimensions : undefined,
    }));
  },
  async imageGenerations(call: JsonCall): Promise<UpstreamAnswer> {
    await delay(call.channel.simulator.first_token_delay_ms, call.signal);
    const body = call.body as { n?: number; response_format?: 'url' | 'b64_json'; prompt?: string };
    return jsonAnswer(simulateImages({ n: body.n ?? 1, responseFormat: body.response_format, prompt: String(body.prompt ?? '') }));
  },
  async imageEdits(call: MultipartCall): Promise<UpstreamAnswer> {
    await delay(call.channel.simulator.first_token_delay_ms, call.signal);
    return jsonAnswer(simulateImages({ n: call.n ?? 1, responseFormat: 'b64_json', prompt: 'edit' }));
  },
  // Video tasks run in the gateway itself: submit accepts at once, the poller calls videoStep.
  async videoSubmit(call: JsonCall & VideoCall): Promise<UpstreamAnswer> {
    await delay(call.channel.simulator.first_token_delay_ms, call.signal);
    const taskId = newTaskId(call.upstreamModel);
    return jsonAnswer({ success: true, data: { taskId, status: 'processing', message: 'Task submitted to the simulator' } });
  },
  videoStep: (task: VideoTask, now: number): VideoTask => simulateVideoStep(task, now),
});
