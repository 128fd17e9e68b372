// Shared setup of the clients suite (test/clients/): one gateway whose models are served through
// every channel kind, driven by the real client packages. The same model names are served by an
// `anthropic` channel (group "default"), an `openai` channel (group "via-openai") and the simulator
// (group "via-sim"), so one key per group runs a case through each kind with the client unchanged.
// Both mock channels map the gateway's names to upstream names that must never reach a client.
//
// Every case reads the usage record of its call through the real /api/log/ and compares it with
// what the client saw, then ends with the money invariants (test/helpers/money.ts).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import { createServer, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, afterEach, before, beforeEach } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { createAnthropic } from '@ai-sdk/anthropic';
import { createOpenAI } from '@ai-sdk/openai';
import { ChatAnthropic } from '@langchain/anthropic';
import { ChatOpenAI } from '@langchain/openai';
import { startMockUpstream, type MockUpstream } from '../../scripts/mock-upstream';
import { countTokens } from '../../src/billing/tokens';
import { EMBEDDED_CONFIG } from '../../src/config';
import type { UsageRecord } from '../../src/store';
import { call, REPO_ROOT, startTestGateway, tempDir, type TestGateway } from '../helpers/gateway';
import { assertMoneyInvariants, moneySnapshot, type MoneySnapshot } from '../helpers/money';
import { createKey, type CreatedKey } from '../integration/chat-harness';
import { expectedQuota } from '../integration/messages-harness';

export const UPSTREAM_KEY = 'clients-upstream-key';

/** Prices in USD per 1M tokens; the Claude model's are Claude Code's own for that name, so its cost figure can be compared. */
export const PRICES = {
  claude: { input: 3, output: 15, cached_input: 0.3, cache_creation_input: 3.75 },
  gpt: { input: 0.15, output: 0.6, cached_input: 0.075 },
  text: { input: 1, output: 2 },
} as const;

/** Model names as clients send them; each is served by every channel kind. */
export const MODELS = {
  /** a name Claude Code knows (its cost table has it) */
  claude: 'claude-sonnet-4-6',
  gpt: 'gpt-4o-mini',
  /** text only, no JSON mode */
  text: 'text-only-1',
} as const;

/** What each mock channel calls the models upstream: never shown to a client. */
export const UPSTREAM_NAMES: Record<string, string> = {
  [MODELS.claude]: 'claude-upstream-20990101',
  [MODELS.gpt]: 'gpt-upstream-2099-01-01',
  [MODELS.text]: 'text-upstream-0001',
};

export const MODEL_CONFIGS = [
  { id: MODELS.claude, owned_by: 'anthropic', price: PRICES.claude, multimodal: true, json_mode: true, max_output_tokens: 64_000 },
  { id: MODELS.gpt, owned_by: 'openai', price: PRICES.gpt, multimodal: true, json_mode: true, max_output_tokens: 16_384 },
  { id: MODELS.text, owned_by: 'mock-lab', price: PRICES.text, max_output_tokens: 4096 },
];

export type ChannelKind = 'anthropic' | 'openai' | 'simulator';
export const CHANNEL_KINDS: readonly ChannelKind[] = ['anthropic', 'openai', 'simulator'];
const GROUP_OF: Record<ChannelKind, string> = { anthropic: 'default', openai: 'via-openai', simulator: 'via-sim' };

