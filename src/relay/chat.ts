// POST /v1/chat/completions after the request checks: reserve → call (with failover) → stream or
// answer → settle → record. Streams forward upstream bytes as they arrive; only the tail is rewritten.
import type { Caller } from '../auth/api-key';
import { estimateQuota, isPerCall, perCallQuota, usageQuota } from '../billing/pricing';
import { countBudget, countChatPromptTokens, countTokens, estimatePromptTokens } from '../billing/tokens';
import type { ModelConfig } from '../config';
import type { GatewayContext } from '../context';
import { upstreamError, type GatewayErrorShape } from '../errors';
import type { ChatRequestInfo } from '../formats/openai-chat';
import { upstreamChatBytes, withUpstreamOptions } from '../formats/openai-chat';
import { OpenAIStreamTail } from '../formats/openai-stream-tail';
import { parseUsageFromChatResponse, type Usage } from '../formats/openai-usage';
import type { Exchange } from '../http';
import { MAX_ANSWER_BYTES, readAnswer } from '../providers/http-call';
import type { Provider, UpstreamAnswer } from '../providers/types';
import { billedCall } from './billed-call';
import { HeldRequest } from './held-request';
import { withFailover, type Attempt } from './failover';
import { outputBudget } from './output-budget';
import { pipeStream, type PipeOutcome, type StreamTransform } from './stream-pipe';
import { eventTooLarge } from '../formats/sse';
import { ModelRename } from '../formats/model-rename';
import { parseBoundedJson } from '../formats/json-value';
import { utf8Text } from '../formats/utf8-text';

const JSON_HEADERS = { 'content-type': 'application/json' };
/** prompt tokens an image can cost at most (high detail, large), for the bound on reported usage */
const MAX_IMAGE_TOKENS = 10_000;
/** prompt tokens a provider may add of its own beyond the request's bytes, for the bound on reported usage */
const PROMPT_BOUND_SLACK = 4096;

export function quotaBoundError(): GatewayErrorShape {
  return {
    status: 429, type: 'insufficient_quota', code: 'insufficient_quota', retryable: false,
    message: 'the answer reached what this request could reserve (the key\'s quota or the account balance); it was cut off there and billed up to it',
  };
}

