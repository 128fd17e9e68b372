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
import { BilledRelay, type CallScope } from './billed-call';
import { HeldRequest } from './held-request';
import { withFailover, type Attempt } from './failover';
import { OutputBudget, type OutputMeter } from './output-budget';
import { pipeAnswer, type PipeOutcome, type StreamTransform } from './stream-pipe';
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

/** The cached part of the prompt the upstream reported: a count, so anything but a non-negative number is none. */
export function cachedTokens(usage: Usage): number {
  const details = usage.prompt_tokens_details as { cached_tokens?: unknown } | undefined;
  const cached = details?.cached_tokens;
  return typeof cached === 'number' && Number.isFinite(cached) && cached > 0 ? Math.round(cached) : 0;
}

/** `usage` showing `cached` as its cached tokens (the same object when it already does, or reports none and `cached` is 0). */
function withCachedTokens(usage: Usage, cached: number): Usage {
  const details = usage.prompt_tokens_details as { cached_tokens?: unknown } | undefined;
  if (details?.cached_tokens === cached || (details?.cached_tokens === undefined && cached === 0)) return usage;
  return { ...usage, prompt_tokens_details: { ...details, cached_tokens: cached } };
}

interface PricedUsage {
  /** the usage billed: the reported one held to the request's bounds, its cached tokens a count within the prompt */
  usage: Usage;
  cached: number;
  quota: number;
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
  const relay = new ChatRelay(call);
  return relay.start('chat.completions', call.info.stream, relay.estimate);
}

const canChat = (provider: Provider) => provider.chatCompletions !== undefined;

/** One call's relay: reserve → call with failover → stream or answer → settle (see BilledRelay). */
class ChatRelay extends BilledRelay {
  /** what the relay needs of the request's checks (not their whole result: it holds the last user message's text) */
  private readonly stream: boolean;
  private readonly includeUsageRequested: boolean;
  private readonly choices: number;
  private readonly raw: Buffer;
  private readonly request: HeldRequest;
  private readonly perCall: boolean;
  private readonly maxOutput: number;
  private readonly promptEstimate: number;
  private readonly promptBound: number;
  private readonly maxTokensDefault: number | undefined;
  readonly estimate: number;
  /**
   * The stream's tail (streams only), one per attempt: an attempt that failed before any byte
   * reached the client may have left what it sent in its tail (an early [DONE], a held terminal event).
   */
  private tail: OpenAIStreamTail | null = null;
  private finished: ReturnType<OpenAIStreamTail['finish']> | undefined;

  constructor(call: ChatCall) {
    super(call);
    const { context, caller, model, raw, info } = call;
    this.stream = info.stream;
    this.includeUsageRequested = info.includeUsageRequested;
    this.choices = info.n;
    this.raw = raw;
    this.request = new HeldRequest(call.body, raw);
    this.perCall = isPerCall(model);
    const ratio = (context.config.groups[caller.key.group] ?? context.config.groups.default).ratio;
    this.maxOutput = (info.maxTokens ?? model.max_output_tokens) * info.n;
    const promptBytes = raw.length - info.mediaBytes;
    this.promptEstimate = estimatePromptTokens(promptBytes, info.messageCount, info.imageCount);
    this.estimate = this.perCall ? perCallQuota(model, info.n, ratio) : estimateQuota(model, this.promptEstimate, this.maxOutput, ratio);
    this.promptBound = promptBoundOf(promptBytes, info.imageCount);
    this.maxTokensDefault = model.reasoning ? model.max_output_tokens : undefined;
  }

  protected run(scope: CallScope): Promise<void> {
    const { context, model, caller } = this;
    if (!this.stream) {
      return withFailover(context, model, caller.key.group, canChat, this.answerOf.bind(this), scope.abort.signal).then(this.answered.bind(this));
    }
    const transform = new ChatStreamTransform(this);
    if (!this.perCall) transform.budget = new OutputBudget(model, this.promptEstimate, this.maxOutput, scope, transform);
    return withFailover<PipeOutcome>(context, model, caller.key.group, canChat, this.streamOf.bind(this, transform), scope.abort.signal)
      .then(this.streamed.bind(this));
  }

