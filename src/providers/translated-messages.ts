// The `messages` capability of any provider that speaks OpenAI chat (openai, simulator): the
// Anthropic request is translated to OpenAI, sent by the provider's own transport, and the answer
// translated back, so the messages relay always receives Anthropic wire bytes.
import type { AnthropicRequest } from '../formats/anthropic-messages';
import { openAIToAnthropicEvents, streamAnswer, translateWholeAnswer } from './translated-answers';
import { exceedsSize, logWarnings, offloadThreshold, translate } from './translation';
import type { JsonCall, ProviderContext, UpstreamAnswer, UpstreamCall } from './types';

/** Sends an OpenAI chat completions request, given as its JSON text, the way the provider does. */
export type ChatSender = (call: UpstreamCall, bodyText: string) => Promise<UpstreamAnswer>;

export function messagesOverChat(context: ProviderContext, send: ChatSender): (call: JsonCall) => Promise<UpstreamAnswer> {
  return async (call) => {
    const threshold = offloadThreshold(context);
    const body = call.body as AnthropicRequest;
    const request = await translate(context, 'anthropicToOpenAIRequest',
      { body, model: call.upstreamModel, defaultMaxTokens: call.model.max_output_tokens, countPrompt: call.stream, reasoning: call.model.reasoning }, exceedsSize(body, threshold), call.signal);
    logWarnings(context, call.channel.name, 'messages → chat completions', request.warnings);
    // anthropic-version and anthropic-beta mean nothing to an OpenAI upstream. An in-process upstream
    // reports the prompt count message_start showed, so what the client saw first is what is billed.
    const answer = await send({ ...call, headers: undefined, promptTokens: request.promptTokens }, request.text);
    if (call.stream) {
      // message_start shows the local count billing falls back on, until the upstream's usage arrives
      return streamAnswer(answer, openAIToAnthropicEvents(call.model.id, request.promptTokens ?? 0));
    }
    return translateWholeAnswer(context, call, answer, 'openAIToAnthropicAnswer', 'chat completion → message');
  };
}
