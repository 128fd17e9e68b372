// OpenAI chat completions request: validation (spec §2.3, §4.2, §8) and the few fields the gateway
// itself sets before forwarding. Runs on every request, so it is hand-written: one pass over the
// messages, no schema library, no copies of the body. Unknown fields are not looked at; they pass
// through to the upstream untouched.
import { badRequest } from '../errors';
import { isObject, repeatsTopLevelKey, type JsonObject } from './json-value';

export interface ChatRequestInfo {
  model: string;
  stream: boolean;
  n: number;
  /** max_completion_tokens ?? max_tokens */
  maxTokens: number | undefined;
  hasSystem: boolean;
  hasImages: boolean;
  imageCount: number;
  /** the first content part that is neither text nor image_url (input_audio, file, …), for models that take text only */
  otherMedia: { type: string; param: string } | undefined;
  messageCount: number;
  /** which of temperature, top_p, presence_penalty, frequency_penalty are present (non-null) */
  samplingParams: string[];
  responseFormat: string | undefined;
  includeUsageRequested: boolean;
  /** total characters of text content */
  promptChars: number;
  /** bytes of media payloads carried in the body (data: URIs, audio and file data), left out of the prompt estimate */
  mediaBytes: number;
  /** text of the last user message (ratio markers) */
  lastUserText: string;
}


const ROLES = new Set(['system', 'user', 'assistant', 'function', 'tool', 'developer']);
const IMAGE_DETAILS = new Set(['high', 'low', 'auto']);
const RESPONSE_FORMATS = new Set(['text', 'json_object', 'json_schema']);
const SAMPLING_PARAMS = ['temperature', 'top_p', 'presence_penalty', 'frequency_penalty'] as const;
const MAX_STOP_SEQUENCES = 4;
const MAX_CHOICES = 128;
const DATA_IMAGE_URI = /^data:image\/[a-z0-9.+-]+;base64,/i;


function checkNumber(body: JsonObject, name: string, min: number, max: number): void {
  const value = body[name];
  if (value == null) return;
  if (typeof value !== 'number' || !(value >= min && value <= max)) {
    throw badRequest(`${name} must be a number between ${min} and ${max}`, name);
  }
}

function checkPositiveInteger(body: JsonObject, name: string): number | undefined {
  const value = body[name];
  if (value == null) return undefined;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
    throw badRequest(`${name} must be a positive integer`, name);
  }
  return value;
}

function isImageUrl(url: string): boolean {
  const scheme = url.slice(0, 8).toLowerCase();
  return scheme === 'https://' || scheme.startsWith('http://') || DATA_IMAGE_URI.test(url);
}

/** Parts that are text; any other type but image_url is another kind of media. */
const TEXT_PARTS = new Set(['text', 'refusal']);

/** Size of the inline payload of a media part (a data: URI, base64 audio or file data); 0 for a link. */
function mediaPayloadBytes(part: JsonObject): number {
  const payload = isObject(part.image_url) ? part.image_url.url
    : isObject(part.input_audio) ? part.input_audio.data
      : isObject(part.file) ? part.file.file_data : undefined;
  return typeof payload === 'string' && (part.type !== 'image_url' || payload.startsWith('data:')) ? payload.length : 0;
}

/** Validates one content part; returns its text length (0 for a refusal), -1 for an image or -2 for other media. */
function checkContentPart(part: unknown, path: string): number {
  if (!isObject(part) || typeof part.type !== 'string') {
    throw badRequest(`${path} must be an object with a string type`, `${path}.type`);
  }
  if (part.type === 'text') {
    if (typeof part.text !== 'string') throw badRequest(`${path}.text must be a string`, `${path}.text`);
    return part.text.length;
  }
  if (part.type !== 'image_url') return TEXT_PARTS.has(part.type) ? 0 : -2; // input_audio, file, … pass through as they are
  const image = part.image_url;
  if (!isObject(image)) throw badRequest(`${path}.image_url must be an object`, `${path}.image_url`);
  if (typeof image.url !== 'string' || !isImageUrl(image.url)) {
    throw badRequest(`${path}.image_url.url must be an https URL or a data:image/...;base64, URI`, `${path}.image_url.url`);
  }
  if (image.detail != null && !(typeof image.detail === 'string' && IMAGE_DETAILS.has(image.detail))) {
    throw badRequest(`${path}.image_url.detail must be one of high, low, auto`, `${path}.image_url.detail`);
  }
  return -1;
}

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  let text = '';
  for (const part of content as JsonObject[]) {
    if (part.type === 'text') text = text.length === 0 ? (part.text as string) : `${text}\n${part.text as string}`;
  }
  return text;
}

