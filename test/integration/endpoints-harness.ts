// Setup shared by the suites of /v1/embeddings, /v1/completions and /v1/responses: the chat suites'
// gateway (simulator models + mock models on an `openai` channel) plus an embedding model on the
// mock channel and chat and embedding models on an `anthropic` channel that is the same mock.
import { after, before, beforeEach } from 'node:test';
import { countTokens } from '../../src/billing/tokens';
import type { Store, UsageRecord } from '../../src/store';
import type { Front } from '../helpers/gateway';
import { assertMoneyInvariants, moneySnapshot, type MoneySnapshot } from '../helpers/money';
import { chatConfig, createKey, flushCharges, MOCK_MODELS, startChatSetup, type ChatSetup, type CreatedKey } from './chat-harness';

export const ENDPOINT_MODELS = [
  { id: 'mock-embedding', owned_by: 'mock-lab', kind: 'embedding', price: { input: 0.13 } },
  { id: 'mock-cached', owned_by: 'mock-lab', price: { input: 1, output: 2, cached_input: 0.1 } },
  { id: 'anthropic-chat', owned_by: 'mock-lab', price: { input: 3, output: 15, cached_input: 0.3 }, multimodal: true },
  { id: 'anthropic-embedding', owned_by: 'mock-lab', kind: 'embedding', price: { input: 0.1 } },
];

export function endpointsConfig(mockUrl: string): Record<string, unknown> {
  const raw = chatConfig(mockUrl) as { models: unknown[]; channels: Array<Record<string, unknown>> };
  const mockChannel = raw.channels.find((channel) => channel.name === 'mock')!;
  mockChannel.models = [...MOCK_MODELS.map((model) => model.id), 'mock-embedding', 'mock-cached'];
  const anthropic = {
    name: 'mock-anthropic', type: 'anthropic', base_url: mockUrl, keys: ['upstream-key-2'],
    models: ['anthropic-chat', 'anthropic-embedding'], groups: ['default'],
  };
  return { ...raw, models: [...raw.models, ...ENDPOINT_MODELS], channels: [...raw.channels, anthropic] };
}

export function startEndpointsSetup(options: { front?: Front; chunks?: number } = {}): Promise<ChatSetup> {
  return startChatSetup({ front: options.front, mock: { chunks: options.chunks }, raw: endpointsConfig });
}

/** quota = ceil(tokens × USD per 1M × 500000 / 1e6), in integers (prices given to 1e-6 USD). */
export function inputOnlyQuota(pricePerMillion: number, tokens: number): number {
  const numerator = BigInt(tokens) * BigInt(Math.round(pricePerMillion * 1_000_000)) * 500_000n;
  const denominator = 1_000_000_000_000n;
  return Number((numerator + denominator - 1n) / denominator);
}

export interface EndpointsSuite {
  setup: ChatSetup;
  key: CreatedKey;
  store(): Store;
  /** the suite key's usage records, newest first */
  records(): Promise<UsageRecord[]>;
  /** the newest record once every charge is committed */
  lastRecord(): Promise<UsageRecord>;
  /** the money invariants since the start of the current test; returns the quota charged */
  settled(label: string): Promise<number>;
}

/**
 * Registers the suite hooks (inside a describe): a gateway with a topped-up admin account and one
 * key, the mock reset and a money snapshot before each test. The returned object is filled in by
 * the time tests run.
 */
export function endpointsSuite(options: { front?: Front; remainQuota?: number; chunks?: number } = {}): EndpointsSuite {
  let snapshot: MoneySnapshot;
  const suite = {
    store: () => suite.setup.gateway.gateway.context.store,
    async records() { return (await suite.store().usage.list(1, { keyId: suite.key.id }, 0, 1000)).items; },
    async lastRecord() { await flushCharges(suite.setup); return (await suite.records())[0]; },
    async settled(label: string) { await flushCharges(suite.setup); return assertMoneyInvariants(suite.store(), snapshot, label); },
  } as EndpointsSuite;
  before(async () => {
    // the tokenizer loads on first use (seconds on a loaded machine): load it before any call counts locally
    countTokens('warm up');
    suite.setup = await startEndpointsSetup({ front: options.front, chunks: options.chunks });
    await suite.store().accounts.topUp(1, 100_000_000);
    suite.key = await createKey(suite.setup.url, suite.setup.gateway.adminToken, { remain_quota: options.remainQuota ?? 20_000_000 });
  });
  after(async () => { await suite.setup?.close(); });
  beforeEach(async () => {
    suite.setup.mock.reset();
    await flushCharges(suite.setup);
    snapshot = await moneySnapshot(suite.store());
  });
  return suite;
}
