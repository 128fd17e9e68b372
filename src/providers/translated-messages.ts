// The `messages` capability of any provider that speaks OpenAI chat (openai, simulator): the
// Anthropic request is translated to OpenAI, sent by the provider's own transport, and the answer
// translated back, so the messages relay always receives Anthropic wire bytes.
import type { AnthropicRequest } from '../formats/anthropic-messages';
import { openAIToAnthropicEvents, streamAnswer, translateWholeAnswer } from './translated-answers';
import { exceedsSize, logWarnings, offloadThreshold, translate } from './translation';
import type { JsonCall, ProviderContext, UpstreamAnswer, UpstreamCall } from './types';

/**
 * Request size (characters of strings and keys) above which a stream's translation with its
 * tokenizer count runs in the pool: the count of a 48 KB Claude Code request takes ~15 ms of
 * CPU inline, a pool round trip ~0.1 ms.
 */
const COUNT_OFFLOAD_CHARS = 8 * 1024;

/** Sends an OpenAI chat completions request, given as its JSON text, the way the provider does. */
export type ChatSender = (call: UpstreamCall, bodyText: string) => Promise<UpstreamAnswer>;

export function messagesOverChat(context: ProviderContext, send: ChatSender): (call: JsonCall) => Promise<UpstreamAnswer> {
  return async (call) => {
    const threshold = offloadThreshold(context);
    const body = call.body as AnthropicRequest;
    // A stream also counts the prompt with the tokenizer (for message_start), which costs far more
    // than translating: that goes to the pool from a much smaller size.
    const large = exceedsSize(body, call.stream ? Math.min(threshold, COUNT_OFFLOAD_CHARS) : threshold);
    const request = await translate(context, 'anthropicToOpenAIRequest',
      { body, model: call.upstreamModel, defaultMaxTokens: call.model.max_output_tokens, countPrompt: call.stream, reasoning: call.model.reasoning }, large, call.signal);
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
