// POST /v1/messages after the request checks: reserve → call (with failover) → stream or answer →
// settle → record, as the chat relay does. Every provider's `messages` answers in Anthropic wire
// bytes (Anthropic channels as they are, OpenAI-speaking ones translated), so this file knows one
// dialect. Streams forward the upstream's bytes as they arrive; usage is read on the side.
import type { Caller } from '../auth/api-key';
import { estimateQuota, isPerCall, perCallQuota, usageQuota } from '../billing/pricing';
import { estimatePromptTokens } from '../billing/tokens';
import type { ModelConfig } from '../config';
import type { GatewayContext } from '../context';
import { renderError, upstreamError, type GatewayErrorShape } from '../errors';
import type { MessagesRequestInfo } from '../formats/anthropic-messages';
import type { Exchange } from '../http';
import { MAX_ANSWER_BYTES, readAnswer } from '../providers/http-call';
import type { Provider } from '../providers/types';
import { billedCall } from './billed-call';
import { HeldRequest } from './held-request';
import { withFailover, type Attempt } from './failover';
import { boundedMessageUsage, completionTokensOfMessage, localPromptTokens, MessagesStreamWatch, usageOfMessage, type MessageUsage, type UsageSource } from './messages-usage';
import { promptBoundOf, quotaBoundError } from './chat';
import { outputBudget } from './output-budget';
import { pipeStream, type PipeOutcome, type StreamTransform } from './stream-pipe';
import { ModelRename } from '../formats/model-rename';
import { AnthropicStreamFill } from '../formats/anthropic-stream-fill';
import { MAX_EVENT_BYTES } from '../formats/sse';
import { parseBoundedJson } from '../formats/json-value';
import { utf8Text } from '../formats/utf8-text';

const JSON_HEADERS = { 'content-type': 'application/json' };
/** Closes a stream whose message_delta arrived but whose message_stop the upstream left out. */
const MESSAGE_STOP_EVENT = 'event: message_stop\ndata: {"type":"message_stop"}\n\n';

export interface MessagesCall {
  exchange: Exchange;
  context: GatewayContext;
  caller: Caller;
  model: ModelConfig;
  /** the parsed request; the relay lets go of it once the first attempt is sent (HeldRequest) */
  body: Record<string, unknown>;
  /** the bytes `body` was parsed from */
  raw: Buffer;
  info: MessagesRequestInfo;
  /** anthropic-version (and anthropic-beta) of the client, forwarded to Anthropic channels */
  headers: Record<string, string>;
}

/** An error after the first byte, as the Anthropic API sends it mid-stream. */
export function anthropicErrorEvent(error: GatewayErrorShape): string {
  return `event: error\ndata: ${renderError(error, 'anthropic').body}\n\n`;
}

