// Shared setup of the chat, billing and model-list suites: a gateway whose `openai` channel is the
// mock upstream, keys made through the real key API, and the billing arithmetic of DESIGN §5 written
// out independently of src/billing so the tests check the gateway rather than repeat it.
import assert from 'node:assert/strict';
import { after, before, beforeEach } from 'node:test';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import OpenAI from 'openai';
import { EMBEDDED_CONFIG } from '../../src/config';
import { startMockUpstream, type MockUpstream, type MockUpstreamOptions } from '../../scripts/mock-upstream';
import { call, startTestGateway, tempDir, type Backend, type Front, type TestGateway } from '../helpers/gateway';
import { assertMoneyInvariants, moneySnapshot, type MoneySnapshot } from '../helpers/money';

export const QUOTA_PER_USD = 500_000;
/** the mock's default number of content pieces (one piece = one completion token) */
export const MOCK_PIECES = 20;

/** Models served by the mock channel. Prices in USD per 1M tokens (or per call). */
export const MOCK_MODELS = [
  { id: 'mock-chat', owned_by: 'mock-lab', price: { input: 0.15, output: 0.6 } },
  { id: 'mock-vision', owned_by: 'mock-lab', price: { input: 2.5, output: 10 }, multimodal: true, json_mode: true },
  { id: 'mock-reasoner', owned_by: 'mock-lab', reasoning: true, max_output_tokens: 1234, price: { input: 1.1, output: 4.4 } },
  { id: 'mock-percall', owned_by: 'mock-lab', price: { per_call: 0.01 } },
  { id: 'mock-vip', owned_by: 'mock-lab', price: { input: 3, output: 15 }, groups: ['vip'] },
];

export const GROUPS = {
  default: { ratio: 1 },
  vip: { ratio: 1.5 },
  slow: { ratio: 1, rpm: 2 },
  single: { ratio: 1, concurrency: 1 },
};

export interface ChatConfigOptions {
  /** extra channels before the mock one */
  channels?: Record<string, unknown>[];
  /** fields merged into the mock channel */
  mockChannel?: Record<string, unknown>;
  /** leave the mock channel out (the channels option then serves the mock models) */
  withoutMockChannel?: boolean;
}

/** A full raw config: the embedded simulator models plus the mock models on an `openai` channel. */
export function chatConfig(mockUrl: string, options: ChatConfigOptions = {}): Record<string, unknown> {
  const mockChannel = {
    name: 'mock', type: 'openai', base_url: mockUrl, keys: ['upstream-key-1'], models: MOCK_MODELS.map((model) => model.id),
    groups: Object.keys(GROUPS), ...options.mockChannel,
  };
  const simulator = { ...EMBEDDED_CONFIG.channels[0], groups: ['default', 'vip'], simulator: { first_token_delay_ms: 0, tokens_per_second: 0 } };
  return {
    ...EMBEDDED_CONFIG,
    groups: GROUPS,
    models: [...EMBEDDED_CONFIG.models, ...MOCK_MODELS],
    channels: [...(options.channels ?? []), ...(options.withoutMockChannel ? [] : [mockChannel]), simulator],
    limits: { reveal: { count: 10_000, window_seconds: 600 } },
  };
}

export interface ChatSetup {
  gateway: TestGateway;
  mock: MockUpstream;
  url: string;
  close(): Promise<void>;
}

export async function startChatSetup(options: { front?: Front; backend?: Backend; mock?: MockUpstreamOptions; config?: ChatConfigOptions; raw?: (mockUrl: string) => Record<string, unknown> } = {}): Promise<ChatSetup> {
  const mock = await startMockUpstream(options.mock);
  const raw = options.raw ? options.raw(mock.url) : chatConfig(mock.url, options.config);
  const gateway = await startTestGateway({ front: options.front, backend: options.backend, raw });
  return {
    gateway, mock, url: gateway.url,
    async close() { await gateway.close(); await mock.close(); },
  };
}

export interface MoneyScenarios {
  /** the account store of the gateway under test */
  store(): TestGateway['gateway']['context']['store'];
  /** the admin access token (account 1) */
  admin(): string;
  /** takes the money snapshot the next `settled` compares against (each test starts with one) */
  snapshot(): Promise<void>;
  /** commits the settled charges and asserts the money invariants since the snapshot; returns the quota spent */
  settled(label: string): Promise<number>;
}

/**
 * A chat setup for one describe block whose every scenario ends with the money invariants: started
 * before the first test with account 1 topped up (then `ready` hears of it), and before each test the
 * mock reset and a money snapshot taken.
 */
