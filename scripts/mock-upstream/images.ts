// Image generation and editing (OpenAI wire format) and the static files their URLs point at.
import { isMultipart, MockError, requireObject, sendJson } from './http-io';
import type { Exchange, MockContext, MultipartBody } from './types';

/** A valid 1x1 transparent PNG (checksums verified by the unit test). */
export const TINY_PNG_BASE64 = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAAC0lEQVR4nGNgAAIAAAUAAXpeqz8AAAAASUVORK5CYII=';
const TINY_PNG = Buffer.from(TINY_PNG_BASE64, 'base64');
/** An MP4 `ftyp` box: enough for a client to see the right magic bytes. */
const TINY_MP4 = Buffer.from('00000018667479706973736f6d0000020069736f6d6d703431', 'hex');

const IMAGE_FILE_FIELD = /^image(\[\d*\])?$/;

function readImageCount(value: unknown): number {
  if (value === undefined || value === null) return 1;
  const count = typeof value === 'string' ? Number(value) : value;
  if (typeof count !== 'number' || !Number.isInteger(count) || count < 1 || count > 10) {
    throw new MockError(400, `${JSON.stringify(value)} is not valid for 'n': expected an integer from 1 to 10.`, 'invalid_value', 'n');
  }
  return count;
}

function readResponseFormat(value: unknown): 'url' | 'b64_json' {
  if (value === undefined || value === null || value === 'b64_json') return 'b64_json';
  if (value === 'url') return 'url';
  throw new MockError(400, `${JSON.stringify(value)} is not one of ['url', 'b64_json'] - 'response_format'`, 'invalid_value', 'response_format');
}

function sendImages(exchange: Exchange, context: MockContext, count: number, format: 'url' | 'b64_json', prompt: string): void {
  const data = [];
  for (let index = 0; index < count; index += 1) {
    data.push(format === 'url'
      ? { url: `${context.baseUrl}/files/img-${index}.png`, revised_prompt: prompt }
      : { b64_json: TINY_PNG_BASE64, revised_prompt: prompt });
  }
  sendJson(exchange.response, 200, { created: Math.floor(Date.now() / 1000), data });
}

export function handleImageGenerations(exchange: Exchange, context: MockContext): void {
  const body = requireObject(exchange.body);
  if (typeof body.prompt !== 'string' || body.prompt.length === 0) {
    throw new MockError(400, "Missing required parameter: 'prompt'.", 'missing_required_parameter', 'prompt');
  }
  sendImages(exchange, context, readImageCount(body.n), readResponseFormat(body.response_format), body.prompt);
}

const firstField = (body: MultipartBody, name: string): string | undefined => body.fields[name]?.[0];

export function handleImageEdits(exchange: Exchange, context: MockContext): void {
  if (!isMultipart(exchange.request)) {
    const type = exchange.request.headers['content-type'] ?? 'none';
    throw new MockError(400, `Invalid Content-Type header (${type}), expected multipart/form-data: image edits require a multipart upload.`);
  }
  const body = exchange.body as MultipartBody;
  const hasFile = body.files.some((file) => IMAGE_FILE_FIELD.test(file.field));
  // Some models take the source image as a URL text field instead of a file.
  const imageUrls = [...(body.fields.image ?? []), ...(body.fields['image[]'] ?? [])];
  const hasUrl = imageUrls.some((value) => /^(https?:\/\/|data:image\/)/.test(value));
  if (!hasFile && !hasUrl) {
    throw new MockError(400, "Missing required parameter: 'image'. Upload it as a file in 'image' or 'image[]'.", 'missing_required_parameter', 'image');
  }
  const prompt = firstField(body, 'prompt');
  if (prompt === undefined || prompt.length === 0) {
    throw new MockError(400, "Missing required parameter: 'prompt'.", 'missing_required_parameter', 'prompt');
  }
  sendImages(exchange, context, readImageCount(firstField(body, 'n')), readResponseFormat(firstField(body, 'response_format')), prompt);
}

/** GET /files/<name>.png and /files/video.mp4: the bytes behind the URLs the mock hands out. */
export function handleFile(exchange: Exchange): void {
  const name = exchange.params[0];
  const bytes = name.endsWith('.mp4') ? TINY_MP4 : TINY_PNG;
  exchange.response.writeHead(200, {
    'content-type': name.endsWith('.mp4') ? 'video/mp4' : 'image/png',
    'content-length': bytes.length,
  });
  exchange.response.end(bytes);
}

