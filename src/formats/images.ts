// Image generation wire format (spec §4.5): request validation against the model's configured
// options, and the per-call price. Pure: no I/O, safe to run in a worker thread.
import { badRequest, excerpt } from '../errors';
import type { ModelConfig } from '../config';

export const MAX_IMAGES_PER_REQUEST = 10;

export type ImageResponseFormat = 'url' | 'b64_json';

export interface ImageGenerationInfo {
  model: string;
  prompt: string;
  n: number;
  size?: string;
  quality?: string;
  style?: string;
  responseFormat?: ImageResponseFormat;
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

// Clients (and SDKs) often send `null` for an option they do not set; treat it like absence.
const isAbsent = (value: unknown): value is undefined | null => value === undefined || value === null;

export function requiredString(body: Record<string, unknown>, field: string): string {
  const value = body[field];
  if (isAbsent(value)) throw badRequest(`${field} is required`, field);
  if (typeof value !== 'string') throw badRequest(`${field} must be a string`, field);
  if (value.trim() === '') throw badRequest(`${field} must not be empty`, field);
  return value;
}

function optionalString(body: Record<string, unknown>, field: string): string | undefined {
  const value = body[field];
  if (isAbsent(value)) return undefined;
  if (typeof value !== 'string') throw badRequest(`${field} must be a string`, field);
  return value;
}

/** `n`: integer 1..10, default 1. Multipart forms carry it as a decimal string (`fromText`). */
export function imageCount(value: unknown, fromText = false): number {
  if (isAbsent(value) || (fromText && value === '')) return 1;
  const count = fromText && typeof value === 'string' && /^\s*\d+\s*$/.test(value) ? Number(value) : value;
  if (typeof count !== 'number' || !Number.isInteger(count) || count < 1 || count > MAX_IMAGES_PER_REQUEST) {
    throw badRequest(`n must be an integer between 1 and ${MAX_IMAGES_PER_REQUEST}`, 'n');
  }
  return count;
}

// Extra fields some model families take (spec §4.5). Only their types are checked here; the handler
// forwards the original body, so they reach the upstream untouched.
const EXTRA_FIELD_CHECKS: ReadonlyArray<[field: string, description: string, accepts: (value: unknown) => boolean]> = [
  ['aspect_ratio', 'a string such as "16:9"', (value) => typeof value === 'string'],
  ['seed', 'an integer', (value) => Number.isInteger(value)],
  ['prompt_upsampling', 'a boolean', (value) => typeof value === 'boolean'],
  ['safety_tolerance', 'an integer', (value) => Number.isInteger(value)],
];

export function validateImageGeneration(body: unknown): ImageGenerationInfo {
  if (!isObject(body)) throw badRequest('request body must be a JSON object');
  const model = requiredString(body, 'model');
  const prompt = requiredString(body, 'prompt');
  const n = imageCount(body.n);
  const size = optionalString(body, 'size');
  const quality = optionalString(body, 'quality');
  const style = optionalString(body, 'style');
  let responseFormat: ImageResponseFormat | undefined;
  if (!isAbsent(body.response_format)) {
    if (body.response_format !== 'url' && body.response_format !== 'b64_json') {
      throw badRequest('response_format must be "url" or "b64_json"', 'response_format');
    }
    responseFormat = body.response_format;
  }
  for (const [field, description, accepts] of EXTRA_FIELD_CHECKS) {
    if (!isAbsent(body[field]) && !accepts(body[field])) throw badRequest(`${field} must be ${description}`, field);
  }
  const info: ImageGenerationInfo = { model, prompt, n };
  if (size !== undefined) info.size = size;
  if (quality !== undefined) info.quality = quality;
  if (style !== undefined) info.style = style;
  if (responseFormat !== undefined) info.responseFormat = responseFormat;
  return info;
}

function checkListedOption(field: 'quality' | 'style', value: string | undefined, allowed: string[] | undefined, modelId: string): void {
  if (value === undefined) return;
  if (allowed === undefined || allowed.length === 0) throw badRequest(`${field} is not supported by model ${modelId}`, field);
  if (!allowed.includes(value)) {
    throw badRequest(`${field} "${excerpt(value)}" is not supported by model ${modelId}; allowed values: ${allowed.join(', ')}`, field);
  }
}

/** Rejects a size, quality or style the model does not offer (spec §4.5: options differ per family). */
export function checkImageOptions(info: { size?: string; quality?: string; style?: string }, model: ModelConfig): void {
  const options = model.image;
  const sizes = options?.sizes;
  if (info.size !== undefined && sizes !== undefined && sizes.length > 0 && !sizes.includes(info.size)) {
    throw badRequest(`size "${excerpt(info.size)}" is not supported by model ${model.id}; allowed sizes: ${sizes.join(', ')}`, 'size');
  }
  checkListedOption('quality', info.quality, options?.qualities, model.id);
  checkListedOption('style', info.style, options?.styles, model.id);
}

/** USD for one request: per_call × n × size multiplier × quality multiplier (multipliers default to 1). */
export function imagePriceUsd(model: ModelConfig, info: { n: number; size?: string; quality?: string }): number {
  const perCall = model.price.per_call ?? 0;
  const sizeMultiplier = info.size === undefined ? 1 : model.image?.size_multipliers?.[info.size] ?? 1;
  const qualityMultiplier = info.quality === undefined ? 1 : model.image?.quality_multipliers?.[info.quality] ?? 1;
  return perCall * info.n * sizeMultiplier * qualityMultiplier;
}