/** The gateway config of the suite; `extra` is merged on top (more models or channels for a file of its own). */
export function clientsConfig(mockUrl: string, extra: { models?: object[]; channels?: object[] } = {}): Record<string, unknown> {
  const modelIds = MODEL_CONFIGS.map((model) => model.id);
  return {
    ...EMBEDDED_CONFIG,
    // "limited": one request a minute per key, on the simulator
    groups: { default: { ratio: 1 }, 'via-openai': { ratio: 1 }, 'via-sim': { ratio: 1 }, limited: { ratio: 1, rpm: 1 } },
    models: [...EMBEDDED_CONFIG.models, ...MODEL_CONFIGS, ...(extra.models ?? [])],
    channels: [
      { name: 'anthropic-mock', type: 'anthropic', base_url: mockUrl, keys: [UPSTREAM_KEY], models: modelIds, groups: ['default'], model_map: UPSTREAM_NAMES },
      { name: 'openai-mock', type: 'openai', base_url: mockUrl, keys: [UPSTREAM_KEY], models: modelIds, groups: ['via-openai'], model_map: UPSTREAM_NAMES },
      { name: 'simulator', type: 'simulator', models: [...EMBEDDED_CONFIG.channels[0].models, ...modelIds], groups: ['via-sim', 'limited'],
        simulator: { first_token_delay_ms: 0, tokens_per_second: 0 } },
      ...(extra.channels ?? []),
    ],
    limits: { reveal: { count: 10_000, window_seconds: 600 } },
  };
}

export interface ClientsSetup {
  gateway: TestGateway;
  mock: MockUpstream;
  url: string;
  /** an unlimited key per channel kind */
  keys: Record<ChannelKind, CreatedKey>;
  close(): Promise<void>;
}

/** More models or channels for a file of its own; a function when its channels need the mock's URL. */
export type ClientsExtra = Parameters<typeof clientsConfig>[1] | ((mockUrl: string) => Parameters<typeof clientsConfig>[1]);

export async function startClientsSetup(extra?: ClientsExtra): Promise<ClientsSetup> {
  const mock = await startMockUpstream({ apiKeys: [UPSTREAM_KEY], chunks: 8 });
  const gateway = await startTestGateway({ raw: clientsConfig(mock.url, typeof extra === 'function' ? extra(mock.url) : extra) });
  await gateway.gateway.context.store.accounts.topUp(1, 500_000_000);
  const keys = {} as Record<ChannelKind, CreatedKey>;
  for (const kind of CHANNEL_KINDS) keys[kind] = await createKey(gateway.url, gateway.adminToken, { unlimited_quota: true, group: GROUP_OF[kind] });
  return {
    gateway, mock, url: gateway.url, keys,
    async close() { await gateway.close(); await mock.close(); },
  };
}

/** What a clients test file shares: the setup, its records and the money check around every case. */
export interface ClientsFixture {
  setup: ClientsSetup;
  /** A key of `kind`'s group with its own fields (a cap, an allowlist, …). */
  key(kind: ChannelKind, fields?: Record<string, unknown>): Promise<CreatedKey>;
  /** The newest usage records of a key, newest first, read through GET /api/log/ after the ledger committed. */
  records(keyId: number, count?: number): Promise<UsageRecord[]>;
  /** The one record a single call left (fails when there is none). */
  lastRecord(keyId: number): Promise<UsageRecord>;
  /** Commits the charges and checks the money invariants since the case began; returns the quota charged. */
  settled(label: string): Promise<number>;
}

/** Call inside a describe: starts the setup before its tests, takes a money snapshot before each. */
export function useClientsSetup(extra?: ClientsExtra): ClientsFixture {
  let snapshot: MoneySnapshot;
  let checked = false;
  const store = () => fixture.setup.gateway.gateway.context.store;
  const fixture: ClientsFixture = {
    setup: undefined as unknown as ClientsSetup,
    key: (kind, fields = {}) => createKey(fixture.setup.url, fixture.setup.gateway.adminToken, { group: GROUP_OF[kind], ...fields }),
    async records(keyId, count = 10) {
      await fixture.setup.gateway.gateway.context.ledger.flush();
      const answer = await call(fixture.setup.url, 'GET', `/api/log/?key_id=${keyId}&page_size=${count}`, { token: fixture.setup.gateway.adminToken });
      assert.equal(answer.json?.success, true, answer.text);
      return answer.json.data.items as UsageRecord[];
    },
    async lastRecord(keyId) {
      const [record] = await fixture.records(keyId, 1);
      assert.ok(record, `key ${keyId} has a usage record`);
      return record;
    },
    async settled(label) {
      checked = true;
      await fixture.setup.gateway.gateway.context.ledger.flush();
      return assertMoneyInvariants(store(), snapshot, label);
    },
  };
  before(async () => {
    // the tokenizer loads on first use (seconds on a loaded machine): load it before any call counts locally
    countTokens('warm up');
    fixture.setup = await startClientsSetup(extra);
  });
  after(async () => { await fixture.setup?.close(); });
  beforeEach(async () => {
    fixture.setup.mock.reset();
    await fixture.setup.gateway.gateway.context.ledger.flush();
    snapshot = await moneySnapshot(store());
    checked = false;
  });
  // a case that forgot its money check still gets one
  afterEach(async () => { if (!checked && fixture.setup) await fixture.settled('after the case'); });
  return fixture;
}

