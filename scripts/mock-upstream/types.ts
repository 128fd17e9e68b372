// Public and internal types of the mock upstream. The public half is the contract integration
// tests and benchmarks rely on; keep it stable.
import type { IncomingMessage, ServerResponse } from 'node:http';

export interface MockFault {
  /** Answer this HTTP status with an error body in the endpoint's dialect. */
  status?: number;
  /** Wait this long before sending headers. */
  delayHeadersMs?: number;
  /** Stream: after this many content chunks go silent for `silenceMs`, then continue. */
  silenceAfterChunks?: number;
  silenceMs?: number;
  /** Stream: destroy the socket after this many content chunks. */
  resetAfterChunks?: number;
  /** Stream: send an event whose data is not JSON in the middle of the stream. */
  malformedSse?: boolean;
  /** Stream: end without `data: [DONE]` (OpenAI) / without `message_stop` (Anthropic). */
  omitDone?: boolean;
  /** Every content piece of the answer is this text (in place of the mock's words). */
  pieceText?: string;
  /** Never send usage, stream or not. */
  omitUsage?: boolean;
  /**
   * Report these counts in place of the true usage (a careless or hostile upstream). Anthropic: input_tokens,
   * output_tokens and cache_read_input_tokens.
   */
  usageOverride?: { prompt_tokens?: number; completion_tokens?: number; /** chat: prompt_tokens_details.cached_tokens; Responses API: input_tokens_details.cached_tokens */ cached_tokens?: number };
  /** Chat and messages: answer with every content piece, whatever max_tokens says. */
  ignoreMaxTokens?: boolean;
  /** Stream: after the first event, send one event of this many bytes that never ends (no blank line), in 64 KiB writes. */
  endlessEventBytes?: number;
}

export interface MultipartFile {
  field: string;
  filename: string;
  mimeType: string;
  size: number;
  sha256: string;
}

export interface MultipartBody {
  fields: Record<string, string[]>;
  files: MultipartFile[];
}

export interface RecordedRequest {
  method: string;
  path: string;
  headers: Record<string, string | string[] | undefined>;
  /** Parsed JSON, a MultipartBody, the raw string when it is neither, or undefined when empty. */
  body: unknown;
  /** The body's text as it came, when it is not multipart. */
  text?: string;
  /** The client closed before the response finished. */
  aborted: boolean;
}

export interface MockUpstreamOptions {
  port?: number;
  /** Default 127.0.0.1. */
  host?: string;
  /** Content chunks per chat stream, default 20. */
  chunks?: number;
  /** Default 0. */
  chunkDelayMs?: number;
  /** When set, requests whose Bearer / x-api-key is not listed get 401. */
  apiKeys?: string[];
  /** Keep RecordedRequest[] (default true; benchmarks pass false). */
  record?: boolean;
}

export interface MockUpstream {
  url: string;
  port: number;
  requests: RecordedRequest[];
  /** The next `count` (default 1) requests of any endpoint get this fault. */
  script(fault: MockFault, count?: number): void;
  /** Clear recorded requests and scripted faults. */
  reset(): void;
  close(): Promise<void>;
}

// ---- internal -------------------------------------------------------------------------------

export type Dialect = 'openai' | 'anthropic' | 'video';

/** One request/response pair as the handlers see it. */
export interface Exchange {
  request: IncomingMessage;
  response: ServerResponse;
  /** Regex captures of the matched route. */
  params: string[];
  body: unknown;
  fault: MockFault | undefined;
  /** The response emitted `close` (finished or the peer went away). */
  closed: boolean;
  /** The mock destroyed the socket on purpose (reset fault), so it is not a client abort. */
  selfDestroyed: boolean;
}

/** Content pieces computed once per server: one piece is one completion token. */
export interface ContentPieces {
  pieces: string[];
  /** JSON string literal of each piece, so stream chunks are plain concatenation. */
  jsonPieces: string[];
  fullText: string;
}

export interface VideoTask {
  taskId: string;
  vendor: string;
  model: string;
  prompt: string;
  images: string[];
  enhancePrompt: boolean;
  createdAt: number;
  polls: number;
  upstreamId: string;
  generationId: string;
}

export interface MockContext {
  /** Filled once the server listens. */
  baseUrl: string;
  chunkDelayMs: number;
  text: ContentPieces;
  timers: Timers;
  videoTasks: Map<string, VideoTask>;
  nextId(): string;
}

/** Timers the stream writer waits on, all cancelled by close() so nothing keeps the process alive. */
export class Timers {
  private readonly pending = new Map<NodeJS.Timeout, () => void>();

  sleep(milliseconds: number): Promise<void> {
    if (milliseconds <= 0) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.pending.delete(timer);
        resolve();
      }, milliseconds);
      this.pending.set(timer, resolve);
    });
  }

  cancelAll(): void {
    for (const [timer, resolve] of this.pending) {
      clearTimeout(timer);
      resolve();
    }
    this.pending.clear();
  }
}
