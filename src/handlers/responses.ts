// POST /v1/responses (OpenAI Responses API), stream and not: the checks of DESIGN §5 in their
// order, then the relay. OpenAI-compatible channels get the request as it is; Anthropic and
// simulator channels get it translated through chat completions (src/providers/translated-responses.ts).
// What only an upstream speaking the Responses API can honour (store: true, previous_response_id,
// item references, built-in tools) is a 400 when no such channel serves the model.
import { authenticateKey } from '../auth/api-key';
import { countChatPromptTokens, countTokens, estimatePromptTokens } from '../billing/tokens';
import type { ModelConfig } from '../config';
import { badRequest } from '../errors';
import type { JsonObject } from '../formats/json-value';
import { fromResponsesUsage, ResponsesStream, responseOutputText, toResponsesUsage, validateResponsesRequest, type ResponsesRequestInfo } from '../formats/openai-responses';
import { toChatRequestFromResponses } from '../formats/openai-responses-chat';
import { promptBoundOf } from '../relay/chat';
import { relayEndpoint, servedBy, unsupportedEndpoint } from '../relay/endpoint';
import { resolveModel } from '../relay/permissions';
import type { RouteHandler } from '../routes';
import { readJsonBody } from './request-body';

/** DESIGN §5 check 5 for this endpoint: what the model's flags forbid. */
function checkResponsesRules(model: ModelConfig, info: ResponsesRequestInfo): void {
  if (model.kind !== 'chat' || model.chat_image) {
    throw badRequest(`model ${model.id} is ${model.chat_image ? 'a chat image' : `a ${model.kind}`} model and cannot be used for responses`, 'model', 'model_not_supported');
  }
  if (model.reasoning && info.samplingParams.length > 0) {
    throw badRequest(`model ${model.id} is a reasoning model and does not accept ${info.samplingParams.join(', ')}`, info.samplingParams[0], 'unsupported_parameter');
  }
  if (info.imageCount > 0 && !model.multimodal) {
    throw badRequest(`model ${model.id} does not accept image input: send text only or use a multimodal model`, 'input', 'unsupported_value');
  }
  if (info.otherMedia !== undefined && !model.multimodal) {
    throw badRequest(`model ${model.id} takes text only: ${info.otherMedia} is a media part; send text or use a multimodal model`, info.otherMedia, 'unsupported_value');
  }
  if ((info.textFormat === 'json_object' || info.textFormat === 'json_schema') && !model.json_mode) {
    throw badRequest(`model ${model.id} does not support text.format ${info.textFormat}`, 'text.format', 'unsupported_value');
  }
}

/** Tokenizer count of a request's prompt (instructions, input items, tools), for when the upstream reports no usage. */
function countResponsesPromptTokens(body: JsonObject): number {
  const chat = toChatRequestFromResponses(body, { model: '', stream: false }).value;
  return countChatPromptTokens(chat.messages as unknown[]) + (Array.isArray(body.tools) ? countTokens(JSON.stringify(body.tools)) : 0);
}

export const responses: RouteHandler = async (exchange, _params, context) => {
  const caller = await authenticateKey(exchange, context.store);
  const { body, raw } = await readJsonBody(exchange);
  const info = validateResponsesRequest(body);
  const model = resolveModel(context.config, context.models, caller.key, info.model);
  checkResponsesRules(model, info);
  const maxOutput = info.maxOutputTokens ?? model.max_output_tokens;
  const promptBytes = raw.length - info.mediaBytes;
  const native = info.nativeOnly;
  // returned, not awaited, and the callbacks count from request(): nothing here holds the parsed body
  // for the call's life (relay/held-request.ts)
  return relayEndpoint({
    exchange, context, caller, model, endpoint: 'responses', stream: info.stream,
    promptEstimate: estimatePromptTokens(promptBytes, info.itemCount, info.imageCount),
    bounds: { prompt: promptBoundOf(promptBytes, info.imageCount), completion: maxOutput },
    capability: (provider) => (native === undefined || provider.responsesNative === true ? provider.responses : undefined),
    incapable: (types) => (native === undefined
      ? unsupportedEndpoint(`${servedBy(model, types)}, which have no responses endpoint`)
      : badRequest(`${native.reason}, which needs a channel that speaks the Responses API itself; ${servedBy(model, types)}, `
        + 'which get the request translated. Leave it out (send the whole conversation as input, with store false or absent)', native.param, 'unsupported_parameter')),
    upstreamBody: body,
    raw,
    whole: {
      isAnswer: (answer) => answer.object === 'response' || Array.isArray(answer.output),
      usage: (answer) => fromResponsesUsage(answer.usage),
      localUsage: (answer, request) => {
        const prompt = countResponsesPromptTokens(request());
        const completion = countTokens(responseOutputText(answer));
        return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
      },
      present: (answer, usage, modelId) => {
        answer.model = modelId;
        answer.usage = toResponsesUsage(usage);
      },
    },
    streamRewriter: (request) => new ResponsesStream({ model: model.id, promptTokens: () => countResponsesPromptTokens(request()) }),
  });
};
