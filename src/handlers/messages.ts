// POST /v1/messages (spec §4.3): the checks of DESIGN §5 in their order, then the relay. The route's
// error dialect is 'anthropic', so every error here (authentication included) reaches the client
// as {type:"error", error:{type, message}}.
import { authenticateKey } from '../auth/api-key';
import type { ModelConfig } from '../config';
import { badRequest } from '../errors';
import { validateMessagesRequest, type MessagesRequestInfo } from '../formats/anthropic-messages';
import type { Exchange } from '../http';
import { relayMessages } from '../relay/messages';
import { modelNamed, resolveModel } from '../relay/permissions';
import type { RouteHandler } from '../routes';
import { readJsonBody } from './request-body';

export const DEFAULT_ANTHROPIC_VERSION = '2023-06-01';
const VERSION_FORMAT = /^\d{4}-\d{2}-\d{2}$/;
/**
 * What a forwarded anthropic-beta may hold: printable ASCII and tabs (beta names and commas). The
 * upstream client refuses control characters, which uSockets lets through: the call would fail as
 * the channel's fault (a 502, a failure that cools the channel down) instead of the client's.
 */
const BETA_FORMAT = /^[\t\x20-\x7e]*$/;
/** Sampling parameters a reasoning model refuses (spec §4.2 rule 3, applied to this dialect too). */
const SAMPLING_FIELDS = ['temperature', 'top_p', 'top_k'];

/** The dialect headers forwarded to Anthropic channels. */
function dialectHeaders(exchange: Exchange): Record<string, string> {
  const version = exchange.header('anthropic-version')?.trim() || DEFAULT_ANTHROPIC_VERSION;
  if (!VERSION_FORMAT.test(version)) {
    throw badRequest(`anthropic-version: "${version.slice(0, 40)}" is not a version date such as ${DEFAULT_ANTHROPIC_VERSION}`, 'anthropic-version');
  }
  const headers: Record<string, string> = { 'anthropic-version': version };
  const beta = exchange.header('anthropic-beta')?.trim();
  if (beta) {
    if (!BETA_FORMAT.test(beta)) throw badRequest('anthropic-beta must be a comma-separated list of beta names in printable ASCII', 'anthropic-beta');
    headers['anthropic-beta'] = beta;
  }
  return headers;
}

/** DESIGN §5 check 5: what the model's flags forbid. */
function checkMessagesRules(model: ModelConfig, info: MessagesRequestInfo, body: Record<string, unknown>): void {
  if (model.kind !== 'chat') {
    throw badRequest(`model ${model.id} is for ${model.kind} generation, not chat, and cannot be used for messages`, 'model', 'model_not_supported');
  }
  if (model.reasoning) {
    if (body.system !== undefined) throw badRequest(`model ${model.id} is a reasoning model and does not accept a system prompt`, 'system', 'unsupported_value');
    if (info.stream) throw badRequest(`model ${model.id} is a reasoning model and does not support stream=true`, 'stream', 'unsupported_value');
    const sampling = SAMPLING_FIELDS.filter((field) => body[field] !== undefined && body[field] !== null);
    if (sampling.length > 0) throw badRequest(`model ${model.id} is a reasoning model and does not accept ${sampling.join(', ')}`, sampling[0], 'unsupported_parameter');
  }
  if (info.hasImages && !model.multimodal) {
    throw badRequest(`model ${model.id} does not accept image input: send text only or use a multimodal model`, 'messages', 'unsupported_value');
  }
  if (info.jsonSchema && !model.json_mode) {
    throw badRequest(`model ${model.id} does not support JSON output: output_config.format needs a model with JSON mode`, 'output_config.format', 'unsupported_value');
  }
  if (info.hasDocuments && !model.multimodal) {
    throw badRequest(`model ${model.id} does not accept document input: send text only or use a multimodal model`, 'messages', 'unsupported_value');
  }
}

export const messages: RouteHandler = async (exchange, _params, context) => {
  const caller = await authenticateKey(exchange, context.store);
  const headers = dialectHeaders(exchange);
  const { body, raw } = await readJsonBody(exchange);
  // an unknown model is a 404 whatever else is wrong with the body
  const named = modelNamed(context, caller.key, body);
  const info = validateMessagesRequest(body);
  const model = named ?? resolveModel(context.config, context.models, caller.key, info.model);
  checkMessagesRules(model, info, body);
  // returned, not awaited: a suspended frame would hold the parsed request for the whole call (relay/held-request.ts)
  return relayMessages({ exchange, context, caller, model, body, raw, info, headers });
};
