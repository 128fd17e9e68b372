// Providers are registered as data: a channel type names a provider; a provider implements the
// capabilities it has as optional methods. Generic code never names a provider.
import type { ChannelConfig, ModelConfig } from '../config';
import type { VideoTask } from '../formats/video';
import type { Logger } from '../log';
import type { TaskPool } from '../pool';
import type { UpstreamPools } from '../upstream/pools';
import type { BodySource } from '../upstream/upstream-call';

/** The part of AbortSignal a provider may use (an AbortSignal is one). */
export interface CallSignal {
  readonly aborted: boolean;
  readonly reason?: unknown;
  addEventListener(type: 'abort', listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: 'abort', listener: () => void): void;
}

export interface UpstreamCall {
  channel: ChannelConfig;
  /** the channel key chosen for this call (keys are used in turn) */
  apiKey: string;
  /** the upstream's name for the model (after model_map) */
  upstreamModel: string;
  model: ModelConfig;
  stream: boolean;
  signal: CallSignal;
  /** extra request headers a dialect needs (anthropic-version, …) */
  headers?: Record<string, string>;
  /**
   * Read a 2xx body whole as it arrives, at most this many bytes, into `UpstreamAnswer.bytes` (for
   * callers that need the whole answer; see readAnswer). Providers that answer in-process may ignore it.
   */
  readLimit?: number;
  /**
   * The prompt count the client was already shown for this call (a translated stream's
   * message_start): an in-process upstream (the simulator) reports this count as its own.
   */
  promptTokens?: number;
}

export interface JsonCall extends UpstreamCall {
  /** the request body, already in the provider's wire format, with the upstream model set */
  body: Record<string, unknown>;
  /** the same body already serialized, when the caller has it (saves a JSON.stringify per call) */
  raw?: string | Buffer;
}

export interface MultipartCall extends UpstreamCall {
  body: Buffer;
  contentType: string;
  /** images asked for (the form's `n`, already validated), so a provider need not re-parse the body */
  n?: number;
}

/** Legacy video API calls: the upstream speaks it under `/<vendor>/v1/api/video/`. */
export interface VideoCall extends UpstreamCall {
  vendor: string;
}

/** A 2xx answer. Non-2xx answers are thrown as GatewayError. */
export interface UpstreamAnswer {
  status: number;
  contentType: string;
  /** undici's answers come as the light body of upstream-call.ts; the simulator's and translations' are Readables */
  body: BodySource;
  /** the whole body, already read (UpstreamCall.readLimit); `body` is then used up */
  bytes?: Buffer;
  /**
   * A translated stream, once over: whether the upstream reported usage. False means the counts the
   * translation showed the client are the local ones, and the call is billed as estimated.
   */
  usageReported?: () => boolean;
}

export interface ProviderContext {
  pools: UpstreamPools;
  /** piscina pool for translating bodies above `offloadThresholdBytes`; without it everything is inline */
  pool?: TaskPool;
  offloadThresholdBytes?: number;
  /** where translation warnings (fields with no counterpart) are logged */
  log?: Logger;
}

export interface Provider {
  /** OpenAI chat completions wire format */
  chatCompletions?(call: JsonCall): Promise<UpstreamAnswer>;
  /** Anthropic messages wire format */
  messages?(call: JsonCall): Promise<UpstreamAnswer>;
  /** OpenAI embeddings wire format (POST /v1/embeddings) */
  embeddings?(call: JsonCall): Promise<UpstreamAnswer>;
  /** OpenAI legacy text completions wire format (POST /v1/completions) */
  completions?(call: JsonCall): Promise<UpstreamAnswer>;
  /** OpenAI Responses wire format (POST /v1/responses), forwarded as is or translated */
  responses?(call: JsonCall): Promise<UpstreamAnswer>;
  /**
   * `responses` goes to an upstream that speaks the Responses API itself, so what only such an
   * upstream can honour (`store: true`, `previous_response_id`, item references, built-in tools)
   * goes there too; a translated `responses` refuses those up front.
   */
  responsesNative?: boolean;
  imageGenerations?(call: JsonCall): Promise<UpstreamAnswer>;
  imageEdits?(call: MultipartCall): Promise<UpstreamAnswer>;
  videoSubmit?(call: JsonCall & VideoCall): Promise<UpstreamAnswer>;
  videoStatus?(call: VideoCall & { taskId: string }): Promise<UpstreamAnswer>;
  /**
   * A provider that runs video tasks in-process (no upstream task to poll) advances a task by one
   * poll here instead of answering videoStatus.
   */
  videoStep?(task: VideoTask, now: number): VideoTask;
}

export type ProviderFactory = (context: ProviderContext) => Provider;
