// The relay of the OpenAI endpoints beyond chat (embeddings, legacy completions, responses), after
// the request checks: the frame they share with chat (admission and reservation in billedCall,
// failover over the channels whose provider has the capability, the stream pipe) with the answer
// read whole or rewritten event by event by the endpoint's own dialect code (src/formats), usage
// from the answer or counted locally, the charge bounded, and the client shown what was billed.
// The chat route keeps its own tuned path (src/relay/chat.ts); these routes decode every event.
import { estimateQuota, isPerCall, perCallQuota, usageQuota } from '../billing/pricing';
import type { ModelConfig } from '../config';
import type { GatewayContext } from '../context';
import { badRequest, upstreamError, type GatewayError, type GatewayErrorShape } from '../errors';
import { isObject, type JsonObject } from '../formats/json-value';
import type { Usage } from '../formats/openai-usage';
import { eventTooLarge, SseDecoder, type SseEvent } from '../formats/sse';
import { utf8Text } from '../formats/utf8-text';
import { MAX_ANSWER_BYTES, readAnswer } from '../providers/http-call';
import type { JsonCall, Provider, UpstreamAnswer } from '../providers/types';
import { billedCall, type BilledCallOptions } from './billed-call';
import { HeldRequest } from './held-request';
import { boundedUsage, cachedTokens, quotaBoundError } from './chat';
import { OutputBudget } from './output-budget';
import { withFailover, type Attempt } from './failover';
import { pipeAnswer, type PipeOutcome, type StreamTransform } from './stream-pipe';

const JSON_HEADERS = { 'content-type': 'application/json' };

export type UsageSource = 'upstream' | 'estimated';

/** The endpoint's stream, rewritten event by event for the client (pure code in src/formats). */
export interface StreamRewriter {
  /** what the client gets for this upstream event ('' for nothing) */
  push(event: SseEvent): string;
  /** the tail at the upstream's end ('' for nothing) */
  finish(): string;
  /** the upstream finished the answer (its terminal event came) */
  readonly complete: boolean;
  /** the upstream reported a failure in the stream (its own error event) */
  readonly upstreamError?: boolean;
  /** characters of output delivered so far (a cheap first weighing against the reservation) */
  readonly deliveredChars: number;
  /** tokenizer count of the output delivered so far */
  deliveredTokens(): number;
  /** usage to bill: the upstream's when it reported it, else counted from what was delivered */
  usage(): { usage: Usage; source: UsageSource };
  /** an error as this stream's event, when it needs the stream's own state (else EndpointCall.errorEvent) */
  errorEvent?(error: GatewayErrorShape): string;
}

/** How one endpoint reads and shows its whole (non-stream) answers. */
export interface WholeAnswerDialect {
  /** the answer is this endpoint's object (else the upstream answered garbage: 502) */
  isAnswer(answer: JsonObject): boolean;
  /** usage the upstream reported, undefined when it reported none */
  usage(answer: JsonObject): Usage | undefined;
  /** usage counted locally when the upstream reported none; `request()` is the upstream body */
  localUsage(answer: JsonObject, request: () => JsonObject): Usage;
  /** writes the billed usage and the model name the client asked for into the answer */
  present(answer: JsonObject, usage: Usage, model: string): void;
}

/** A call to one of these endpoints: the billed call's frame (endpoint, stream, estimate, …) and the endpoint's dialect. */
export interface EndpointCall extends Omit<BilledCallOptions, 'estimate'> {
  /** reported usage above these is a fault, billed at the bound; a stream is cut past the completion bound */
  bounds: { prompt: number; completion: number };
  /**
   * prompt tokens estimated from the request: the reservation is these and the completion bound
   * priced (or the per-call price), and a stream's output is weighed against what can be charged
   */
  promptEstimate: number;
  /** the provider's capability for this call, undefined when it has none */
  capability(provider: Provider): ((call: JsonCall) => Promise<UpstreamAnswer>) | undefined;
  /** the 4xx when no channel serving the model has the capability (channel types given) */
  incapable(types: string[]): GatewayError;
  /**
   * the request body for the upstream (the gateway's own fields set); `model` is set per channel.
   * With `raw`, the relay lets go of it once the first attempt is sent (HeldRequest); so the
   * callbacks below get it as `request()`, never from a closure.
   */
  upstreamBody: Record<string, unknown>;
  /** the bytes upstreamBody was parsed from, when it is the client's body unchanged: forwarded as they are where they can be */
  raw?: Buffer;
  whole: WholeAnswerDialect;
  /** a fresh rewriter per stream attempt (stream calls only); `request()` is the upstream body */
  streamRewriter?(request: () => JsonObject): StreamRewriter;
  /** an error as this endpoint's stream event, once the client has bytes (stream calls only) */
  errorEvent?(error: GatewayErrorShape): string;
}

