// POST /v1/messages after the request checks: reserve → call (with failover) → stream or answer →
// settle → record, as the chat relay does. Every provider's `messages` answers in Anthropic wire
// bytes (Anthropic channels as they are, OpenAI-speaking ones translated), so this file knows one
// dialect. Streams forward the upstream's bytes as they arrive; usage is read on the side.
import type { Caller } from '../auth/api-key';
import { estimateQuota, isPerCall, perCallQuota, usageQuota } from '../billing/pricing';
import { estimatePromptTokens } from '../billing/tokens';
import type { ModelConfig } from '../config';
import type { GatewayContext } from '../context';
import { renderError, toGatewayError, upstreamError, type GatewayErrorShape } from '../errors';
import type { MessagesRequestInfo } from '../formats/anthropic-messages';
import type { Exchange } from '../http';
import { readAnswer } from '../providers/http-call';
import type { JsonCall } from '../providers/types';
import { fromTransportError } from '../upstream/transport-errors';
import { admit } from './admission';
import { withFailover, type Attempt } from './failover';
import { completionTokensOfMessage, localPromptTokens, MessagesStreamWatch, usageOfMessage, type MessageUsage, type UsageSource } from './messages-usage';
import { usageRecord } from './records';
import { pipeStream, type PipeOutcome } from './stream-pipe';

const JSON_HEADERS = { 'content-type': 'application/json' };
/** bound on a non-stream upstream answer held in memory */
const MAX_ANSWER_BYTES = 64 * 1024 * 1024;
/** Closes a stream whose message_delta arrived but whose message_stop the upstream left out. */
const MESSAGE_STOP_EVENT = 'event: message_stop\ndata: {"type":"message_stop"}\n\n';

export interface MessagesCall {
  exchange: Exchange;
  context: GatewayContext;
  caller: Caller;
  model: ModelConfig;
  body: Record<string, unknown>;
  info: MessagesRequestInfo;
  /** anthropic-version (and anthropic-beta) of the client, forwarded to Anthropic channels */
  headers: Record<string, string>;
}

/** An error after the first byte, as the Anthropic API sends it mid-stream. */
export function anthropicErrorEvent(error: GatewayErrorShape): string {
  return `event: error\ndata: ${renderError(error, 'anthropic').body}\n\n`;
}

export async function relayMessages(call: MessagesCall): Promise<void> {
  const { exchange, context, caller, model, body, info } = call;
  const startedAt = Date.now();
  const perCall = isPerCall(model);
  const group = context.config.groups[caller.key.group] ?? context.config.groups.default;
  const estimate = perCall
    ? perCallQuota(model, 1, group.ratio)
    : estimateQuota(model, estimatePromptTokens(info.promptChars, info.messageCount, info.hasImages ? 1 : 0), info.maxTokens, group.ratio);
  const admission = admit(context, caller, model, estimate);
  const abort = new AbortController();
  exchange.onAbort(() => abort.abort());
  let channelName = '';

  const bill = (usage: MessageUsage | undefined, source: UsageSource, status: number, endReason: string, firstByteAt: number | null) => {
    // Anthropic's input_tokens excludes cache reads and writes; the prompt is all three.
    const promptTokens = usage ? usage.input + usage.cacheRead + usage.cacheCreation : 0;
    const quota = usage === undefined ? 0
      : perCall ? perCallQuota(model, 1, group.ratio)
        : usageQuota(model, {
          prompt_tokens: promptTokens, completion_tokens: usage.output, cached_tokens: usage.cacheRead, cache_creation_tokens: usage.cacheCreation,
        }, group.ratio);
    context.ledger.settle(admission.reservation, quota, usageRecord({
      caller, model, channel: channelName, endpoint: 'messages', startedAt, firstByteAt,
      promptTokens, completionTokens: usage?.output ?? 0, cacheReadTokens: usage?.cacheRead ?? 0, cacheCreationTokens: usage?.cacheCreation ?? 0,
      quota, status, endReason, usageSource: perCall ? 'per_call' : source, stream: info.stream,
    }));
  };

  const upstreamCall = (attempt: Attempt): JsonCall => {
    channelName = attempt.channel.name;
    return {
      channel: attempt.channel, apiKey: attempt.apiKey, upstreamModel: attempt.upstreamModel, model, stream: info.stream,
      signal: abort.signal, headers: call.headers, body: { ...body, model: attempt.upstreamModel },
    };
  };

  try {
    if (!info.stream) {
      const { result: bytes, attempt } = await withFailover(context, model, caller.key.group, (provider) => provider.messages !== undefined,
        async (attempt) => {
          const answer = await attempt.provider.messages!(upstreamCall(attempt));
          try { return await readAnswer(answer, MAX_ANSWER_BYTES); } catch (error) { throw fromTransportError(error, attempt.channel.name); }
        }, abort.signal);
      let message: Record<string, unknown>;
      try { message = JSON.parse(bytes.toString('utf8')) as Record<string, unknown>; } catch { message = {}; }
      if (message.type !== 'message') throw upstreamError(502, `upstream channel ${attempt.channel.name} answered with something that is not a message`, 'upstream_malformed', false);
      let usage = usageOfMessage(message);
      let source: UsageSource = 'upstream';
      let rewritten = false;
      if (!usage) {
        usage = { input: localPromptTokens(body), output: completionTokensOfMessage(message), cacheRead: 0, cacheCreation: 0 };
        source = 'estimated';
        message.usage = { input_tokens: usage.input, output_tokens: usage.output };
        rewritten = true;
      }
      if (message.model !== model.id) { message.model = model.id; rewritten = true; }
      bill(usage, source, 200, 'completed', Date.now());
      exchange.respond(200, JSON_HEADERS, rewritten ? JSON.stringify(message) : bytes);
      return;
    }

    let watch = new MessagesStreamWatch();
    const { result: outcome } = await withFailover<PipeOutcome>(context, model, caller.key.group, (provider) => provider.messages !== undefined,
      async (attempt) => {
        const answer = await attempt.provider.messages!(upstreamCall(attempt));
        watch = new MessagesStreamWatch();
        return pipeStream(exchange, answer.body, {
          push: (chunk) => { watch.push(chunk); return chunk; },
          finish: () => {
            watch.end();
            if (watch.sawMessageStop || watch.upstreamError) return '';
            if (watch.sawStopReason) return MESSAGE_STOP_EVENT;
            return anthropicErrorEvent({ status: 502, type: 'api_error', code: 'upstream_truncated', message: `upstream channel ${attempt.channel.name} ended the stream early` });
          },
          fail: (error) => anthropicErrorEvent(error),
        }, abort, attempt.channel.name);
      }, abort.signal);
    const endReason = outcome.endReason !== 'completed' ? outcome.endReason
      : watch.upstreamError ? 'upstream_error'
        : watch.sawMessageStop || watch.sawStopReason ? 'completed' : 'upstream_truncated';
    const { usage, source } = watch.usage(() => localPromptTokens(body));
    bill(usage, source, outcome.error ? outcome.error.status : 200, endReason, outcome.firstByteAt);
  } catch (error) {
    const shape = toGatewayError(error);
    bill(undefined, 'estimated', shape.status, exchange.aborted ? 'client_gone' : 'failed', null);
    throw error;
  } finally {
    admission.release();
  }
}
