// Prices → quota. 500000 quota = 1 USD; quota = ceil(USD × 500000 × group ratio), computed so
// that float error never adds a unit (the product is rounded to 6 decimals before the ceiling).
import { QUOTA_PER_USD, type ModelConfig } from '../config';

export interface TokenUsage {
  prompt_tokens: number;
  completion_tokens: number;
  /** part of prompt_tokens read from the provider's cache */
  cached_tokens?: number;
  /** part of prompt_tokens written to the provider's cache */
  cache_creation_tokens?: number;
}

export function usdToQuota(usd: number, ratio: number): number {
  const exact = Math.round(usd * QUOTA_PER_USD * ratio * 1e6) / 1e6;
  return Math.max(0, Math.ceil(exact));
}

export function isPerCall(model: ModelConfig): boolean {
  return model.price.per_call !== undefined;
}

/**
 * USD of a usage-priced call. Cached tokens are priced at cached_input where the model has it; the
 * cached parts are held within the prompt and never below 0 (a negative part would price the rest
 * of the prompt above its count).
 */
export function usageUsd(model: ModelConfig, usage: TokenUsage): number {
  const price = model.price;
  const cached = Math.max(0, Math.min(usage.cached_tokens ?? 0, usage.prompt_tokens));
  const creation = Math.max(0, Math.min(usage.cache_creation_tokens ?? 0, usage.prompt_tokens - cached));
  const cachedPrice = price.cached_input ?? price.input ?? 0;
  const creationPrice = price.cache_creation_input ?? price.input ?? 0;
  const plain = usage.prompt_tokens - cached - creation;
  return (plain * (price.input ?? 0) + cached * cachedPrice + creation * creationPrice
    + usage.completion_tokens * (price.output ?? 0)) / 1_000_000;
}

export function usageQuota(model: ModelConfig, usage: TokenUsage, ratio: number): number {
  return usdToQuota(usageUsd(model, usage), ratio);
}

export function perCallQuota(model: ModelConfig, count: number, ratio: number, multiplier = 1): number {
  return usdToQuota((model.price.per_call ?? 0) * count * multiplier, ratio);
}

/** Reservation for a usage model: estimated prompt + the output cap, priced. */
export function estimateQuota(model: ModelConfig, promptTokens: number, maxOutputTokens: number, ratio: number): number {
  return usageQuota(model, { prompt_tokens: promptTokens, completion_tokens: maxOutputTokens }, ratio);
}
