// POST /v1/completions (OpenAI legacy text completions): the checks of DESIGN §5 in their order,
// then the relay. Billed like chat (prompt and completion tokens); served by channels whose
// provider has the endpoint (OpenAI-compatible ones, the simulator), a 400 that says so elsewhere.
import { authenticateKey } from '../auth/api-key';
import { countTokens, estimatePromptTokens } from '../billing/tokens';
import { badRequest } from '../errors';
import { isObject } from '../formats/json-value';
import { completionsUsage, completionText, CompletionsStream, countPromptTokens, validateCompletionsRequest } from '../formats/openai-completions';
import { openAIErrorEvent, promptBoundOf } from '../relay/chat';
import { relayEndpoint, servedBy, unsupportedEndpoint } from '../relay/endpoint';
import { resolveModel } from '../relay/permissions';
import type { RouteHandler } from '../routes';
import { readJsonBody } from './request-body';

export const completions: RouteHandler = async (exchange, _params, context) => {
  const caller = await authenticateKey(exchange, context.store);
  const { body, raw } = await readJsonBody(exchange);
  const info = validateCompletionsRequest(body);
  const model = resolveModel(context.config, context.models, caller.key, info.model);
  if (model.kind !== 'chat' || model.chat_image) {
    throw badRequest(`model ${model.id} is ${model.chat_image ? 'a chat image' : `a ${model.kind}`} model and cannot be used for text completions`, 'model', 'model_not_supported');
  }
  if (model.reasoning) throw badRequest(`model ${model.id} is a reasoning model and has no legacy text completions; use /v1/chat/completions`, 'model', 'model_not_supported');
  const generated = info.generatedPerPrompt * info.promptCount;
  const maxOutput = (info.maxTokens ?? model.max_output_tokens) * generated;
  const promptEstimate = estimatePromptTokens(info.promptBytes, info.promptCount) + info.promptTokenIds;
  // the gateway always asks a stream for its usage; the client sees the usage chunk only when it asked
  const upstreamBody = info.stream ? { ...body, stream_options: { ...(isObject(body.stream_options) ? body.stream_options : {}), include_usage: true } } : body;
  // returned, not awaited, and the local counts read request(): nothing here holds the parsed body (relay/held-request.ts)
  return relayEndpoint({
    exchange, context, caller, model, endpoint: 'completions', stream: info.stream,
    promptEstimate,
    bounds: { prompt: promptBoundOf(info.promptBytes, 0) + info.promptTokenIds, completion: maxOutput },
    capability: (provider) => provider.completions,
    incapable: (types) => unsupportedEndpoint(`${servedBy(model, types)}, which have no legacy text completions endpoint (/v1/completions); use /v1/chat/completions`),
    upstreamBody,
    raw: upstreamBody === body ? raw : undefined,
    whole: {
      isAnswer: (answer) => Array.isArray(answer.choices),
      usage: (answer) => completionsUsage(answer.usage),
      localUsage: (answer, request) => {
        const prompt = countPromptTokens(request());
        const completion = countTokens(completionText(answer));
        return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
      },
      present: (answer, usage, modelId) => {
        answer.model = modelId;
        answer.usage = { prompt_tokens: usage.prompt_tokens, completion_tokens: usage.completion_tokens, total_tokens: usage.prompt_tokens + usage.completion_tokens };
      },
    },
    streamRewriter: (request) => new CompletionsStream({
      model: model.id, rewriteModel: true, includeUsage: info.includeUsageRequested, promptTokens: () => countPromptTokens(request()),
    }),
    errorEvent: openAIErrorEvent,
  });
};