/** Usage within the request's bounds: counts above them are billed at the bound (the same object when within). */
export function boundedUsage(usage: Usage, promptBound: number, completionBound: number): Usage {
  if (usage.prompt_tokens <= promptBound && usage.completion_tokens <= completionBound) return usage;
  const prompt = Math.min(usage.prompt_tokens, promptBound);
  const completion = Math.min(usage.completion_tokens, completionBound);
  return { ...usage, prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
}

/**
 * Prompt tokens above this are not a count but a fault, billed at the bound. A token is at least a
 * byte of the prompt; the slack covers what a provider adds itself (tool-use system prompts, templates).
 */
export function promptBoundOf(promptBytes: number, imageCount: number): number {
  return 2 * promptBytes + PROMPT_BOUND_SLACK + MAX_IMAGE_TOKENS * imageCount;
}

export interface ChatCall {
  exchange: Exchange;
  context: GatewayContext;
  caller: Caller;
  model: ModelConfig;
  body: Record<string, unknown>;
  /** the client's bytes of `body` */
  raw: Buffer;
  info: ChatRequestInfo;
}

export function openAIErrorEvent(error: GatewayErrorShape): string {
  return `data: ${JSON.stringify({ error: { message: error.message, type: error.type, param: null, code: error.code } })}\n\n`;
}

export function cachedTokens(usage: Usage): number {
  const details = usage.prompt_tokens_details as { cached_tokens?: unknown } | undefined;
  return typeof details?.cached_tokens === 'number' ? details.cached_tokens : 0;
}

/** Estimated usage when the upstream reported none: the tokenizer over prompt and delivered text. */
function localUsage(messages: unknown, completionText: string): Usage {
  const budget = countBudget();
  const prompt = countChatPromptTokens(Array.isArray(messages) ? messages : [], budget);
  const completion = countTokens(completionText, budget);
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
}

function completionTextOf(parsed: { choices?: { message?: { content?: unknown } }[] }): string {
  return (parsed.choices ?? []).map((choice) => (typeof choice.message?.content === 'string' ? choice.message.content : '')).join('');
}

export function relayChatCompletions(call: ChatCall): Promise<void> {
  const { exchange, context, caller, model, raw, info } = call;
  const request = new HeldRequest(call.body, raw);
  const perCall = isPerCall(model);
  const ratio = (context.config.groups[caller.key.group] ?? context.config.groups.default).ratio;
  const maxOutput = (info.maxTokens ?? model.max_output_tokens) * info.n;
  const promptBytes = raw.length - info.mediaBytes;
  const promptEstimate = estimatePromptTokens(promptBytes, info.messageCount, info.imageCount);
  const estimate = perCall ? perCallQuota(model, info.n, ratio) : estimateQuota(model, promptEstimate, maxOutput, ratio);
  const promptBound = promptBoundOf(promptBytes, info.imageCount);
  const maxTokensDefault = model.reasoning ? model.max_output_tokens : undefined;
  const capable = (provider: Provider) => provider.chatCompletions !== undefined;

  // The relay body is a promise chain, not an async function: one frame fewer (~1 KB) per call.
  return billedCall({ exchange, context, caller, model, endpoint: 'chat.completions', stream: info.stream, estimate }, (scope) => {
    const priced = (usage: Usage, log = false) => {
      const bounded = boundedUsage(usage, promptBound, maxOutput);
      if (log && bounded !== usage) {
        context.log.warn({ model: model.id, channel: scope.channel, prompt_tokens: usage.prompt_tokens, completion_tokens: usage.completion_tokens,
          prompt_bound: promptBound, completion_bound: maxOutput }, 'upstream usage above what the request can cost: billed at the bound');
      }
      const cached = Math.min(cachedTokens(bounded), bounded.prompt_tokens);
      const quota = perCall ? perCallQuota(model, info.n, scope.ratio)
        : usageQuota(model, { prompt_tokens: bounded.prompt_tokens, completion_tokens: bounded.completion_tokens, cached_tokens: cached }, scope.ratio);
      return { usage: bounded, cached, quota };
    };
    const bill = (usage: Usage, source: 'upstream' | 'estimated', status: number, endReason: string, firstByteAt: number | null) => {
      const { usage: bounded, cached, quota } = priced(usage, true);
      scope.settle(quota, {
        promptTokens: bounded.prompt_tokens, completionTokens: bounded.completion_tokens, cacheReadTokens: cached,
        usageSource: perCall ? 'per_call' : source,
      }, status, endReason, firstByteAt);
    };
    const send = (attempt: Attempt, stream: boolean) => {
      scope.channel = attempt.channel.name;
      const options = { model: attempt.upstreamModel, stream, maxTokensDefault };
      const body = request.take();
      const upstreamBody = withUpstreamOptions(body, options);
      return attempt.provider.chatCompletions!({
        channel: attempt.channel, apiKey: attempt.apiKey, upstreamModel: attempt.upstreamModel, model, stream, signal: scope.abort.signal,
        body: upstreamBody, raw: upstreamChatBytes(raw, body, upstreamBody, options), readLimit: stream ? undefined : MAX_ANSWER_BYTES,
      });
    };

    if (!info.stream) {
      return withFailover(context, model, caller.key.group, capable,
        // the bytes themselves when the provider read them (no promise to adopt), else a read
        (attempt) => send(attempt, false).then((answer) => answer.bytes ?? readAnswer(answer, MAX_ANSWER_BYTES, attempt.channel.name)), scope.abort.signal,
      ).then(({ result: bytes, attempt }) => {
        let usage = parseUsageFromChatResponse(bytes);
        let source: 'upstream' | 'estimated' = 'upstream';
        let answer: Buffer | string = bytes;
        if (!usage || attempt.upstreamModel !== model.id) {
          const parsed = parseBoundedJson(utf8Text(bytes)) as Record<string, unknown> & { choices?: { message?: { content?: unknown } }[] } | undefined;
          if (typeof parsed !== 'object' || parsed === null) {
            throw upstreamError(502, `upstream channel ${attempt.channel.name} answered malformed JSON`, 'upstream_malformed', false);
          }
          if (!usage) {
            usage = localUsage(request.get().messages, completionTextOf(parsed));
            source = 'estimated';
            parsed.usage = usage;
          }
          parsed.model = model.id;
          answer = JSON.stringify(parsed);
        }
        bill(usage, source, 200, 'completed', Date.now());
        exchange.respond(200, JSON_HEADERS, answer);
      });
    }

    const tail = new OpenAIStreamTail({ model: model.id, usageChunk: info.includeUsageRequested });
    const fallbackUsage = (text: string) => localUsage(request.get().messages, text);
    let finished: ReturnType<OpenAIStreamTail['finish']> | undefined;
    /** the stream's end; past what the call could reserve, it finishes with `length` and says why */
    const finishTail = (cutEvent?: string) => {
      if (finished !== undefined) return finished;
      if (cutEvent === undefined && !perCall) {
        const { quota } = priced(tail.usage(fallbackUsage).usage);
        if (scope.chargeable(quota) < quota) cutEvent = openAIErrorEvent(quotaBoundError());
      }
      return (finished = tail.finish(fallbackUsage, { cutEvent }));
    };
    const overBudget = perCall ? undefined : outputBudget({
      model, promptTokens: promptEstimate, maxOutput, scope,
      roughTokens: () => tail.completionTextBytes() / 4, deliveredTokens: () => tail.deliveredCompletionTokens(),
    });
    /** set per attempt when its channel maps the model to another upstream name */
    let rename: ModelRename | undefined;
    const transform: StreamTransform = {
      push: (chunk) => {
        let out = tail.push(chunk);
        if (out !== null && rename !== undefined) out = rename.apply(out);
        if (out !== null && overBudget?.(out.length)) {
          transform.cut = { tail: finishTail(openAIErrorEvent(quotaBoundError())).tail, reason: 'quota_bounded' };
        }
        if (tail.overflowed) transform.cut = { tail: finishTail(openAIErrorEvent(eventTooLarge())).tail, reason: 'upstream_event_too_large' };
        return out;
      },
      finish: () => finishTail().tail,
      fail: (error) => openAIErrorEvent(error),
      cut: null,
    };
    const pipe = (attempt: Attempt, answer: UpstreamAnswer) => {
      rename = ModelRename.between(attempt.upstreamModel, model.id);
      transform.finish = () => {
        const result = finishTail();
        return result.finishReason === null && !result.sawDone
          ? openAIErrorEvent({ status: 502, type: 'api_error', code: 'upstream_truncated', message: `upstream channel ${attempt.channel.name} ended the stream early` })
          : rename !== undefined && typeof result.tail !== 'string' ? rename.apply(result.tail) : result.tail;
      };
      return pipeStream(exchange, answer.body, transform, scope.abort, attempt.channel);
    };
    return withFailover<PipeOutcome>(context, model, caller.key.group, capable,
      (attempt) => send(attempt, true).then((answer) => pipe(attempt, answer)), scope.abort.signal,
    ).then(({ result: outcome }) => {
      const result = finishTail();
      const endReason = outcome.endReason === 'completed' && !result.sawDone && result.finishReason !== 'length' ? 'upstream_truncated' : outcome.endReason;
      bill(result.usage, result.usageSource, outcome.error ? outcome.error.status : 200, endReason, outcome.firstByteAt);
    });
  });
}
