// POST /v1/embeddings: the checks of DESIGN §5 in their order, then the relay. Billed per input
// token at the model's input price; `encoding_format`, `dimensions` and unknown fields go to the
// upstream as they are.
import { authenticateKey } from '../auth/api-key';
import type { ModelConfig } from '../config';
import { badRequest } from '../errors';
import { countEmbeddingTokens, embeddingsUsage, validateEmbeddingsRequest } from '../formats/openai-embeddings';
import type { Usage } from '../formats/openai-usage';
import { relayEndpoint, servedBy, unsupportedEndpoint } from '../relay/endpoint';
import { resolveModel } from '../relay/permissions';
import type { RouteHandler } from '../routes';
import { readJsonBody } from './request-body';

export function requireEmbeddingModel(model: ModelConfig): void {
  if (model.kind !== 'embedding') {
    throw badRequest(`model ${model.id} is a ${model.kind} model, not an embedding model, and cannot be used for embeddings`, 'model', 'model_not_supported');
  }
}

const promptUsage = (tokens: number): Usage => ({ prompt_tokens: tokens, completion_tokens: 0, total_tokens: tokens });

export const embeddings: RouteHandler = async (exchange, _params, context) => {
  const caller = await authenticateKey(exchange, context.store);
  const { body, raw } = await readJsonBody(exchange);
  const info = validateEmbeddingsRequest(body);
  const model = resolveModel(context.config, context.models, caller.key, info.model);
  requireEmbeddingModel(model);
  // A byte-level BPE token is at least one byte: bytes / 3 leans high as a reservation, and the
  // bytes themselves bound what an upstream can truthfully report.
  const estimateTokens = Math.ceil(info.textBytes / 3) + info.arrayTokens + info.inputCount;
  // returned, not awaited, and the local count reads request(): nothing here holds the parsed body (relay/held-request.ts)
  return relayEndpoint({
    exchange, context, caller, model, endpoint: 'embeddings', stream: false,
    promptEstimate: estimateTokens,
    bounds: { prompt: info.textBytes + info.arrayTokens + info.inputCount, completion: 0 },
    capability: (provider) => provider.embeddings,
    incapable: (types) => unsupportedEndpoint(`${servedBy(model, types)}, which have no embeddings endpoint`),
    upstreamBody: body,
    raw,
    whole: {
      isAnswer: (answer) => Array.isArray(answer.data),
      usage: (answer) => {
        const tokens = embeddingsUsage(answer);
        return tokens === undefined ? undefined : promptUsage(tokens);
      },
      localUsage: (_answer, request) => promptUsage(countEmbeddingTokens(request().input)),
      present: (answer, usage, modelId) => {
        answer.model = modelId;
        answer.usage = { prompt_tokens: usage.prompt_tokens, total_tokens: usage.prompt_tokens };
      },
    },
  });
};
