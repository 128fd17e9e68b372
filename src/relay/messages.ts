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
import type { Provider, UpstreamAnswer } from '../providers/types';
import { BilledRelay, type CallScope } from './billed-call';
import { HeldRequest } from './held-request';
import { withFailover, type Attempt } from './failover';
import { boundedMessageUsage, completionTokensOfMessage, localPromptTokens, MessagesStreamWatch, usageOfMessage, type MessageUsage, type UsageSource } from './messages-usage';
import { promptBoundOf, quotaBoundError } from './chat';
import { OutputBudget, type OutputMeter } from './output-budget';
import { pipeAnswer, type PipeOutcome, type StreamTransform } from './stream-pipe';
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

/** Not an async function, and nothing in it keeps `call` after the start: see HeldRequest. */
export function relayMessages(call: MessagesCall): Promise<void> {
  const relay = new MessagesRelay(call);
  return relay.start('messages', call.info.stream, relay.estimate);
}

const canMessage = (provider: Provider) => provider.messages !== undefined;

/** One call's relay: reserve → call with failover → stream or answer → settle (see BilledRelay). */
class MessagesRelay extends BilledRelay {
  private readonly info: MessagesRequestInfo;
  private readonly headers: Record<string, string>;
  private readonly request: HeldRequest;
  private readonly perCall: boolean;
  private readonly promptEstimate: number;
  private readonly promptBound: number;
  readonly estimate: number;
  /** the stream's watch, one per attempt (streams only) */
  private watch: MessagesStreamWatch | null = null;
  private usageReported: (() => boolean) | undefined;

  constructor(call: MessagesCall) {
    super(call);
    const { context, caller, model, info } = call;
    this.info = info;
    this.headers = call.headers;
    this.request = new HeldRequest(call.body, call.raw);
    this.perCall = isPerCall(model);
    const ratio = (context.config.groups[caller.key.group] ?? context.config.groups.default).ratio;
    // as on chat: the request's bytes less its inline media, which lean high for English and CJK alike
    const promptBytes = call.raw.length - info.mediaBytes;
    this.promptEstimate = estimatePromptTokens(promptBytes, info.messageCount, info.imageCount);
    this.estimate = this.perCall ? perCallQuota(model, 1, ratio) : estimateQuota(model, this.promptEstimate, info.maxTokens, ratio);
    this.promptBound = promptBoundOf(promptBytes, info.imageCount);
  }

  protected run(scope: CallScope): Promise<void> {
    const { context, model, caller } = this;
    if (!this.info.stream) {
      return withFailover(context, model, caller.key.group, canMessage, this.answerOf.bind(this), scope.abort.signal).then(this.answered.bind(this));
    }
    return withFailover<PipeOutcome>(context, model, caller.key.group, canMessage, this.streamOf.bind(this), scope.abort.signal).then(this.streamed.bind(this));
  }

  /** The local prompt count, from the request parsed again when it was let go. */
  private localPromptTokens(): number {
    return localPromptTokens(this.request.get());
  }

  /** The usage billed: the upstream's (or the local count) within the request's bounds. */
  private bounded(usage: MessageUsage): MessageUsage {
    const within = boundedMessageUsage(usage, this.promptBound, this.info.maxTokens);
    if (within !== usage) {
      this.context.log.warn({ model: this.model.id, key: this.caller.key.id, channel: this.scope!.channel, reported: usage, prompt_bound: this.promptBound, completion_bound: this.info.maxTokens },
        'upstream usage above what the request can cost: billed at the bound');
    }
    return within;
  }

  private bill(usage: MessageUsage, source: UsageSource, status: number, endReason: string, firstByteAt: number | null): void {
    const { model, perCall } = this;
    const scope = this.scope!;
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
  }

  private send(attempt: Attempt): Promise<UpstreamAnswer> {
    const scope = this.scope!;
    scope.channel = attempt.channel.name;
    const body = this.request.take();
    const stream = this.info.stream;
    return attempt.provider.messages!({
      channel: attempt.channel, apiKey: attempt.apiKey, upstreamModel: attempt.upstreamModel, model: this.model, stream,
      signal: scope.abort.signal, headers: this.headers, body: { ...body, model: attempt.upstreamModel }, raw: this.request.bytesFor(attempt.upstreamModel, body),
      readLimit: stream ? undefined : MAX_ANSWER_BYTES,
    });
  }

  private answerOf(attempt: Attempt): Promise<Buffer> {
    return this.send(attempt).then((answer) => readAnswer(answer, MAX_ANSWER_BYTES, attempt.channel.name));
  }