  /** The usage billed for `usage` and its quota (the same usage object when it is billed as reported). */
  private priced(usage: Usage, log = false): PricedUsage {
    const { model, scope } = this;
    const bounded = boundedUsage(usage, this.promptBound, this.maxOutput);
    if (log && bounded !== usage) {
      this.context.log.warn({ model: model.id, channel: scope!.channel, prompt_tokens: usage.prompt_tokens, completion_tokens: usage.completion_tokens,
        prompt_bound: this.promptBound, completion_bound: this.maxOutput }, 'upstream usage above what the request can cost: billed at the bound');
    }
    const cached = Math.min(cachedTokens(bounded), bounded.prompt_tokens);
    const quota = this.perCall ? perCallQuota(model, this.choices, scope!.ratio)
      : usageQuota(model, { prompt_tokens: bounded.prompt_tokens, completion_tokens: bounded.completion_tokens, cached_tokens: cached }, scope!.ratio);
    return { usage: withCachedTokens(bounded, cached), cached, quota };
  }

  private bill(usage: Usage, source: 'upstream' | 'estimated', status: number, endReason: string, firstByteAt: number | null): void {
    this.charge(this.priced(usage, true), source, status, endReason, firstByteAt);
  }

  private charge({ usage: bounded, cached, quota }: PricedUsage, source: 'upstream' | 'estimated', status: number, endReason: string, firstByteAt: number | null): void {
    this.scope!.settle(quota, {
      promptTokens: bounded.prompt_tokens, completionTokens: bounded.completion_tokens, cacheReadTokens: cached,
      usageSource: this.perCall ? 'per_call' : source,
    }, status, endReason, firstByteAt);
  }

  private send(attempt: Attempt, stream: boolean): Promise<UpstreamAnswer> {
    const scope = this.scope!;
    scope.channel = attempt.channel.name;
    const options = { model: attempt.upstreamModel, stream, maxTokensDefault: this.maxTokensDefault };
    const body = this.request.take();
    const upstreamBody = withUpstreamOptions(body, options);
    return attempt.provider.chatCompletions!({
      channel: attempt.channel, apiKey: attempt.apiKey, upstreamModel: attempt.upstreamModel, model: this.model, stream, signal: scope.abort.signal,
      body: upstreamBody, raw: upstreamChatBytes(this.raw, body, upstreamBody, options), readLimit: stream ? undefined : MAX_ANSWER_BYTES,
    });
  }

  /** the bytes themselves when the provider read them (no promise to adopt), else a read */
  private answerOf(attempt: Attempt): Promise<Buffer> {
    return this.send(attempt, false).then((answer) => answer.bytes ?? readAnswer(answer, MAX_ANSWER_BYTES, attempt.channel.name));
  }

  private answered({ result: bytes, attempt }: { result: Buffer; attempt: Attempt }): void {
    const { model } = this;
    const reported = parseUsageFromChatResponse(bytes);
    let parsed: Record<string, unknown> & { choices?: { message?: { content?: unknown } }[] } | undefined;
    if (!reported || attempt.upstreamModel !== model.id) parsed = this.parsedAnswer(bytes, attempt);
    const priced = this.priced(reported ?? localUsage(this.request.get().messages, completionTextOf(parsed!)), true);
    // the client sees what is billed: the local count, or the reported usage held to the request's bounds
    if (priced.usage !== reported) {
      parsed ??= this.parsedAnswer(bytes, attempt);
      parsed.usage = priced.usage;
    }
    if (parsed !== undefined) parsed.model = model.id;
    this.charge(priced, reported ? 'upstream' : 'estimated', 200, 'completed', Date.now());
    this.exchange.respond(200, JSON_HEADERS, parsed === undefined ? bytes : JSON.stringify(parsed));
  }

  /** The upstream's whole answer parsed; malformed JSON is a 502 (before anything is billed). */
  private parsedAnswer(bytes: Buffer, attempt: Attempt): Record<string, unknown> & { choices?: { message?: { content?: unknown } }[] } {
    const parsed = parseBoundedJson(utf8Text(bytes)) as Record<string, unknown> & { choices?: { message?: { content?: unknown } }[] } | undefined;
    if (typeof parsed !== 'object' || parsed === null) {
      throw upstreamError(502, `upstream channel ${attempt.channel.name} answered malformed JSON`, 'upstream_malformed', false);
    }
    return parsed;
  }