/**
 * Channel types that serve the model to the group but lack the capability, or undefined when one
 * has it. Checked before admission: a call no channel can serve is refused, not billed.
 */
function missingCapability(context: GatewayContext, model: ModelConfig, group: string, capable: (provider: Provider) => boolean): string[] | undefined {
  const types = new Set<string>();
  for (const channel of context.config.channels) {
    if (!channel.models.includes(model.id) || !channel.groups.includes(group)) continue;
    const provider = context.providers.get(channel.type);
    if (provider !== undefined && capable(provider)) return undefined;
    types.add(channel.type);
  }
  return types.size === 0 ? undefined : [...types];
}

/** "model X is served by anthropic channels, …": the start of the incapable() messages. */
export function servedBy(model: ModelConfig, types: string[]): string {
  return `model ${model.id} is served by ${types.join(' and ')} channel${types.length > 1 ? 's' : ''}`;
}

/**
 * The text each attempt sends: the client's bytes as they are where they can go (HeldRequest.bytesFor);
 * else the body without its `model`, serialised once, with the channel's model name put in front.
 */
function upstreamText(request: HeldRequest): (upstreamModel: string, upstreamBody: JsonObject) => string | Buffer {
  let rest: string | undefined;
  return (upstreamModel, upstreamBody) => {
    const bytes = request.bytesFor(upstreamModel, upstreamBody);
    if (bytes !== undefined) return bytes;
    rest ??= JSON.stringify({ ...upstreamBody, model: undefined });
    return rest === '{}' ? `{"model":${JSON.stringify(upstreamModel)}}` : `{"model":${JSON.stringify(upstreamModel)},${rest.slice(1)}`;
  };
}

export const unsupportedEndpoint = (message: string, param = 'model'): GatewayError => badRequest(message, param, 'unsupported_endpoint');

