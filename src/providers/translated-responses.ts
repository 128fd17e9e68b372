// The `responses` capability of providers that speak chat completions (the simulator; Anthropic
// channels through their own chat translation): the Responses request is translated to a chat
// request, sent with the provider's own chatCompletions, and the answer translated back, so the
// responses relay always receives Responses wire bytes. Requests that need the upstream to keep
// state or run built-in tools never get here (the relay sends them only to native channels).
import { ChatToResponsesStream } from '../formats/openai-responses-chat-stream';
import { toChatRequestFromResponses, toResponseFromChatCompletion } from '../formats/openai-responses-chat';
import { upstreamError } from '../errors';
import { isObject } from '../formats/json-value';
import { utf8Text } from '../formats/utf8-text';
import { MAX_ANSWER_BYTES, readAnswer } from './http-call';
import { jsonTextAnswer, streamAnswer } from './translated-answers';
import { logWarnings } from './translation';
import type { JsonCall, ProviderContext, UpstreamAnswer } from './types';

export function responsesOverChat(context: ProviderContext, chatCompletions: (call: JsonCall) => Promise<UpstreamAnswer>): (call: JsonCall) => Promise<UpstreamAnswer> {
  return async (call) => {
    const request = toChatRequestFromResponses(call.body, { model: call.upstreamModel, stream: call.stream });
    logWarnings(context, call.channel.name, 'responses → chat completions', request.warnings);
    const answer = await chatCompletions({ ...call, body: request.value, raw: undefined });
    if (call.stream) {
      const converter = new ChatToResponsesStream({ model: call.model.id, request: call.body });
      return streamAnswer(answer, { push: (event) => converter.push(event), end: () => converter.finish() });
    }
    const bytes = await readAnswer(answer, MAX_ANSWER_BYTES, call.channel.name);
    let completion: unknown;
    try { completion = JSON.parse(utf8Text(bytes)); } catch { completion = undefined; }
    if (!isObject(completion)) throw upstreamError(502, `upstream channel ${call.channel.name} answered with malformed JSON`, 'upstream_malformed');
    const response = toResponseFromChatCompletion(completion, { model: call.model.id, request: call.body });
    logWarnings(context, call.channel.name, 'chat completion → response', response.warnings);
    return jsonTextAnswer(answer.status, JSON.stringify(response.value));
  };
}