  private answered({ result: bytes, attempt }: { result: Buffer; attempt: Attempt }): void {
    const { model } = this;
    const parsed = parseBoundedJson(utf8Text(bytes));
    const message = (typeof parsed === 'object' && parsed !== null ? parsed : {}) as Record<string, unknown>;
    if (message.type !== 'message') throw upstreamError(502, `upstream channel ${attempt.channel.name} answered with something that is not a message`, 'upstream_malformed', false);
    const reported = usageOfMessage(message);
    const source: UsageSource = reported ? 'upstream' : 'estimated';
    const usage = this.bounded(reported ?? { input: this.localPromptTokens(), output: completionTokensOfMessage(message), cacheRead: 0, cacheCreation: 0 });
    let rewritten = false;
    // the client sees what is billed: the local count, or the reported usage held to its bounds
    if (!reported || usage !== reported) {
      message.usage = reported
        ? { ...(message.usage as object), input_tokens: usage.input, output_tokens: usage.output, cache_read_input_tokens: usage.cacheRead, cache_creation_input_tokens: usage.cacheCreation }
        : { input_tokens: usage.input, output_tokens: usage.output };
      rewritten = true;
    }
    if (message.model !== model.id) { message.model = model.id; rewritten = true; }
    this.bill(usage, source, 200, 'completed', Date.now());
    this.exchange.respond(200, JSON_HEADERS, rewritten ? JSON.stringify(message) : bytes);
  }

  private streamOf(attempt: Attempt): Promise<PipeOutcome> {
    return pipeAnswer(this.exchange, this.send(attempt), this.transformFor.bind(this, attempt), this.scope!.abort, attempt.channel);
  }

  /** The attempt's stream transform, made when its answer comes. */
  private transformFor(attempt: Attempt, answer: UpstreamAnswer): MessagesStreamTransform {
    const { model, scope } = this;
    this.usageReported = answer.usageReported;
    const watch = this.watch = new MessagesStreamWatch();
    // message_start names the model (the upstream's name is swapped for the client's) and its usage
    // (filled in, with what is billed, when the upstream left it out)
    const first = new AnthropicStreamFill({
      rename: ModelRename.between(attempt.upstreamModel, model.id), promptTokens: this.localPromptTokens.bind(this), maxHeldBytes: MAX_EVENT_BYTES,
    });
    // past max_tokens or what can be charged, the stream is cut with an error event saying why
    const transform = new MessagesStreamTransform(watch, first, attempt.channel.name);
    if (!this.perCall) transform.budget = new OutputBudget(model, this.promptEstimate, this.info.maxTokens, scope!, transform);
    return transform;
  }

  private streamed({ result: outcome }: { result: PipeOutcome }): void {
    const watch = this.watch!;   // set by transformFor(), whose stream's outcome this is
    const endReason = outcome.endReason !== 'completed' ? outcome.endReason
      : watch.upstreamError ? 'upstream_error'
        : watch.sawMessageStop || watch.sawStopReason ? 'completed' : 'upstream_truncated';
    const watched = watch.usage(this.localPromptTokens.bind(this));
    const usage = this.bounded(watched.usage);
    // a translated stream without the upstream's usage showed (and so bills) local counts
    const usageReported = this.usageReported;
    const source = usageReported !== undefined && !usageReported() ? 'estimated' : watched.source;
    this.bill(usage, source, outcome.error ? outcome.error.status : 200, endReason, outcome.firstByteAt);
  }
}

/** A stream's bytes as they go out: watched for usage, message_start repaired, output weighed against the budget. */
class MessagesStreamTransform implements StreamTransform, OutputMeter {
  cut: StreamTransform['cut'] = null;
  /** the output's bound (none for a model priced per call) */
  budget: OutputBudget | undefined;

  constructor(private readonly watch: MessagesStreamWatch, private readonly first: AnthropicStreamFill, private readonly channelName: string) {}

  roughOutputTokens(): number { return this.watch.deliveredDeltaBytes / 4; }
  deliveredTokens(): number { return this.watch.deliveredTokens(); }

  push(chunk: Buffer): Buffer | string | null {
    this.watch.push(chunk);
    const out = this.first.push(chunk);
    if (out !== null && this.budget?.passed(out.length)) this.cut = { tail: anthropicErrorEvent(quotaBoundError()), reason: 'quota_bounded' };
    return out;
  }

  finish(): Buffer | string {
    this.watch.end();
    const held = this.first.finish();
    const closing = this.closing();
    return held === null ? closing : typeof held === 'string' ? held + closing : Buffer.concat([held, Buffer.from(closing)]);
  }

  fail(error: GatewayErrorShape): string {
    return anthropicErrorEvent(error);
  }

  /** What closes a stream the upstream ended: nothing after message_stop, message_stop after a stop reason, else an error. */
  private closing(): string {
    const watch = this.watch;
    if (watch.sawMessageStop || watch.upstreamError) return '';
    if (watch.sawStopReason) return MESSAGE_STOP_EVENT;
    return anthropicErrorEvent({ status: 502, type: 'api_error', code: 'upstream_truncated', message: `upstream channel ${this.channelName} ended the stream early` });
  }
}