export function relayEndpoint(call: EndpointCall): Promise<void> {
  const { exchange, context, caller, model, stream, capability, whole, bounds, promptEstimate, streamRewriter, endpoint } = call;
  // nothing below refers to `call`, which holds the parsed body (HeldRequest)
  const request = new HeldRequest(call.upstreamBody, call.raw);
  const get = () => request.get();
  const endpointErrorEvent = call.errorEvent;
  const capable = (provider: Provider) => capability(provider) !== undefined;
  const missing = missingCapability(context, model, caller.key.group, capable);
  if (missing !== undefined) return Promise.reject(call.incapable(missing));
  const textFor = upstreamText(request);
  const perCall = isPerCall(model);
  const ratio = (context.config.groups[caller.key.group] ?? context.config.groups.default).ratio;
  const estimate = perCall ? perCallQuota(model, 1, ratio) : estimateQuota(model, promptEstimate, bounds.completion, ratio);

  return billedCall({ exchange, context, caller, model, endpoint, stream, estimate }, (scope) => {
    /** settles the call; returns the usage billed (bounded) */
    const bill = (usage: Usage, source: UsageSource, status: number, endReason: string, firstByteAt: number | null): Usage => {
      const bounded = boundedUsage(usage, bounds.prompt, bounds.completion);
      if (bounded !== usage) {
        context.log.warn({ model: model.id, channel: scope.channel, prompt_tokens: usage.prompt_tokens, completion_tokens: usage.completion_tokens,
          prompt_bound: bounds.prompt, completion_bound: bounds.completion }, 'upstream usage above what the request can cost: billed at the bound');
      }
      const cached = Math.min(cachedTokens(bounded), bounded.prompt_tokens);
      const quota = perCall ? perCallQuota(model, 1, scope.ratio)
        : usageQuota(model, { prompt_tokens: bounded.prompt_tokens, completion_tokens: bounded.completion_tokens, cached_tokens: cached }, scope.ratio);
      scope.settle(quota, {
        promptTokens: bounded.prompt_tokens, completionTokens: bounded.completion_tokens, cacheReadTokens: cached,
        usageSource: perCall ? 'per_call' : source,
      }, status, endReason, firstByteAt);
      return bounded;
    };
    const send = (attempt: Attempt) => {
      scope.channel = attempt.channel.name;
      const body = request.take();
      return capability(attempt.provider)!({
        channel: attempt.channel, apiKey: attempt.apiKey, upstreamModel: attempt.upstreamModel, model, stream, signal: scope.abort.signal,
        body: { ...body, model: attempt.upstreamModel }, raw: textFor(attempt.upstreamModel, body), readLimit: stream ? undefined : MAX_ANSWER_BYTES,
      });
    };

    if (!stream) {
      return withFailover(context, model, caller.key.group, capable,
        (attempt) => send(attempt).then((answer) => answer.bytes ?? readAnswer(answer, MAX_ANSWER_BYTES, attempt.channel.name)), scope.abort.signal,
      ).then(({ result: bytes, attempt }) => {
        let answer: unknown;
        try { answer = JSON.parse(utf8Text(bytes)); } catch { answer = undefined; }
        if (!isObject(answer) || !whole.isAnswer(answer)) {
          throw upstreamError(502, `upstream channel ${attempt.channel.name} answered with something that is not a ${endpoint} answer`, 'upstream_malformed', false);
        }
        const reported = whole.usage(answer);
        const usage = reported ?? whole.localUsage(answer, get);
        const billed = bill(usage, reported ? 'upstream' : 'estimated', 200, 'completed', Date.now());
        const untouched = reported !== undefined && billed === reported && answer.model === model.id;
        if (!untouched) whole.present(answer, billed, model.id);
        exchange.respond(200, JSON_HEADERS, untouched ? bytes : JSON.stringify(answer));
      });
    }

    let rewriter: StreamRewriter | undefined;
    return withFailover<PipeOutcome>(context, model, caller.key.group, capable, (attempt) => pipeAnswer(exchange, send(attempt), () => {
      const current = streamRewriter!(get);
      rewriter = current;
      const errorEvent = (error: GatewayErrorShape) => current.errorEvent?.(error) ?? endpointErrorEvent!(error);
      const decoder = new SseDecoder();
      // past max output or what can be charged, the stream is cut and says why
      const budget = perCall ? undefined : new OutputBudget(model, promptEstimate, bounds.completion, scope,
        { roughOutputTokens: () => current.deliveredChars / 4, deliveredTokens: () => current.deliveredTokens() });
      const transform: StreamTransform = {
        push: (chunk) => {
          let events: SseEvent[];
          try { events = decoder.push(chunk); } catch {
            transform.cut = { tail: errorEvent(eventTooLarge()), reason: 'upstream_event_too_large' };
            return null;
          }
          let out = '';
          for (const event of events) out += current.push(event);
          if (budget?.passed(out.length)) transform.cut = { tail: errorEvent(quotaBoundError()), reason: 'quota_bounded' };
          return out;
        },
        finish: () => {
          let out = '';
          for (const event of decoder.end()) out += current.push(event);
          out += current.finish();
          return current.complete || current.upstreamError ? out
            : out + errorEvent({ status: 502, type: 'api_error', code: 'upstream_truncated', message: `upstream channel ${attempt.channel.name} ended the stream early` });
        },
        fail: errorEvent,
        cut: null,
      };
      return transform;
    }, scope.abort, attempt.channel), scope.abort.signal).then(({ result: outcome }) => {
      const current = rewriter!;
      const endReason = outcome.endReason !== 'completed' ? outcome.endReason
        : current.upstreamError ? 'upstream_error' : current.complete ? 'completed' : 'upstream_truncated';
      const { usage, source } = current.usage();
      bill(usage, source, outcome.error ? outcome.error.status : 200, endReason, outcome.firstByteAt);
    });
  });
}