// ---- what the client saw against what was billed --------------------------------------------

export interface SeenUsage {
  /** the whole prompt, cache reads and writes included */
  prompt: number;
  completion: number;
  cacheRead?: number;
  cacheCreation?: number;
}

/** The quota a call of `model` with this usage costs (ratio 1), computed independently of src/billing. */
export function quotaFor(modelId: string, usage: SeenUsage): number {
  const price = MODEL_CONFIGS.find((model) => model.id === modelId)?.price;
  assert.ok(price, `a price for ${modelId}`);
  const cacheRead = usage.cacheRead ?? 0;
  const cacheCreation = usage.cacheCreation ?? 0;
  return expectedQuota(price, { input: usage.prompt - cacheRead - cacheCreation, output: usage.completion, cacheRead, cacheCreation });
}

/**
 * The client's view equals the record: the same prompt and completion counts, and the quota those
 * counts cost. `usageSource`, when given, is the record's expected usage_source.
 */
export function assertBilledAsSeen(record: UsageRecord, modelId: string, seen: SeenUsage, usageSource?: UsageRecord['usage_source']): void {
  const label = `${modelId} on ${record.channel} (${record.endpoint}${record.stream ? ', stream' : ''})`;
  assert.equal(record.status, 200, `${label}: status`);
  assert.equal(record.model, modelId, `${label}: the record names the client's model`);
  assert.equal(record.prompt_tokens, seen.prompt, `${label}: prompt tokens the client saw = the record's`);
  assert.equal(record.completion_tokens, seen.completion, `${label}: completion tokens the client saw = the record's`);
  if (seen.cacheRead !== undefined) assert.equal(record.cache_read_tokens, seen.cacheRead, `${label}: cache reads`);
  if (seen.cacheCreation !== undefined) assert.equal(record.cache_creation_tokens, seen.cacheCreation, `${label}: cache writes`);
  assert.ok(record.prompt_tokens > 0 && record.completion_tokens > 0, `${label}: a call is never billed 0 tokens (${JSON.stringify(seen)})`);
  assert.equal(record.quota, quotaFor(modelId, seen), `${label}: the quota billed is what the client's usage costs`);
  if (usageSource !== undefined) assert.equal(record.usage_source, usageSource, `${label}: usage_source`);
}

/** No upstream model name anywhere in what a client received (text of an answer or a whole stream). */
export function assertNoUpstreamName(text: string, label = ''): void {
  for (const name of Object.values(UPSTREAM_NAMES)) assert.ok(!text.includes(name), `${label}: the upstream name ${name} reached the client: ${text.slice(0, 300)}`);
}

// ---- the clients ---------------------------------------------------------------------------

const TIMEOUT_MS = 60_000;

export function openaiClient(url: string, key: string, maxRetries = 0): OpenAI {
  return new OpenAI({ apiKey: key, baseURL: `${url}/v1`, maxRetries, timeout: TIMEOUT_MS });
}

export function anthropicClient(url: string, key: string, maxRetries = 0): Anthropic {
  return new Anthropic({ apiKey: key, baseURL: url, maxRetries, timeout: TIMEOUT_MS });
}

/** Vercel AI SDK providers (`ai` with @ai-sdk/openai and @ai-sdk/anthropic). */
export function aiProviders(url: string, key: string) {
  return {
    openai: createOpenAI({ apiKey: key, baseURL: `${url}/v1` }),
    anthropic: createAnthropic({ apiKey: key, baseURL: `${url}/v1` }),
  };
}

