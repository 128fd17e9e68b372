// POST /v1/chat/completions after the request checks: reserve → call (with failover) → stream or
// answer → settle → record. Streams forward upstream bytes as they arrive; only the tail is rewritten.
import type { Caller } from '../auth/api-key';
import { estimateQuota, isPerCall, perCallQuota, usageQuota } from '../billing/pricing';
import { countChatPromptTokens, countTokens, estimatePromptTokens } from '../billing/tokens';
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
import { withFailover, type Attempt } from './failover';
import { pipeStream, type PipeOutcome } from './stream-pipe';

const JSON_HEADERS = { 'content-type': 'application/json' };

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

function cachedTokens(usage: Usage): number {
  const details = usage.prompt_tokens_details as { cached_tokens?: unknown } | undefined;
  return typeof details?.cached_tokens === 'number' ? details.cached_tokens : 0;
}

/** Estimated usage when the upstream reported none: the tokenizer over prompt and delivered text. */
function localUsage(messages: unknown, completionText: string): Usage {
  const prompt = countChatPromptTokens(Array.isArray(messages) ? messages : []);
  const completion = countTokens(completionText);
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
}

function completionTextOf(parsed: { choices?: { message?: { content?: unknown } }[] }): string {
  return (parsed.choices ?? []).map((choice) => (typeof choice.message?.content === 'string' ? choice.message.content : '')).join('');
}

export function relayChatCompletions(call: ChatCall): Promise<void> {
  const { exchange, context, caller, model, body, raw, info } = call;
  const perCall = isPerCall(model);
  const ratio = (context.config.groups[caller.key.group] ?? context.config.groups.default).ratio;
  const maxOutput = info.maxTokens ?? model.max_output_tokens;
  const estimate = perCall
    ? perCallQuota(model, info.n, ratio)
    : estimateQuota(model, estimatePromptTokens(info.promptChars, info.messageCount, info.imageCount), maxOutput * info.n, ratio);
  const maxTokensDefault = model.reasoning ? model.max_output_tokens : undefined;
  const capable = (provider: Provider) => provider.chatCompletions !== undefined;

  // The relay body is a promise chain, not an async function: one frame fewer (~1 KB) per call.
  return billedCall({ exchange, context, caller, model, endpoint: 'chat.completions', stream: info.stream, estimate }, (scope) => {
    const bill = (usage: Usage, source: 'upstream' | 'estimated', status: number, endReason: string, firstByteAt: number | null) => {
      const cached = cachedTokens(usage);
      const quota = perCall ? perCallQuota(model, info.n, scope.ratio)
        : usageQuota(model, { prompt_tokens: usage.prompt_tokens, completion_tokens: usage.completion_tokens, cached_tokens: cached }, scope.ratio);
      scope.settle(quota, {
        promptTokens: usage.prompt_tokens, completionTokens: usage.completion_tokens, cacheReadTokens: cached,
        usageSource: perCall ? 'per_call' : source,
      }, status, endReason, firstByteAt);
    };
    const send = (attempt: Attempt, stream: boolean) => {
      scope.channel = attempt.channel.name;
      const options = { model: attempt.upstreamModel, stream, maxTokensDefault };
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
          let parsed: Record<string, unknown> & { choices?: { message?: { content?: unknown } }[] };
          try { parsed = JSON.parse(bytes.toString('utf8')) as typeof parsed; } catch {
            throw upstreamError(502, `upstream channel ${attempt.channel.name} answered malformed JSON`, 'upstream_malformed', false);
          }
          if (!usage) {
            usage = localUsage(body.messages, completionTextOf(parsed));
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

    const tail = new OpenAIStreamTail({ model: model.id });
    let finished: ReturnType<OpenAIStreamTail['finish']> | undefined;
    const finishTail = () => (finished ??= tail.finish((text) => localUsage(body.messages, text)));
    const pipe = (attempt: Attempt, answer: UpstreamAnswer) => pipeStream(exchange, answer.body, {
      push: (chunk) => tail.push(chunk),
      finish: () => {
        const result = finishTail();
        return result.finishReason === null && !result.sawDone
          ? openAIErrorEvent({ status: 502, type: 'api_error', code: 'upstream_truncated', message: `upstream channel ${attempt.channel.name} ended the stream early` })
          : result.tail;
      },
      fail: (error) => openAIErrorEvent(error),
    }, scope.abort, attempt.channel.name);
    return withFailover<PipeOutcome>(context, model, caller.key.group, capable,
      (attempt) => send(attempt, true).then((answer) => pipe(attempt, answer)), scope.abort.signal,
    ).then(({ result: outcome }) => {
      const result = finishTail();
      const endReason = outcome.endReason === 'completed' && !result.sawDone ? 'upstream_truncated' : outcome.endReason;
      bill(result.usage, result.usageSource, outcome.error ? outcome.error.status : 200, endReason, outcome.firstByteAt);
    });
  });
}
