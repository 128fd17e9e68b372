// Setup shared by the suites of /v1/embeddings, /v1/completions and /v1/responses: the chat suites'
// gateway (simulator models + mock models on an `openai` channel) plus an embedding model on the
// mock channel and chat and embedding models on an `anthropic` channel that is the same mock.
import { chatConfig, MOCK_MODELS, startChatSetup, type ChatSetup } from './chat-harness';
import type { Front } from '../helpers/gateway';

export const ENDPOINT_MODELS = [
  { id: 'mock-embedding', owned_by: 'mock-lab', kind: 'embedding', price: { input: 0.13 } },
  { id: 'anthropic-chat', owned_by: 'mock-lab', price: { input: 3, output: 15, cached_input: 0.3 }, multimodal: true },
  { id: 'anthropic-embedding', owned_by: 'mock-lab', kind: 'embedding', price: { input: 0.1 } },
];

export function endpointsConfig(mockUrl: string): Record<string, unknown> {
  const raw = chatConfig(mockUrl) as { models: unknown[]; channels: Array<Record<string, unknown>> };
  const mockChannel = raw.channels.find((channel) => channel.name === 'mock')!;
  mockChannel.models = [...MOCK_MODELS.map((model) => model.id), 'mock-embedding'];
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