/** Not an async function, and nothing in it refers to `call` after the start: see HeldRequest. */
export function relayMessages(call: MessagesCall): Promise<void> {
  const { exchange, context, caller, model, info, headers } = call;
  const request = new HeldRequest(call.body, call.raw);
  const perCall = isPerCall(model);
  const ratio = (context.config.groups[caller.key.group] ?? context.config.groups.default).ratio;
  // as on chat: the request's bytes less its inline media, which lean high for English and CJK alike
  const promptBytes = call.raw.length - info.mediaBytes;
  const promptEstimate = estimatePromptTokens(promptBytes, info.messageCount, info.imageCount);
  const estimate = perCall ? perCallQuota(model, 1, ratio) : estimateQuota(model, promptEstimate, info.maxTokens, ratio);
  const promptBound = promptBoundOf(promptBytes, info.imageCount);
  const capable = (provider: Provider) => provider.messages !== undefined;

  return billedCall({ exchange, context, caller, model, endpoint: 'messages', stream: info.stream, estimate }, (scope) => {
    /** The usage billed: the upstream's (or the local count) within the request's bounds. */
    const bounded = (usage: MessageUsage): MessageUsage => {
      const within = boundedMessageUsage(usage, promptBound, info.maxTokens);
      if (within !== usage) {
        context.log.warn({ model: model.id, key: caller.key.id, channel: scope.channel, reported: usage, prompt_bound: promptBound, completion_bound: info.maxTokens },
          'upstream usage above what the request can cost: billed at the bound');
      }
      return within;
    };
    const bill = (usage: MessageUsage, source: UsageSource, status: number, endReason: string, firstByteAt: number | null) => {
      // Anthropic's input_tokens excludes cache reads and writes; the prompt is all three.
      const promptTokens = usage.input + usage.cacheRead + usage.cacheCreation;
      const quota = perCall ? perCallQuota(model, 1, scope.ratio)
        : usageQuota(model, {
          prompt_tokens: promptTokens, completion_tokens: usage.output, cached_tokens: usage.cacheRead, cache_creation_tokens: usage.cacheCreation,
        }, scope.ratio);
      scope.settle(quota, {
        promptTokens, completionTokens: usage.output, cacheReadTokens: usage.cacheRead, cacheCreationTokens: usage.cacheCreation,
        usageSource: perCall ? 'per_call' : source,
      }, status, endReason, firstByteAt);
    };
    const send = (attempt: Attempt) => {
      scope.channel = attempt.channel.name;
      const body = request.take();
      return attempt.provider.messages!({
        channel: attempt.channel, apiKey: attempt.apiKey, upstreamModel: attempt.upstreamModel, model, stream: info.stream,
        signal: scope.abort.signal, headers, body: { ...body, model: attempt.upstreamModel }, raw: request.bytesFor(attempt.upstreamModel, body),
        readLimit: info.stream ? undefined : MAX_ANSWER_BYTES,
      });
    };

    if (!info.stream) {
      return withFailover(context, model, caller.key.group, capable,
        (attempt) => send(attempt).then((answer) => readAnswer(answer, MAX_ANSWER_BYTES, attempt.channel.name)), scope.abort.signal,
      ).then(({ result: bytes, attempt }) => {
        const parsed = parseBoundedJson(utf8Text(bytes));
        const message = (typeof parsed === 'object' && parsed !== null ? parsed : {}) as Record<string, unknown>;
        if (message.type !== 'message') throw upstreamError(502, `upstream channel ${attempt.channel.name} answered with something that is not a message`, 'upstream_malformed', false);
        const reported = usageOfMessage(message);
        const source: UsageSource = reported ? 'upstream' : 'estimated';
        const usage = bounded(reported ?? { input: localPromptTokens(request.get()), output: completionTokensOfMessage(message), cacheRead: 0, cacheCreation: 0 });
        let rewritten = false;
        // the client sees what is billed: the local count, or the reported usage held to its bounds
        if (!reported || usage !== reported) {
          message.usage = reported
            ? { ...(message.usage as object), input_tokens: usage.input, output_tokens: usage.output, cache_read_input_tokens: usage.cacheRead, cache_creation_input_tokens: usage.cacheCreation }
            : { input_tokens: usage.input, output_tokens: usage.output };
          rewritten = true;
        }
        if (message.model !== model.id) { message.model = model.id; rewritten = true; }
        bill(usage, source, 200, 'completed', Date.now());
        exchange.respond(200, JSON_HEADERS, rewritten ? JSON.stringify(message) : bytes);
      });
    }

    let watch = new MessagesStreamWatch();
    let usageReported: (() => boolean) | undefined;
    return withFailover<PipeOutcome>(context, model, caller.key.group, capable, (attempt) => send(attempt).then((answer) => {
      usageReported = answer.usageReported;
      watch = new MessagesStreamWatch();
      // message_start names the model (the upstream's name is swapped for the client's) and its usage
      // (filled in, with what is billed, when the upstream left it out)
      const first = new AnthropicStreamFill({
        rename: ModelRename.between(attempt.upstreamModel, model.id), promptTokens: () => localPromptTokens(request.get()), maxHeldBytes: MAX_EVENT_BYTES,
      });
      const closing = (): string => {
        if (watch.sawMessageStop || watch.upstreamError) return '';
        if (watch.sawStopReason) return MESSAGE_STOP_EVENT;
        return anthropicErrorEvent({ status: 502, type: 'api_error', code: 'upstream_truncated', message: `upstream channel ${attempt.channel.name} ended the stream early` });
      };
      // past max_tokens or what can be charged, the stream is cut with an error event saying why
      const overBudget = perCall ? undefined : outputBudget({
        model, promptTokens: promptEstimate, maxOutput: info.maxTokens, scope,
        roughTokens: () => watch.deliveredDeltaBytes / 4, deliveredTokens: () => watch.deliveredTokens(),
      });
      const transform: StreamTransform = {
        push: (chunk) => {
          watch.push(chunk);
          const out = first.push(chunk);
          if (out !== null && overBudget?.(out.length)) transform.cut = { tail: anthropicErrorEvent(quotaBoundError()), reason: 'quota_bounded' };
          return out;
        },
        finish: () => {
          watch.end();
          const held = first.finish();
          return held === null ? closing() : typeof held === 'string' ? held + closing() : Buffer.concat([held, Buffer.from(closing())]);
        },
        fail: (error) => anthropicErrorEvent(error),
        cut: null,
      };
      return pipeStream(exchange, answer.body, transform, scope.abort, attempt.channel);
    }), scope.abort.signal).then(({ result: outcome }) => {
      const endReason = outcome.endReason !== 'completed' ? outcome.endReason
        : watch.upstreamError ? 'upstream_error'
          : watch.sawMessageStop || watch.sawStopReason ? 'completed' : 'upstream_truncated';
      const watched = watch.usage(() => localPromptTokens(request.get()));
      const usage = bounded(watched.usage);
      // a translated stream without the upstream's usage showed (and so bills) local counts
      const source = usageReported !== undefined && !usageReported() ? 'estimated' : watched.source;
      bill(usage, source, outcome.error ? outcome.error.status : 200, endReason, outcome.firstByteAt);
    });
  });
}