/** Throws a 400 GatewayError naming the first offending field; checks run in a fixed order. */
const TOOL_LISTS = ['tools', 'functions'] as const;

/**
 * `tools` and `functions`, when given, are arrays of objects. Their elements pass through untouched;
 * only the containers are checked, as every OpenAI-compatible upstream requires, because the
 * simulator and the Anthropic translation read them as arrays.
 */
export function refuseMalformedToolLists(body: { tools?: unknown; functions?: unknown }): void {
  for (const name of TOOL_LISTS) {
    const list = body[name];
    if (list == null) continue;
    if (!Array.isArray(list)) throw badRequest(`${name} must be an array of objects`, name);
    const bad = list.findIndex((item) => !isObject(item));
    if (bad !== -1) throw badRequest(`${name}[${bad}] must be an object`, `${name}[${bad}]`);
  }
}

export function validateChatRequest(body: unknown): ChatRequestInfo {
  if (!isObject(body)) throw badRequest('request body must be a JSON object');
  const model = body.model;
  if (typeof model !== 'string' || model.length === 0) throw badRequest('model must be a non-empty string', 'model');
  const messages = body.messages;
  if (!Array.isArray(messages) || messages.length === 0) {
    throw badRequest('messages must be a non-empty array', 'messages');
  }

  let promptChars = 0;
  let mediaBytes = 0;
  let imageCount = 0;
  let otherMedia: ChatRequestInfo['otherMedia'];
  let hasSystem = false;
  let lastUserIndex = -1;
  for (let index = 0; index < messages.length; index += 1) {
    const message: unknown = messages[index];
    if (!isObject(message)) throw badRequest(`messages[${index}] must be an object`, `messages[${index}]`);
    const role = message.role;
    if (typeof role !== 'string' || !ROLES.has(role)) {
      throw badRequest(`messages[${index}].role must be one of system, user, assistant, function, tool, developer`, `messages[${index}].role`);
    }
    if (role === 'system') hasSystem = true;
    else if (role === 'user') lastUserIndex = index;
    const content = message.content;
    if (typeof content === 'string') {
      promptChars += content.length;
    } else if (Array.isArray(content)) {
      for (let partIndex = 0; partIndex < content.length; partIndex += 1) {
        const size = checkContentPart(content[partIndex], `messages[${index}].content[${partIndex}]`);
        if (size >= 0) {
          promptChars += size;
          continue;
        }
        mediaBytes += mediaPayloadBytes(content[partIndex] as JsonObject);
        if (size === -1) imageCount += 1;
        else otherMedia ??= { type: (content[partIndex] as JsonObject).type as string, param: `messages[${index}].content[${partIndex}]` };
      }
    } else {
      // null (or absent) content only where the message's substance is a call
      const callOnly = content == null
        && (role === 'function' || (role === 'assistant' && (message.tool_calls != null || message.function_call != null)));
      if (!callOnly) {
        throw badRequest(`messages[${index}].content must be a string or an array of content parts`, `messages[${index}].content`);
      }
    }
  }

  checkNumber(body, 'temperature', 0, 2);
  checkNumber(body, 'top_p', 0, 1);
  checkNumber(body, 'frequency_penalty', -2, 2);
  checkNumber(body, 'presence_penalty', -2, 2);
  const maxTokens = checkPositiveInteger(body, 'max_tokens');
  const maxCompletionTokens = checkPositiveInteger(body, 'max_completion_tokens');
  const n = body.n;
  if (n != null && (typeof n !== 'number' || !Number.isInteger(n) || n < 1 || n > MAX_CHOICES)) {
    throw badRequest(`n must be an integer between 1 and ${MAX_CHOICES}`, 'n');
  }
  const stop = body.stop;
  if (stop != null && typeof stop !== 'string'
    && !(Array.isArray(stop) && stop.length <= MAX_STOP_SEQUENCES && stop.every((item) => typeof item === 'string'))) {
    throw badRequest(`stop must be a string or an array of at most ${MAX_STOP_SEQUENCES} strings`, 'stop');
  }
  const stream = body.stream;
  if (stream != null && typeof stream !== 'boolean') throw badRequest('stream must be a boolean', 'stream');
  const streamOptions = body.stream_options;
  let includeUsageRequested = false;
  if (streamOptions != null) {
    if (!isObject(streamOptions)) throw badRequest('stream_options must be an object', 'stream_options');
    const includeUsage = streamOptions.include_usage;
    if (includeUsage != null && typeof includeUsage !== 'boolean') {
      throw badRequest('stream_options.include_usage must be a boolean', 'stream_options.include_usage');
    }
    includeUsageRequested = includeUsage === true;
  }
  if (body.user != null && typeof body.user !== 'string') throw badRequest('user must be a string', 'user');
  refuseMalformedToolLists(body);
  const responseFormat = body.response_format;
  let responseFormatType: string | undefined;
  if (responseFormat != null) {
    if (!isObject(responseFormat)) throw badRequest('response_format must be an object', 'response_format');
    const type = responseFormat.type;
    if (typeof type !== 'string' || !RESPONSE_FORMATS.has(type)) {
      throw badRequest('response_format.type must be one of text, json_object, json_schema', 'response_format.type');
    }
    responseFormatType = type;
  }

  const samplingParams: string[] = [];
  for (const name of SAMPLING_PARAMS) if (body[name] != null) samplingParams.push(name);

  return {
    model,
    stream: stream === true,
    n: (n as number | null | undefined) ?? 1,
    maxTokens: maxCompletionTokens ?? maxTokens,
    hasSystem,
    hasImages: imageCount > 0,
    imageCount,
    otherMedia,
    messageCount: messages.length,
    samplingParams,
    responseFormat: responseFormatType,
    includeUsageRequested,
    promptChars,
    mediaBytes,
    lastUserText: lastUserIndex === -1 ? '' : textOf((messages[lastUserIndex] as JsonObject).content),
  };
}

