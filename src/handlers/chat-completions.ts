// POST /v1/chat/completions: the checks of DESIGN §5 in their order, then the relay.
import { authenticateKey, type Caller } from '../auth/api-key';
import type { GatewayContext } from '../context';
import type { Exchange } from '../http';
import { isPromise } from '../store';
import { validateChatRequest } from '../formats/openai-chat';
import { checkChatRules } from '../relay/chat-rules';
import { relayChatCompletions } from '../relay/chat';
import { modelNamed, resolveModel } from '../relay/permissions';
import type { RouteHandler } from '../routes';
import { parseJsonBody } from './request-body';

export const chatCompletions: RouteHandler = (exchange, _params, context) => {
  const caller = authenticateKey(exchange, context.store);
  return isPromise(caller) ? caller.then((found) => chatAs(exchange, context, found)) : chatAs(exchange, context, caller);
};

function chatAs(exchange: Exchange, context: GatewayContext, caller: Caller): Promise<void> {
  // a promise chain, not an async function: one frame fewer per call (a throw above is the
  // dispatcher's to answer, like a rejection)
  return exchange.body().then((raw) => {
    const body = parseJsonBody(raw);
    // an unknown model is a 404 whatever else is wrong with the body
    const named = modelNamed(context, caller.key, body);
    const info = validateChatRequest(body);
    const model = named ?? resolveModel(context.config, context.models, caller.key, info.model);
    checkChatRules(model, info);
    return relayChatCompletions({ exchange, context, caller, model, body, raw, info });
  });
}
