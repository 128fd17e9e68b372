// Any OpenAI-compatible upstream: `{base_url}/v1/...` with `Authorization: Bearer <channel key>`.
// New compatible vendors are config, not code.
import { callUpstream } from '../http-call';
import { messagesOverChat } from '../translated-messages';
import type { JsonCall, MultipartCall, Provider, ProviderFactory, UpstreamCall } from '../types';

/**
 * `{base}/v1{path}` of a channel, built once per channel and path: the same string object every
 * call, so lookups keyed by it (parsed URLs) hash it once.
 */
const urls = new WeakMap<UpstreamCall['channel'], Map<string, string>>();
function url(call: UpstreamCall, path: string): string {
  let byPath = urls.get(call.channel);
  if (!byPath) { byPath = new Map(); urls.set(call.channel, byPath); }
  let built = byPath.get(path);
  if (built === undefined) {
    // base_url may or may not already end in /v1
    const base = call.channel.base_url.endsWith('/v1') ? call.channel.base_url : `${call.channel.base_url}/v1`;
    built = `${base}${path}`;
    byPath.set(path, built);
  }
  return built;
}

function jsonHeaders(call: UpstreamCall): Record<string, string> {
  return { 'content-type': 'application/json', authorization: `Bearer ${call.apiKey}`, ...call.headers };
}

export const openaiProvider: ProviderFactory = (context): Provider => ({
  chatCompletions: (call: JsonCall) => callUpstream(context, call, {
    method: 'POST', url: url(call, '/chat/completions'), headers: jsonHeaders(call), body: call.raw ?? JSON.stringify(call.body),
  }),
  messages: messagesOverChat(context, (call, body) => callUpstream(context, call, {
    method: 'POST', url: url(call, '/chat/completions'), headers: jsonHeaders(call), body,
  })),
  embeddings: (call: JsonCall) => callUpstream(context, call, {
    method: 'POST', url: url(call, '/embeddings'), headers: jsonHeaders(call), body: call.raw ?? JSON.stringify(call.body),
  }),
  responses: (call: JsonCall) => callUpstream(context, call, {
    method: 'POST', url: url(call, '/responses'), headers: jsonHeaders(call), body: call.raw ?? JSON.stringify(call.body),
  }),
  responsesNative: true,
  completions: (call: JsonCall) => callUpstream(context, call, {
    method: 'POST', url: url(call, '/completions'), headers: jsonHeaders(call), body: call.raw ?? JSON.stringify(call.body),
  }),
  imageGenerations: (call: JsonCall) => callUpstream(context, call, {
    method: 'POST', url: url(call, '/images/generations'), headers: jsonHeaders(call), body: JSON.stringify(call.body),
  }),
  imageEdits: (call: MultipartCall) => callUpstream(context, call, {
    method: 'POST', url: url(call, '/images/edits'),
    headers: { 'content-type': call.contentType, authorization: `Bearer ${call.apiKey}` }, body: call.body,
  }),
});
