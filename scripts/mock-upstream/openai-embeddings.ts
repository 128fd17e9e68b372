// POST /v1/embeddings in OpenAI's real wire format: one vector per input, float or base64
// (little-endian float32), `dimensions` honoured. Prompt tokens: ceil(characters / 4) per text
// input (at least 1), the length of a token-array input.
import { tokensForCharacters } from './content';
import { MockError, requireObject, sendJson } from './http-io';
import type { Exchange, MockContext } from './types';

/** Dimensions when the request names none (small: the mock stands for the wire format, not the model). */
const DEFAULT_DIMENSIONS = 8;

function inputsOf(input: unknown): Array<string | number[]> {
  if (typeof input === 'string') return [input];
  if (Array.isArray(input) && input.length > 0) {
    if (input.every((item) => typeof item === 'number')) return [input as number[]];
    if (input.every((item) => typeof item === 'string' || (Array.isArray(item) && item.every((token) => typeof token === 'number')))) {
      return input as Array<string | number[]>;
    }
  }
  throw new MockError(400, "'input' must be a string, an array of strings or an array of token arrays", 'invalid_value', 'input');
}

export function handleEmbeddings(exchange: Exchange, _context: MockContext): void {
  const body = requireObject(exchange.body);
  if (typeof body.model !== 'string' || body.model.length === 0) throw new MockError(400, 'you must provide a model parameter', undefined, 'model');
  const inputs = inputsOf(body.input);
  const dimensions = body.dimensions === undefined ? DEFAULT_DIMENSIONS : body.dimensions;
  if (typeof dimensions !== 'number' || !Number.isInteger(dimensions) || dimensions < 1 || dimensions > 3072) {
    throw new MockError(400, 'dimensions must be an integer from 1 to 3072', 'invalid_value', 'dimensions');
  }
  const base64 = body.encoding_format === 'base64';
  let promptTokens = 0;
  const data = inputs.map((input, index) => {
    promptTokens += typeof input === 'string' ? tokensForCharacters(input.length) : input.length;
    const vector = new Float32Array(dimensions);
    for (let position = 0; position < dimensions; position += 1) vector[position] = ((index + 1) * (position + 1)) / 1024;
    const embedding = base64 ? Buffer.from(vector.buffer).toString('base64') : Array.from(vector);
    return { object: 'embedding', index, embedding };
  });
  const usage = { prompt_tokens: promptTokens, total_tokens: promptTokens };
  const override = exchange.fault?.usageOverride?.prompt_tokens;
  if (override !== undefined) { usage.prompt_tokens = override; usage.total_tokens = override; }
  sendJson(exchange.response, 200, { object: 'list', data, model: body.model, ...(exchange.fault?.omitUsage ? {} : { usage }) });
}