  /** Estimated usage of the stream when the upstream reported none: the prompt counted, with `text` delivered. */
  private fallbackUsage(text: string): Usage {
    return localUsage(this.request.get().messages, text);
  }

  /** The stream's end (once), showing the usage billed; past what the call could reserve, it finishes with `length` and says why. */
  finishTail(cutEvent?: string): ReturnType<OpenAIStreamTail['finish']> {
    if (this.finished !== undefined) return this.finished;
    return (this.finished = this.tail!.finish(this.fallbackUsage.bind(this), { cutEvent, bill: this.billedEnd.bind(this) }));
  }

  /** What the stream's end shows for its `usage` (OpenAIStreamTail's FinishOptions.bill). */
  private billedEnd(usage: Usage): { usage: Usage; cutEvent?: string } {
    const { usage: billed, quota } = this.priced(usage);
    if (this.perCall || this.scope!.chargeable(quota) >= quota) return { usage: billed };
    return { usage: billed, cutEvent: openAIErrorEvent(quotaBoundError()) };
  }

  private streamOf(transform: ChatStreamTransform, attempt: Attempt): Promise<PipeOutcome> {
    // the attempt's names, set before its answer comes (attempts run one after another)
    transform.rename = ModelRename.between(attempt.upstreamModel, this.model.id);
    transform.channelName = attempt.channel.name;
    transform.tail = this.tail = new OpenAIStreamTail({ model: this.model.id, usageChunk: this.includeUsageRequested });
    return pipeAnswer(this.exchange, this.send(attempt, true), transform, this.scope!.abort, attempt.channel);
  }

  private streamed({ result: outcome }: { result: PipeOutcome }): void {
    const result = this.finishTail();
    const endReason = outcome.endReason === 'completed' && !result.sawDone && result.finishReason !== 'length' ? 'upstream_truncated' : outcome.endReason;
    this.bill(result.usage, result.usageSource, outcome.error ? outcome.error.status : 200, endReason, outcome.firstByteAt);
  }
}

/** A stream's bytes as they go out: the tail rewritten, the model renamed, output weighed against the budget. */
class ChatStreamTransform implements StreamTransform, OutputMeter {
  cut: StreamTransform['cut'] = null;
  /** set per attempt when its channel maps the model to another upstream name */
  rename: ModelRename | undefined;
  /** the attempt's channel, named when it ends the stream early */
  channelName = '';
  /** the output's bound (none for a model priced per call) */
  budget: OutputBudget | undefined;

  /** the attempt's tail, set before its answer comes */
  tail!: OpenAIStreamTail;

  constructor(private readonly relay: ChatRelay) {}

  roughOutputTokens(): number { return this.tail.completionTextBytes() / 4; }
  deliveredTokens(): number { return this.tail.deliveredCompletionTokens(); }

  push(chunk: Buffer): Buffer | string | null {
    const tail = this.tail;
    let out = tail.push(chunk);
    if (out !== null && this.rename !== undefined) out = this.rename.apply(out);
    if (out !== null && this.budget?.passed(out.length)) {
      this.cut = { tail: this.relay.finishTail(openAIErrorEvent(quotaBoundError())).tail, reason: 'quota_bounded' };
    }
    if (tail.overflowed) this.cut = { tail: this.relay.finishTail(openAIErrorEvent(eventTooLarge())).tail, reason: 'upstream_event_too_large' };
    return out;
  }

  finish(): Buffer | string {
    const result = this.relay.finishTail();
    return result.finishReason === null && !result.sawDone
      ? openAIErrorEvent({ status: 502, type: 'api_error', code: 'upstream_truncated', message: `upstream channel ${this.channelName} ended the stream early` })
      : this.rename !== undefined && typeof result.tail !== 'string' ? this.rename.apply(result.tail) : result.tail;
  }

  fail(error: GatewayErrorShape): string {
    return openAIErrorEvent(error);
  }
}