export function moneyScenarios(options: Parameters<typeof startChatSetup>[0], ready: (setup: ChatSetup) => void): MoneyScenarios {
  let setup: ChatSetup | undefined;
  let baseline: MoneySnapshot;
  const current = (): ChatSetup => { assert.ok(setup, 'the chat setup is started before the tests'); return setup; };
  const scenarios: MoneyScenarios = {
    store: () => current().gateway.gateway.context.store,
    admin: () => current().gateway.adminToken,
    async snapshot() { baseline = await moneySnapshot(scenarios.store()); },
    async settled(label) {
      await flushCharges(current());
      return assertMoneyInvariants(scenarios.store(), baseline, label);
    },
  };
  before(async () => {
    setup = await startChatSetup(options);
    await scenarios.store().accounts.topUp(1, 100_000_000);
    ready(setup);
  });
  after(async () => { await setup?.close(); });
  beforeEach(async () => {
    current().mock.reset();
    await flushCharges(current());
    await scenarios.snapshot();
  });
  return scenarios;
}

/** `count` lowercase letters from a fixed pseudo-random sequence: text a tokenizer finds no long pieces in. */
export function randomLetters(count: number, seed: number): string {
  let state = seed;
  let text = '';
  for (let index = 0; index < count; index += 1) {
    state = (state * 1103515245 + 12345) % 2147483648;
    text += String.fromCharCode(97 + (state % 26));
  }
  return text;
}

/** Writes a config file for `startSupervisor({configPath})`. */
export function writeConfigFile(raw: Record<string, unknown>): string {
  const path = join(tempDir('tollgate-config-'), 'config.json');
  writeFileSync(path, JSON.stringify(raw));
  return path;
}

export interface CreatedKey { id: number; key: string }

/** Creates a key through the real API (POST /api/token/) and reveals its full value. */
export async function createKey(baseUrl: string, accessToken: string, fields: Record<string, unknown> = {}): Promise<CreatedKey> {
  const created = await call(baseUrl, 'POST', '/api/token/', { token: accessToken, body: { remain_quota: 5_000_000, ...fields } });
  assert.equal(created.json?.success, true, created.text);
  const id = created.json.data.id as number;
  const revealed = await call(baseUrl, 'POST', `/api/token/${id}/key`, { token: accessToken });
  assert.equal(revealed.json?.success, true, revealed.text);
  return { id, key: revealed.json.data.key as string };
}

export async function keyObject(baseUrl: string, accessToken: string, id: number): Promise<any> {
  const answer = await call(baseUrl, 'GET', `/api/token/${id}`, { token: accessToken });
  assert.equal(answer.json?.success, true, answer.text);
  return answer.json.data;
}

export function client(baseUrl: string, key: string, options: { timeout?: number } = {}): OpenAI {
  return new OpenAI({ apiKey: key, baseURL: `${baseUrl}/v1`, maxRetries: 0, timeout: options.timeout ?? 20_000 });
}

/** Commits every charge settled so far in this gateway (charges are batched a few ms after a response). */
export async function flushCharges(setup: { gateway: TestGateway }): Promise<void> {
  await setup.gateway.gateway.context.ledger.flush();
}

/** Prompt tokens the mock reports: ceil(text characters / 4), at least 1. */
export function mockPromptTokens(texts: string[]): number {
  return Math.max(1, Math.ceil(texts.reduce((sum, text) => sum + text.length, 0) / 4));
}

/**
 * quota = ceil(USD × 500000 × ratio) with USD = (prompt × input + completion × output) / 1e6, in
 * integer arithmetic on prices scaled to 1e-6 USD so no float error can move the ceiling.
 */
export function expectedUsageQuota(price: { input: number; output: number }, promptTokens: number, completionTokens: number, ratio = 1): number {
  const micro = (value: number) => Math.round(value * 1_000_000);
  // USD × 1e12 as an exact integer
  const scaled = BigInt(promptTokens) * BigInt(micro(price.input)) + BigInt(completionTokens) * BigInt(micro(price.output));
  const ratioScaled = BigInt(Math.round(ratio * 1000));
  const numerator = scaled * BigInt(QUOTA_PER_USD) * ratioScaled;
  const denominator = 1_000_000_000_000n * 1000n;
  return Number((numerator + denominator - 1n) / denominator);
}

export function expectedPerCallQuota(perCallUsd: number, count: number, ratio = 1): number {
  const numerator = BigInt(Math.round(perCallUsd * 1_000_000)) * BigInt(count) * BigInt(QUOTA_PER_USD) * BigInt(Math.round(ratio * 1000));
  const denominator = 1_000_000n * 1000n;
  return Number((numerator + denominator - 1n) / denominator);
}

