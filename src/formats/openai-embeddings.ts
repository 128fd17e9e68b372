// OpenAI embeddings (POST /v1/embeddings): request validation, the usage of an answer, and the
// simulator's deterministic answer. Pure: no I/O.
import { createHash } from 'node:crypto';
import { countTokens } from '../billing/tokens';
import { badRequest } from '../errors';
import { isObject, type JsonObject } from './json-value';

/** OpenAI's documented bound on the inputs of one request. */
export const MAX_EMBEDDING_INPUTS = 2048;
/** Dimensions of the simulator's vectors when the request does not ask for fewer. */
export const SIMULATED_DIMENSIONS = 1536;
const ENCODING_FORMATS = new Set(['float', 'base64']);
/** Largest token id accepted in a token array (o200k and cl100k ids are far below it). */
const MAX_TOKEN_ID = 2 ** 31 - 1;

export interface EmbeddingsRequestInfo {
  model: string;
  /** number of inputs (a string or a token array is one) */
  inputCount: number;
  /** UTF-8 bytes of the text inputs */
  textBytes: number;
  /** tokens given as token arrays (counted exactly) */
  arrayTokens: number;
  encodingFormat: 'float' | 'base64';
  dimensions: number | undefined;
}

/** One input: a non-empty string or a non-empty array of token ids; returns [text bytes, tokens]. */
function checkInput(value: unknown, param: string): [number, number] {
  if (typeof value === 'string') {
    if (value.length === 0) throw badRequest(`${param} must not be an empty string`, param);
    return [Buffer.byteLength(value), 0];
  }
  if (Array.isArray(value)) {
    if (value.length === 0) throw badRequest(`${param} must not be an empty array`, param);
    for (let index = 0; index < value.length; index += 1) {
      const token: unknown = value[index];
      if (typeof token !== 'number' || !Number.isInteger(token) || token < 0 || token > MAX_TOKEN_ID) {
        throw badRequest(`${param}[${index}] must be a token id (an integer from 0 to ${MAX_TOKEN_ID})`, param);
      }
    }
    return [0, value.length];
  }
  throw badRequest(`${param} must be a string or an array of token ids`, param);
}

/**
 * `input` may be a string, an array of strings, an array of token ids, or an array of token-id
 * arrays (the four forms of OpenAI's API). Throws a 400 naming the first offending field.
 */
export function validateEmbeddingsRequest(body: JsonObject): EmbeddingsRequestInfo {
  const model = body.model;
  if (typeof model !== 'string' || model.length === 0) throw badRequest('model must be a non-empty string', 'model');
  const input = body.input;
  let inputCount = 0;
  let textBytes = 0;
  let arrayTokens = 0;
  if (typeof input === 'string') {
    [textBytes] = checkInput(input, 'input');
    inputCount = 1;
  } else if (Array.isArray(input)) {
    if (input.length === 0) throw badRequest('input must not be an empty array', 'input');
    if (input.length > MAX_EMBEDDING_INPUTS) throw badRequest(`input holds ${input.length} items; at most ${MAX_EMBEDDING_INPUTS} are allowed per request`, 'input');
    if (input.every((item) => typeof item === 'number')) {
      [, arrayTokens] = checkInput(input, 'input');
      inputCount = 1;
    } else {
      for (let index = 0; index < input.length; index += 1) {
        const [bytes, tokens] = checkInput(input[index], `input[${index}]`);
        textBytes += bytes;
        arrayTokens += tokens;
      }
      inputCount = input.length;
    }
  } else {
    throw badRequest('input must be a string, an array of strings, an array of token ids or an array of token-id arrays', 'input');
  }
  const format = body.encoding_format;
  if (format != null && !(typeof format === 'string' && ENCODING_FORMATS.has(format))) {
    throw badRequest('encoding_format must be "float" or "base64"', 'encoding_format');
  }
  const dimensions = body.dimensions;
  if (dimensions != null && (typeof dimensions !== 'number' || !Number.isSafeInteger(dimensions) || dimensions < 1)) {
    throw badRequest('dimensions must be a positive integer', 'dimensions');
  }
  if (body.user != null && typeof body.user !== 'string') throw badRequest('user must be a string', 'user');
  return {
    model, inputCount, textBytes, arrayTokens,
    encodingFormat: format === 'base64' ? 'base64' : 'float',
    dimensions: (dimensions as number | null | undefined) ?? undefined,
  };
}

/** The inputs of a validated request, one entry per input (a string or a token array). */
export function embeddingInputs(input: unknown): Array<string | number[]> {
  if (typeof input === 'string') return [input];
  if (!Array.isArray(input)) return [];
  if (input.every((item) => typeof item === 'number')) return [input as number[]];
  return input as Array<string | number[]>;
}

/** Tokenizer count of a request's inputs (token arrays count their length). */
export function countEmbeddingTokens(input: unknown): number {
  let total = 0;
  for (const item of embeddingInputs(input)) total += typeof item === 'string' ? countTokens(item) : item.length;
  return total;
}

/** Prompt tokens of an embeddings answer (`usage.prompt_tokens`), or undefined when it reports none. */
export function embeddingsUsage(answer: JsonObject): number | undefined {
  const usage = answer.usage;
  if (!isObject(usage)) return undefined;
  const prompt = usage.prompt_tokens ?? usage.total_tokens;
  return typeof prompt === 'number' && Number.isFinite(prompt) && prompt > 0 ? Math.round(prompt) : undefined;
}

/** A deterministic unit vector for one input: a xorshift sequence seeded by the input's SHA-256. */
function vectorOf(input: string | number[], dimensions: number): Float32Array {
  const seed = createHash('sha256').update(typeof input === 'string' ? `s:${input}` : `t:${input.join(',')}`).digest();
  let state = seed.readUInt32LE(0) || 1;
  const vector = new Float32Array(dimensions);
  let norm = 0;
  for (let index = 0; index < dimensions; index += 1) {
    state ^= state << 13; state >>>= 0;
    state ^= state >>> 17;
    state ^= state << 5; state >>>= 0;
    const value = state / 0xffffffff - 0.5;
    vector[index] = value;
    norm += value * value;
  }
  const scale = norm > 0 ? 1 / Math.sqrt(norm) : 0;
  for (let index = 0; index < dimensions; index += 1) vector[index] *= scale;
  return vector;
}

export interface SimulatedEmbeddingsRequest {
  model: string;
  inputs: Array<string | number[]>;
  encodingFormat: 'float' | 'base64';
  dimensions: number | undefined;
  /** prompt tokens to report */
  promptTokens: number;
}

/** The simulator's answer: one deterministic unit vector per input, in OpenAI's list shape. */
export function simulateEmbeddings(request: SimulatedEmbeddingsRequest): JsonObject {
  if (request.dimensions !== undefined && request.dimensions > SIMULATED_DIMENSIONS) {
    throw badRequest(`dimensions must be at most ${SIMULATED_DIMENSIONS} for model ${request.model}`, 'dimensions');
  }
  const dimensions = request.dimensions ?? SIMULATED_DIMENSIONS;
  const data = request.inputs.map((input, index) => {
    const vector = vectorOf(input, dimensions);
    const embedding = request.encodingFormat === 'base64'
      ? Buffer.from(vector.buffer, vector.byteOffset, vector.byteLength).toString('base64')
      : Array.from(vector);
    return { object: 'embedding', index, embedding };
  });
  return { object: 'list', data, model: request.model, usage: { prompt_tokens: request.promptTokens, total_tokens: request.promptTokens } };
}
