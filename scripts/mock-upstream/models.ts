// GET /v1/models and /v1/models/<id>: a small fixed list in the OpenAI model-object shape.
import { decodePathPart, MockError, sendJson } from './http-io';
import type { Exchange } from './types';

const CREATED = 1_700_000_000;
const MODEL_IDS: Array<[id: string, owner: string]> = [
  ['gpt-4o-mini', 'openai'],
  ['gpt-4o', 'openai'],
  ['claude-sonnet-4-5', 'anthropic'],
  ['dall-e-3', 'openai'],
  ['gpt-image-1', 'openai'],
  ['veo3', 'google'],
];

const MODELS = MODEL_IDS.map(([id, owner]) => ({
  id, object: 'model', created: CREATED, owned_by: owner, root: id, parent: null,
  permission: [{
    id: `modelperm-${id}`, object: 'model_permission', created: CREATED, allow_create_engine: false,
    allow_sampling: true, allow_logprobs: true, allow_search_indices: false, allow_view: true,
    allow_fine_tuning: false, organization: '*', group: null, is_blocking: false,
  }],
}));
const LIST_BODY = JSON.stringify({ object: 'list', data: MODELS });

export function handleModelList(exchange: Exchange): void {
  sendJson(exchange.response, 200, LIST_BODY);
}

export function handleModel(exchange: Exchange): void {
  const id = decodePathPart(exchange.params[0]);
  const model = MODELS.find((candidate) => candidate.id === id);
  if (model === undefined) throw new MockError(404, `The model '${id}' does not exist`, 'model_not_found', 'model');
  sendJson(exchange.response, 200, model);
}
