// Anthropic Messages upstreams: `{base_url}/v1/messages` with `x-api-key: <channel key>` and the
// version header. `messages` forwards as is; `chatCompletions` translates an OpenAI chat request to
// a Messages request and the answer back, so the chat relay reaches these channels unchanged.
import type { OpenAIChatRequest } from '../../formats/openai-to-anthropic';
import { callUpstream } from '../http-call';
import { anthropicToOpenAIEvents, streamAnswer, translateWholeAnswer } from '../translated-answers';
import { responsesOverChat } from '../translated-responses';
import { exceedsSize, logWarnings, offloadThreshold, translate } from '../translation';
import type { JsonCall, Provider, ProviderContext, ProviderFactory, UpstreamCall } from '../types';

function messagesUrl(call: UpstreamCall): string {
  // base_url may or may not already end in /v1
  const base = call.channel.base_url.replace(/\/+$/, '');
  return base.endsWith('/v1') ? `${base}/messages` : `${base}/v1/messages`;
}

/** The client's anthropic-version / anthropic-beta (in call.headers) win over the channel's default version. */
function messagesHeaders(call: UpstreamCall): Record<string, string> {
  return {
    'content-type': 'application/json', 'x-api-key': call.apiKey, 'anthropic-version': call.channel.anthropic_version, ...call.headers,
  };
}

export const anthropicProvider: ProviderFactory = (context): Provider => withTranslatedResponses(context, {
  messages: (call: JsonCall) => callUpstream(context, call, {
    method: 'POST', url: messagesUrl(call), headers: messagesHeaders(call), body: call.raw ?? JSON.stringify(call.body),
  }),

  async chatCompletions(call: JsonCall) {
    const threshold = offloadThreshold(context);
    const body = call.body as OpenAIChatRequest;
    const request = await translate(context, 'openAIToAnthropicRequest',
      { body, model: call.upstreamModel, defaultMaxTokens: call.model.max_output_tokens, reasoning: call.model.reasoning }, exceedsSize(body, threshold), call.signal);
    logWarnings(context, call.channel.name, 'chat completions → messages', request.warnings);
    const answer = await callUpstream(context, call, { method: 'POST', url: messagesUrl(call), headers: messagesHeaders(call), body: request.text });
    if (call.stream) {
      const includeUsage = (body.stream_options as { include_usage?: boolean } | undefined)?.include_usage === true;
      return streamAnswer(answer, anthropicToOpenAIEvents(call.model.id, includeUsage));
    }
    return translateWholeAnswer(context, call, answer, 'anthropicToOpenAIAnswer', 'message → chat completion');
  },
});

/** /v1/responses reaches Anthropic channels through the chat translation above. */
function withTranslatedResponses(context: ProviderContext, provider: Provider): Provider {
  return { ...provider, responses: responsesOverChat(context, provider.chatCompletions!) };
}
