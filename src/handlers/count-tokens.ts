// POST /v1/messages/count_tokens: the prompt's input tokens, as Anthropic clients (Claude Code
// among them) ask before sending. Counted with the local tokenizer; nothing is billed. Big bodies
// are counted in the piscina pool.
import { authenticateKey } from '../auth/api-key';
import { validateMessagesRequest } from '../formats/anthropic-messages';
import { localPromptTokens } from '../billing/message-tokens';
import { resolveModel } from '../relay/permissions';
import type { RouteHandler } from '../routes';
import { readJsonBody } from './request-body';

const JSON_HEADERS = { 'content-type': 'application/json' };

export const countTokens: RouteHandler = async (exchange, _params, context) => {
  const caller = await authenticateKey(exchange, context.store);
  const { body, raw } = await readJsonBody(exchange);
  // max_tokens is not part of a count request; everything else is validated as for /v1/messages
  validateMessagesRequest({ ...body, max_tokens: 1 });
  resolveModel(context.config, context.models, caller.key, String(body.model));
  const inputTokens = raw.length > context.config.offloadThresholdBytes
    ? await context.pool.run<number>('tokens', 'countMessagesTokens', body, { cancel: exchange })
    : localPromptTokens(body);
  exchange.respond(200, JSON_HEADERS, JSON.stringify({ input_tokens: inputTokens }));
};