export interface UpstreamOptions {
  /** the upstream's name for the model */
  model: string;
  stream: boolean;
  /** filled in as max_tokens when the client set neither max_tokens nor max_completion_tokens */
  maxTokensDefault?: number;
}

/**
 * A shallow copy of a validated body with the fields the gateway owns: the upstream model name,
 * and for streams `stream_options.include_usage` so the upstream reports the usage billing needs.
 */
export function withUpstreamOptions(body: Record<string, unknown>, options: UpstreamOptions): Record<string, unknown> {
  const upstream: Record<string, unknown> = { ...body, model: options.model };
  if (options.stream) {
    upstream.stream = true;
    const existing = isObject(body.stream_options) ? body.stream_options : undefined;
    upstream.stream_options = { ...existing, include_usage: true };
  } else {
    if (body.stream === true) upstream.stream = false;
    // stream_options without stream:true is a 400 at OpenAI
    if (body.stream_options !== undefined) delete upstream.stream_options;
  }
  if (options.maxTokensDefault !== undefined && body.max_tokens == null && body.max_completion_tokens == null) {
    upstream.max_tokens = options.maxTokensDefault;
  }
  return upstream;
}

const INCLUDE_USAGE = Buffer.from('{"stream_options":{"include_usage":true},');

/**
 * The bytes to send upstream. When the gateway changes nothing (same model name, no default
 * max_tokens, and for a stream the client already asked for `include_usage`) the client's own bytes
 * go as they are; a stream without stream_options gets `include_usage` spliced in front. Anything
 * else is `upstreamBody` (from withUpstreamOptions) serialized; so is a body that repeats a top-level
 * key, whose bytes an upstream could read otherwise than the gateway did (the model it bills, the
 * max_tokens it bounds by).
 */
export function upstreamChatBytes(raw: Buffer, body: Record<string, unknown>, upstreamBody: Record<string, unknown>, options: UpstreamOptions): Buffer | string {
  const asksUsage = options.stream && isObject(body.stream_options) && body.stream_options.include_usage === true;
  const untouched = body.model === options.model && (body.stream_options === undefined || asksUsage)
    && (options.maxTokensDefault === undefined || body.max_tokens != null || body.max_completion_tokens != null)
    && !repeatsTopLevelKey(raw, body);
  if (untouched) {
    let start = 0;
    while (start < raw.length && (raw[start] === 0x20 || raw[start] === 0x0a || raw[start] === 0x0d || raw[start] === 0x09)) start += 1;
    if (raw[start] === 0x7b /* { */) {
      if (!options.stream && body.stream !== true) return raw;
      if (options.stream && body.stream === true) {
        if (asksUsage) return raw;
        let next = start + 1;
        while (next < raw.length && (raw[next] === 0x20 || raw[next] === 0x0a || raw[next] === 0x0d || raw[next] === 0x09)) next += 1;
        // `{}` cannot be a valid chat request, so a member always follows and the comma is right
        if (raw[next] !== 0x7d) return Buffer.concat([INCLUDE_USAGE, raw.subarray(start + 1)]);
      }
    }
  }
  return JSON.stringify(upstreamBody);
}