export interface SseEvent { data: string; json?: any }

/** Splits an SSE body into its `data:` events (in order). */
export function sseEvents(text: string): SseEvent[] {
  const events: SseEvent[] = [];
  for (const block of text.split(/\r?\n\r?\n/)) {
    const data = block.split(/\r?\n/).filter((line) => line.startsWith('data:')).map((line) => line.slice(5).trimStart()).join('\n');
    if (data === '') continue;
    let json: unknown;
    try { json = JSON.parse(data); } catch { json = undefined; }
    events.push({ data, json });
  }
  return events;
}

/** POST /v1/chat/completions with fetch; the whole body as text. */
export async function postChat(baseUrl: string, key: string | undefined, body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; headers: Headers; text: string; json: any }> {
  const response = await fetch(`${baseUrl}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(key === undefined ? {} : { authorization: `Bearer ${key}` }), ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await response.text();
  let json: unknown;
  try { json = JSON.parse(text); } catch { json = undefined; }
  return { status: response.status, headers: response.headers, text, json };
}

/** Asserts the stream tail of spec §4.2 rule 2 and returns the final chunk. */
export function assertStreamTail(text: string): any {
  const events = sseEvents(text);
  assert.ok(events.length >= 2, text);
  assert.equal(events[events.length - 1].data, '[DONE]', `the stream ends with data: [DONE]: ${text.slice(-300)}`);
  assert.ok(text.endsWith('data: [DONE]\n\n'), 'nothing after [DONE]');
  // OpenAI's format: when the client asked for include_usage, usage also comes in a chunk of its own
  // with `choices: []` after the last chunk with a choice
  const usageChunk = events[events.length - 2].json;
  const separate = Array.isArray(usageChunk?.choices) && usageChunk.choices.length === 0;
  const finalEvent = events[events.length - (separate ? 3 : 2)];
  const final = finalEvent.json;
  assert.ok(final, `the final chunk is JSON: ${finalEvent.data}`);
  if (separate) assert.deepEqual(usageChunk.usage, final.usage, 'the usage chunk repeats the final chunk\'s usage');
  assert.equal(final.object, 'chat.completion.chunk');
  assert.ok(Array.isArray(final.choices) && final.choices.length >= 1, JSON.stringify(final));
  for (const choice of final.choices) {
    assert.deepEqual(choice.delta, {}, 'the final chunk has an empty delta');
    assert.equal(typeof choice.finish_reason, 'string', 'the final chunk has a non-null finish_reason');
  }
  assert.ok(final.usage && Number.isInteger(final.usage.prompt_tokens) && Number.isInteger(final.usage.completion_tokens), JSON.stringify(final));
  assert.equal(final.usage.total_tokens, final.usage.prompt_tokens + final.usage.completion_tokens);
  for (const event of events.slice(0, separate ? -3 : -2)) {
    assert.ok(event.json, `every event before [DONE] is JSON: ${event.data}`);
    assert.ok(!event.json.usage, 'only the final chunk (and the usage chunk) carries usage');
  }
  return final;
}

/** Polls `check` (bounded) until it returns true. */
export async function eventually(check: () => boolean | Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) assert.fail(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export interface ExpectedError { status: number; code?: string; param?: string | null; type?: string; message?: RegExp }

/**
 * Awaits an SDK call that must fail with `errorClass` (an openai SDK error class) and the given
 * status, code, param and message; returns the error for further checks.
 */
export async function expectApiError(promise: Promise<unknown>, errorClass: new (...args: any[]) => Error, expected: ExpectedError): Promise<any> {
  let caught: any;
  try { await promise; } catch (error) { caught = error; }
  assert.ok(caught, `expected ${errorClass.name}, but the call succeeded`);
  assert.ok((caught as unknown) instanceof errorClass, `expected ${errorClass.name}, got ${caught?.constructor?.name}: ${caught?.message}`);
  assert.equal(caught.status, expected.status, caught.message);
  assert.equal(typeof caught.error?.message, 'string', 'the body is {error:{message,…}}');
  if (expected.code !== undefined) assert.equal(caught.code, expected.code, caught.message);
  if (expected.param !== undefined) assert.equal(caught.param, expected.param, caught.message);
  if (expected.type !== undefined) assert.equal(caught.type, expected.type, caught.message);
  if (expected.message) assert.match(caught.error.message, expected.message);
  return caught;
}
