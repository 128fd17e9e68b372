// POST /v1/chat/completions: the checks of DESIGN §5 in their order, then the relay.
import { authenticateKey } from '../auth/api-key';
import { validateChatRequest } from '../formats/openai-chat';
import { checkChatRules } from '../relay/chat-rules';
import { relayChatCompletions } from '../relay/chat';
import { resolveModel } from '../relay/permissions';
import type { RouteHandler } from '../routes';
import { parseJsonBody } from './request-body';

export const chatCompletions: RouteHandler = async (exchange, _params, context) => {
  const caller = authenticateKey(exchange, context.store);
  const raw = await exchange.body();
  const body = parseJsonBody(raw);
  const info = validateChatRequest(body);
  const model = resolveModel(context.config, context.models, caller.key, info.model);
  checkChatRules(model, info);
  // awaited, not returned: an async function returning a promise pays two more microtask turns
  await relayChatCompletions({ exchange, context, caller, model, body, raw, info });
};
