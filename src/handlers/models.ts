// GET /v1/models and /v1/models/{model}: only what this key may call (group ∩ allowlist ∩
// billing_type). OpenAI clients get spec §2.5 objects; Anthropic clients (an `anthropic-version`
// or `x-api-key` header) get Anthropic's model list, its paging (limit, after_id, before_id) and
// its errors, so `anthropic.models.list()` and `.retrieve()` work unchanged.
import { authenticateKey } from '../auth/api-key';
import type { ModelConfig } from '../config';
import { badRequest, notFound, renderError, toGatewayError } from '../errors';
import type { Exchange } from '../http';
import { denial } from '../relay/permissions';
import type { RouteHandler } from '../routes';

const JSON_HEADERS = { 'content-type': 'application/json' };
/** Anthropic's page size: 20 by default, at most 1000. */
const ANTHROPIC_DEFAULT_LIMIT = 20;
const ANTHROPIC_MAX_LIMIT = 1000;

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

/** A model as Anthropic's Models API shows it. */
export function anthropicModelObject(model: ModelConfig): Record<string, unknown> {
  return {
    type: 'model', id: model.id, display_name: model.id, created_at: new Date(model.created * 1000).toISOString(),
    max_tokens: model.max_output_tokens, max_input_tokens: null, capabilities: null, lifecycle: 'active', line: null,
    deprecated_at: null, retires_at: null,
  };
}

/** Whether the caller speaks Anthropic's dialect (its SDKs send both headers). */
function anthropicCaller(exchange: Exchange): boolean {
  return exchange.header('anthropic-version') !== undefined || exchange.header('x-api-key') !== undefined;
}

/** Runs `answer`, rendering any error in Anthropic's shape for Anthropic callers (the route's own dialect is OpenAI's). */
async function inCallersDialect(exchange: Exchange, answer: (anthropic: boolean) => Promise<void>): Promise<void> {
  const anthropic = anthropicCaller(exchange);
  if (!anthropic) { await answer(false); return; }
  try {
    await answer(true);
  } catch (error) {
    if (exchange.finished) return;
    const rendered = renderError(toGatewayError(error), 'anthropic');
    exchange.respond(rendered.status, rendered.headers, rendered.body);
  }
}

function anthropicPage(exchange: Exchange, models: ModelConfig[]): string {
  const query = exchange.query;
  const limitText = query.get('limit');
  const limit = limitText === null ? ANTHROPIC_DEFAULT_LIMIT : /^\d{1,4}$/.test(limitText) ? Number(limitText) : NaN;
  if (!Number.isInteger(limit) || limit < 1 || limit > ANTHROPIC_MAX_LIMIT) {
    throw badRequest(`limit: must be an integer from 1 to ${ANTHROPIC_MAX_LIMIT}`, 'limit');
  }
  const cursor = (name: string): number | undefined => {
    const id = query.get(name);
    if (id === null) return undefined;
    const index = models.findIndex((model) => model.id === id);
    if (index === -1) throw badRequest(`${name}: no model ${id.slice(0, 200)} in this list`, name);
    return index;
  };
  const after = cursor('after_id');
  const before = cursor('before_id');
  let start = after === undefined ? 0 : after + 1;
  let end = models.length;
  if (before !== undefined) { end = before; start = Math.max(start, end - limit); }
  const page = models.slice(start, Math.min(end, start + limit));
  const hasMore = before !== undefined ? start > 0 : start + page.length < end;
  return JSON.stringify({
    data: page.map(anthropicModelObject), has_more: hasMore, first_id: page[0]?.id ?? null, last_id: page.at(-1)?.id ?? null,
  });
}

export const listModels: RouteHandler = (exchange, _params, context) =>
  inCallersDialect(exchange, async (anthropic) => {
    const { key } = await authenticateKey(exchange, context.store);
    const models = context.config.models.filter((model) => denial(context.config, key, model) === undefined);
    exchange.respond(200, JSON_HEADERS, anthropic ? anthropicPage(exchange, models) : JSON.stringify({ object: 'list', data: models.map(modelObject) }));
  });

export const getModel: RouteHandler = (exchange, params, context) =>
  inCallersDialect(exchange, async (anthropic) => {
    const { key } = await authenticateKey(exchange, context.store);
    let id = params[0];
    try { id = decodeURIComponent(id); } catch { /* keep the raw segment */ }
    const model = context.models.get(id);
    if (!model || denial(context.config, key, model) !== undefined) {
      throw notFound(`The model ${id.slice(0, 200)} does not exist or you do not have access to it.`, 'model_not_found');
    }
    exchange.respond(200, JSON_HEADERS, JSON.stringify(anthropic ? anthropicModelObject(model) : modelObject(model)));
  });
