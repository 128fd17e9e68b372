// JSON bodies of model calls: parsed once, an object or a 400 naming the problem.
import { badRequest } from '../errors';
import type { Exchange } from '../http';
import { MAX_JSON_DEPTH, nestsDeeperThan } from '../formats/json-value';
import { parseJsonUtf8 } from '../formats/json-utf8';

export interface JsonBody { body: Record<string, unknown>; raw: Buffer }

/** The JSON object in a request body, or a 400 naming the problem. */
export function parseJsonBody(raw: Buffer): Record<string, unknown> {
  if (raw.length === 0) throw badRequest('request body is empty: send a JSON object', undefined, 'invalid_json');
  let value: unknown;
  try { value = parseJsonUtf8(raw); } catch {
    throw badRequest('request body is not valid JSON', undefined, 'invalid_json');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw badRequest('request body must be a JSON object', undefined, 'invalid_json');
  if (nestsDeeperThan(value)) throw jsonTooDeep();
  return value as Record<string, unknown>;
}

/** The 400 for a body nested past MAX_JSON_DEPTH, in every dialect. */
export function jsonTooDeep(): Error {
  return badRequest(`request JSON nests deeper than the ${MAX_JSON_DEPTH}-level limit (objects and arrays)`, undefined, 'json_too_deep');
}

/** The parsed object and the bytes it came from (forwarded as they are when nothing changes). */
export async function readJsonBody(exchange: Exchange): Promise<JsonBody> {
  const raw = await exchange.body();
  return { body: parseJsonBody(raw), raw };
}

export async function readJsonObject(exchange: Exchange): Promise<Record<string, unknown>> {
  return parseJsonBody(await exchange.body());
}
