// Shared setup of the /v1/messages and dialect-translation suites: one mock upstream serving both an
// `anthropic` channel and an `openai` channel, the simulator, and a tiny fixed upstream that reports
// prompt-cache tokens (the mock never does). Keys are made through the real key API.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Anthropic from '@anthropic-ai/sdk';
import { EMBEDDED_CONFIG } from '../../src/config';
import { startMockUpstream, type MockUpstream } from '../../scripts/mock-upstream';
import { after, before } from 'node:test';
import type { Store } from '../../src/store';
import type { RunOptions } from '../../src/pool';
import { startTestGateway, type TestGateway } from '../helpers/gateway';
import { createKey } from './chat-harness';

export const UPSTREAM_KEY = 'upstream-key-1';
/** small enough to test the 413, large enough for the 64 KiB offload bodies */
export const MODEL_BODY_LIMIT = 1024 * 1024;
/** the anthropic channel maps the gateway's name to this upstream name */
export const UPSTREAM_CLAUDE = 'claude-upstream-1';

export const PRICES = {
  claude: { input: 3, output: 15, cached_input: 0.3, cache_creation_input: 3.75 },
  claudeText: { input: 1, output: 5 },
  gpt: { input: 0.15, output: 0.6 },
};

export const MODELS = [
  { id: 'claude-mock', owned_by: 'mock-lab', price: PRICES.claude, multimodal: true, max_output_tokens: 2048 },
  { id: 'claude-text', owned_by: 'mock-lab', price: PRICES.claudeText },
  { id: 'gpt-mock', owned_by: 'mock-lab', price: PRICES.gpt, multimodal: true },
  { id: 'claude-cache', owned_by: 'mock-lab', price: PRICES.claude },
];

/** Usage the cache upstream reports for every call. */
export const CACHE_USAGE = { input_tokens: 100, output_tokens: 10, cache_read_input_tokens: 1000, cache_creation_input_tokens: 200 };
export const CACHE_TEXT = 'Cached hello.';

/** A one-route Anthropic upstream whose answers carry cache read and creation tokens. */
function startCacheUpstream(): Promise<{ url: string; close(): Promise<void> }> {
  const server: Server = createServer((request, response) => {
    const parts: Buffer[] = [];
    request.on('data', (chunk: Buffer) => parts.push(chunk));
    request.on('end', () => {
      const body = JSON.parse(Buffer.concat(parts).toString('utf8')) as { model: string; stream?: boolean };
      const message = { id: 'msg_cache1', type: 'message', role: 'assistant', model: body.model, stop_sequence: null };
      if (!body.stream) {
        response.writeHead(200, { 'content-type': 'application/json' });
        response.end(JSON.stringify({ ...message, content: [{ type: 'text', text: CACHE_TEXT }], stop_reason: 'end_turn', usage: CACHE_USAGE }));
        return;
      }
      const event = (name: string, data: object) => `event: ${name}\ndata: ${JSON.stringify({ type: name, ...data })}\n\n`;
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      response.end(
        event('message_start', { message: { ...message, content: [], stop_reason: null, usage: { ...CACHE_USAGE, output_tokens: 1 } } })
        + event('content_block_start', { index: 0, content_block: { type: 'text', text: '' } })
        + event('content_block_delta', { index: 0, delta: { type: 'text_delta', text: CACHE_TEXT } })
        + event('content_block_stop', { index: 0 })
        + event('message_delta', { delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: CACHE_USAGE.output_tokens } })
        + event('message_stop', {}),
      );
    });
  });
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      const port = (server.address() as AddressInfo).port;
      resolve({
        url: `http://127.0.0.1:${port}`,
        close: () => new Promise<void>((closed) => { server.close(() => closed()); server.closeAllConnections(); }),
      });
    });
  });
}

export interface MessagesSetup {
  gateway: TestGateway;
  mock: MockUpstream;
  url: string;
  close(): Promise<void>;
}

