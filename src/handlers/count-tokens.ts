// POST /v1/messages/count_tokens: the prompt's input tokens, as Anthropic clients (Claude Code
// among them) ask before sending. Counted with the local tokenizer; nothing is billed. Big bodies
// are counted in the piscina pool.
import { authenticateKey } from '../auth/api-key';
import { validateMessagesRequest } from '../formats/anthropic-messages';
import { localPromptTokens } from '../billing/message-tokens';
import { modelNamed, resolveModel } from '../relay/permissions';
import type { RouteHandler } from '../routes';
import { readJsonBody } from './request-body';

const JSON_HEADERS = { 'content-type': 'application/json' };

export const countTokens: RouteHandler = async (exchange, _params, context) => {
  const caller = await authenticateKey(exchange, context.store);
  const { body, raw } = await readJsonBody(exchange);
  // an unknown model is a 404 first; max_tokens is not part of a count request, everything else is
  // validated as for /v1/messages
  const named = modelNamed(context, caller.key, body);
  validateMessagesRequest({ ...body, max_tokens: 1 });
  if (!named) resolveModel(context.config, context.models, caller.key, String(body.model));
  const inputTokens = raw.length > context.config.offloadThresholdBytes
    ? await context.pool.run<number>('tokens', 'countMessagesTokens', body, { cancel: exchange })
    : localPromptTokens(body);
  exchange.respond(200, JSON_HEADERS, JSON.stringify({ input_tokens: inputTokens }));
};
