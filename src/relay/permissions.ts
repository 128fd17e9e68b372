// Who may call which model (spec §2.2 rules 1–2, §5.2 rules 3–4; DESIGN §5 checks 3–4).
import type { Config, ModelConfig } from '../config';
import { forbidden, notFound } from '../errors';
import type { KeyRecord } from '../store';
import { isPerCall } from '../billing/pricing';

const BILLING_NAMES: Record<number, string> = { 1: 'usage-based (1)', 2: 'per-call (2)', 4: 'usage first (4)' };

/** Parsed allowlists, cached by the key's `models` string (keys change rarely, calls often). */
const allowlists = new Map<string, Set<string>>();
function allowlist(models: string): Set<string> {
  let set = allowlists.get(models);
  if (!set) {
    set = new Set(models.split(',').map((model) => model.trim()).filter(Boolean));
    if (allowlists.size > 10_000) allowlists.clear();
    allowlists.set(models, set);
  }
  return set;
}

/** Does some channel serve this model to this group? */
export function groupServes(config: Config, model: ModelConfig, group: string): boolean {
  if (model.groups.length > 0 && !model.groups.includes(group)) return false;
  for (const channel of config.channels) {
    if (channel.groups.includes(group) && channel.models.includes(model.id)) return true;
  }
  return false;
}

/** Why the key may not call the model, or undefined when it may. */
export function denial(config: Config, key: KeyRecord, model: ModelConfig): string | undefined {
  if (key.models !== '' && !allowlist(key.models).has(model.id)) return `this token is not allowed to use model ${model.id}`;
  if (!config.groups[key.group]) return `this token's group "${key.group}" no longer exists`;
  if (!groupServes(config, model, key.group)) return `model ${model.id} is not available to group "${key.group}"`;
  const perCall = isPerCall(model);
  if (key.billing_type === 1 && perCall) return `model ${model.id} is billed per call; this token's billing type ${BILLING_NAMES[1]} allows only usage-based models`;
  if (key.billing_type === 2 && !perCall) return `model ${model.id} is billed by usage; this token's billing type ${BILLING_NAMES[2]} allows only per-call models`;
  return undefined;
}

/** The configured model the key may call, or the 404/403 of spec §7.2. */
export function resolveModel(config: Config, models: Map<string, ModelConfig>, key: KeyRecord, id: string): ModelConfig {
  const model = models.get(id);
  if (!model) throw notFound(`The model ${id.slice(0, 200)} does not exist or you do not have access to it.`, 'model_not_found');
  const reason = denial(config, key, model);
  if (reason) throw forbidden(reason, 'model_not_allowed');
  return model;
}

/**
 * The model a request body names, resolved before the body is validated, so an unknown (or
 * forbidden) model is a 404 (403) whatever else is wrong; undefined when the body names none yet.
 */
export function modelNamed(context: { config: Config; models: Map<string, ModelConfig> }, key: KeyRecord, body: unknown): ModelConfig | undefined {
  const id = typeof body === 'object' && body !== null ? (body as { model?: unknown }).model : undefined;
  return typeof id === 'string' && id !== '' ? resolveModel(context.config, context.models, key, id) : undefined;
}
