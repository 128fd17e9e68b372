// GET /v1/models and /v1/models/{model}: only what this key may call (group ∩ allowlist ∩
// billing_type), as spec §2.5 objects.
import { authenticateKey } from '../auth/api-key';
import type { ModelConfig } from '../config';
import { notFound } from '../errors';
import { denial } from '../relay/permissions';
import type { RouteHandler } from '../routes';

const JSON_HEADERS = { 'content-type': 'application/json' };

export function modelObject(model: ModelConfig): Record<string, unknown> {
  return {
    id: model.id, object: 'model', created: model.created, owned_by: model.owned_by,
    permission: [{
      id: `modelperm-${model.id}`, object: 'model_permission', created: model.created,
      allow_create_engine: false, allow_sampling: true, allow_logprobs: true, allow_search_indices: false,
      allow_view: true, allow_fine_tuning: false, organization: '*', group: null, is_blocking: false,
    }],
    root: model.id, parent: null,
  };
}

export const listModels: RouteHandler = async (exchange, _params, context) => {
  const { key } = await authenticateKey(exchange, context.store);
  const data = context.config.models.filter((model) => denial(context.config, key, model) === undefined).map(modelObject);
  exchange.respond(200, JSON_HEADERS, JSON.stringify({ object: 'list', data }));
};

export const getModel: RouteHandler = async (exchange, params, context) => {
  const { key } = await authenticateKey(exchange, context.store);
  let id = params[0];
  try { id = decodeURIComponent(id); } catch { /* keep the raw segment */ }
  const model = context.models.get(id);
  if (!model || denial(context.config, key, model) !== undefined) {
    throw notFound(`The model ${id.slice(0, 200)} does not exist or you do not have access to it.`, 'model_not_found');
  }
  exchange.respond(200, JSON_HEADERS, JSON.stringify(modelObject(model)));
};