export async function startMessagesSetup(extra: Record<string, unknown> = {}): Promise<MessagesSetup> {
  const mock = await startMockUpstream({ apiKeys: [UPSTREAM_KEY] });
  const cache = await startCacheUpstream();
  const simulator = { ...EMBEDDED_CONFIG.channels[0], simulator: { first_token_delay_ms: 0, tokens_per_second: 0 } };
  const raw = {
    ...EMBEDDED_CONFIG,
    models: [...EMBEDDED_CONFIG.models, ...MODELS],
    channels: [
      {
        name: 'anthropic-mock', type: 'anthropic', base_url: mock.url, keys: [UPSTREAM_KEY], models: ['claude-mock', 'claude-text'],
        model_map: { 'claude-mock': UPSTREAM_CLAUDE },
      },
      { name: 'openai-mock', type: 'openai', base_url: mock.url, keys: [UPSTREAM_KEY], models: ['gpt-mock'] },
      { name: 'cache-upstream', type: 'anthropic', base_url: `${cache.url}/v1`, keys: ['cache-key'], models: ['claude-cache'] },
      simulator,
    ],
    limits: { reveal: { count: 10_000, window_seconds: 600 }, model_body_bytes: MODEL_BODY_LIMIT },
    ...extra,
  };
  const gateway = await startTestGateway({ raw });
  await gateway.gateway.context.store.accounts.topUp(1, 100_000_000);
  return {
    gateway, mock, url: gateway.url,
    async close() { await gateway.close(); await mock.close(); await cache.close(); },
  };
}

/** What a messages test file shares: the setup, an unlimited key on it, and two shortcuts. */
export interface MessagesFixture {
  setup: MessagesSetup;
  key: string;
  store(): Store;
  lastUpstream(): MockUpstream['requests'][number];
}

/** Call inside a describe: starts the setup (and creates the key) before its tests, closes it after. */
export function useMessagesSetup(): MessagesFixture {
  const fixture: MessagesFixture = {
    setup: undefined as unknown as MessagesSetup,
    key: '',
    store: () => fixture.setup.gateway.gateway.context.store,
    lastUpstream: () => fixture.setup.mock.requests.at(-1)!,
  };
  before(async () => {
    fixture.setup = await startMessagesSetup();
    ({ key: fixture.key } = await createKey(fixture.setup.url, fixture.setup.gateway.adminToken, { unlimited_quota: true }));
  });
  after(async () => { await fixture.setup?.close(); });
  return fixture;
}

/** Records the names of translate tasks sent to the worker pool until `restore()`. */
export function spyOnTranslations(setup: MessagesSetup): { tasks: string[]; restore(): void } {
  const pool = setup.gateway.gateway.context.pool;
  const original = pool.run.bind(pool);
  const tasks: string[] = [];
  pool.run = (async (file: string, name: string, input: unknown, options?: RunOptions) => {
    if (file === 'translate') tasks.push(name);
    return original(file, name, input, options);
  }) as typeof pool.run;
  return { tasks, restore() { pool.run = original; } };
}

export function anthropicClient(baseUrl: string, key: string): Anthropic {
  return new Anthropic({ apiKey: key, baseURL: baseUrl, maxRetries: 0, timeout: 20_000 });
}

/** quota = ceil(USD × 500000) with USD from integer micro-dollar prices, so no float error moves the ceiling. */
export function expectedQuota(price: { input: number; output: number; cached_input?: number; cache_creation_input?: number },
  tokens: { input: number; output: number; cacheRead?: number; cacheCreation?: number }): number {
  const micro = (value: number) => BigInt(Math.round(value * 1_000_000));
  const scaled = BigInt(tokens.input) * micro(price.input) + BigInt(tokens.output) * micro(price.output)
    + BigInt(tokens.cacheRead ?? 0) * micro(price.cached_input ?? price.input)
    + BigInt(tokens.cacheCreation ?? 0) * micro(price.cache_creation_input ?? price.input);
  const numerator = scaled * 500_000n;
  const denominator = 1_000_000_000_000n;
  return Number((numerator + denominator - 1n) / denominator);
}

/** The Anthropic SSE events of a raw stream body: name and parsed data, in order. */
export function anthropicEvents(text: string): { event: string; data: any }[] {
  const events: { event: string; data: any }[] = [];
  for (const block of text.split(/\r?\n\r?\n/)) {
    const lines = block.split(/\r?\n/);
    const name = lines.find((line) => line.startsWith('event:'))?.slice(6).trim() ?? '';
    const data = lines.filter((line) => line.startsWith('data:')).map((line) => line.slice(5).trimStart()).join('\n');
    if (data === '') continue;
    events.push({ event: name, data: JSON.parse(data) });
  }
  return events;
}

/** POST /v1/messages with fetch; the whole body as text. */
export async function postMessages(baseUrl: string, headers: Record<string, string>, body: unknown): Promise<{ status: number; headers: Headers; text: string; json: any }> {
  const response = await fetch(`${baseUrl}/v1/messages`, {
    method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await response.text();
  let json: unknown;
  try { json = JSON.parse(text); } catch { json = undefined; }
  return { status: response.status, headers: response.headers, text, json };
}

/** A 1×1 transparent PNG. */
export const PNG_BASE64 = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=';