/** LangChain chat models. */
export function langchainOpenAI(url: string, key: string, model: string, fields: Record<string, unknown> = {}): ChatOpenAI {
  return new ChatOpenAI({ model, apiKey: key, configuration: { baseURL: `${url}/v1` }, maxRetries: 0, timeout: TIMEOUT_MS, ...fields });
}

export function langchainAnthropic(url: string, key: string, model: string, fields: Record<string, unknown> = {}): ChatAnthropic {
  return new ChatAnthropic({ model, apiKey: key, anthropicApiUrl: url, maxRetries: 0, maxTokens: 256, ...fields });
}

/**
 * A loopback HTTP proxy in front of the gateway that counts the requests a client sends (by method
 * and path without query), for "how many times did it try" checks.
 */
export async function countingProxy(target: string): Promise<{ url: string; count(method: string, path: string): number; close(): Promise<void> }> {
  const counts = new Map<string, number>();
  const targetUrl = new URL(target);
  const server = createServer((request, response) => {
    const path = (request.url ?? '/').replace(/\?.*$/, '');
    counts.set(`${request.method} ${path}`, (counts.get(`${request.method} ${path}`) ?? 0) + 1);
    const upstream = httpRequest({ host: targetUrl.hostname, port: targetUrl.port, method: request.method, path: request.url, headers: request.headers }, (answer) => {
      response.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(response);
    });
    upstream.on('error', () => response.destroy());
    request.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    count: (method, path) => counts.get(`${method} ${path}`) ?? 0,
    close: () => new Promise<void>((resolve) => { server.close(() => resolve()); server.closeAllConnections(); }),
  };
}

// ---- Claude Code ---------------------------------------------------------------------------

export const CLAUDE_BIN = join(REPO_ROOT, 'node_modules', '.bin', 'claude');

/** What `claude -p … --output-format json` prints (the fields the suite reads). */
export interface ClaudeResult {
  is_error: boolean;
  result?: string;
  total_cost_usd: number;
  usage: { input_tokens: number; output_tokens: number; cache_read_input_tokens: number; cache_creation_input_tokens: number };
  api_error_status?: number | null;
}

/**
 * Runs Claude Code non-interactively against `baseUrl` with a gateway key: HOME in a temp dir, and
 * the switches that keep it from any outside connection (telemetry, error reports, auto-update,
 * other nonessential traffic). Bounded in time; returns the parsed JSON result and the raw output.
 */
export async function runClaude(baseUrl: string, key: string, prompt: string, options: { model?: string; env?: Record<string, string>; timeoutMs?: number } = {}): Promise<{ result: ClaudeResult | undefined; stdout: string; stderr: string; code: number | null }> {
  const home = tempDir('tollgate-claude-home-');
  mkdirSync(join(home, 'work'), { mode: 0o700 });
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: home,
    ANTHROPIC_BASE_URL: baseUrl,
    ANTHROPIC_API_KEY: key,
    DISABLE_TELEMETRY: '1',
    DISABLE_ERROR_REPORTING: '1',
    DISABLE_AUTOUPDATER: '1',
    DISABLE_BUG_COMMAND: '1',
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    ...options.env,
  };
  const args = ['-p', prompt, '--output-format', 'json', ...(options.model ? ['--model', options.model] : [])];
  try {
    return await new Promise((resolve, reject) => {
      const child = spawn(CLAUDE_BIN, args, { cwd: join(home, 'work'), env, stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk) => { stdout += chunk; });
      child.stderr.on('data', (chunk) => { stderr += chunk; });
      const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 90_000);
      child.on('error', (error) => { clearTimeout(timer); reject(error); });
      child.on('exit', (code) => {
        clearTimeout(timer);
        let result: ClaudeResult | undefined;
        try { result = JSON.parse(stdout) as ClaudeResult; } catch { result = undefined; }
        resolve({ result, stdout, stderr, code });
      });
    });
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
}
