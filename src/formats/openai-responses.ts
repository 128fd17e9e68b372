// OpenAI Responses API (POST /v1/responses): request validation, usage in both shapes, and the
// stream as the client sees it (model name, usage filled in when the upstream left it out).
// Pure: no I/O. The translation to and from chat completions is in openai-responses-chat*.ts.
import { badRequest, excerpt } from '../errors';
import { DeliveredText } from './delivered-text';
import { isObject, type JsonObject } from './json-value';
import type { Usage } from './openai-usage';
import { encodeSseEvent, type SseEvent } from './sse';

const TEXT_FORMATS = new Set(['text', 'json_object', 'json_schema']);
const TOOL_CHOICES = new Set(['auto', 'none', 'required']);
/** Input item types a chat completions upstream has a counterpart for (messages, function calls and their outputs). */
const TRANSLATABLE_ITEMS = new Set(['message', 'function_call', 'function_call_output', 'reasoning']);
const MESSAGE_ROLES = new Set(['user', 'assistant', 'system', 'developer']);

export interface ResponsesRequestInfo {
  model: string;
  stream: boolean;
  maxOutputTokens: number | undefined;
  /** input items (a string input is one) */
  itemCount: number;
  imageCount: number;
  /** a media part other than an image (input_file, input_audio) */
  otherMedia: string | undefined;
  /** bytes of inline media payloads (data: URIs, file data), left out of the prompt estimate */
  mediaBytes: number;
  /** text.format.type */
  textFormat: string | undefined;
  samplingParams: string[];
  /**
   * Why only an upstream that speaks the Responses API itself can serve the request (state kept
   * upstream, built-in tools), or undefined when any channel can: names the field.
   */
  nativeOnly: { reason: string; param: string } | undefined;
}

function checkRange(body: JsonObject, name: string, min: number, max: number): void {
  const value = body[name];
  if (value != null && (typeof value !== 'number' || !(value >= min && value <= max))) throw badRequest(`${name} must be a number between ${min} and ${max}`, name);
}

/** Media payload size of an input part (a data: URI or inline file data); 0 for a link or an id. */
function mediaBytesOf(part: JsonObject): number {
  const payload = part.type === 'input_image' ? part.image_url : part.type === 'input_file' ? part.file_data : undefined;
  return typeof payload === 'string' && (part.type !== 'input_image' || payload.startsWith('data:')) ? payload.length : 0;
}

/** Throws a 400 naming the first offending field. Unknown fields are not looked at. */
export function validateResponsesRequest(body: JsonObject): ResponsesRequestInfo {
  const model = body.model;
  if (typeof model !== 'string' || model.length === 0) throw badRequest('model must be a non-empty string', 'model');
  let nativeOnly: ResponsesRequestInfo['nativeOnly'];
  const needNative = (reason: string, param: string) => { nativeOnly ??= { reason, param }; };
  if (body.store != null && typeof body.store !== 'boolean') throw badRequest('store must be a boolean', 'store');
  if (body.store === true) needNative('store: true keeps the response upstream', 'store');
  if (body.previous_response_id != null) {
    if (typeof body.previous_response_id !== 'string') throw badRequest('previous_response_id must be a string', 'previous_response_id');
    needNative('previous_response_id continues a response kept upstream', 'previous_response_id');
  }
  if (body.conversation != null) needNative('conversation continues a conversation kept upstream', 'conversation');
  const input = body.input;
  let itemCount = 0;
  let imageCount = 0;
  let mediaBytes = 0;
  let otherMedia: string | undefined;
  if (typeof input === 'string') itemCount = 1;
  else if (Array.isArray(input)) {
    itemCount = input.length;
    for (let index = 0; index < input.length; index += 1) {
      const item: unknown = input[index];
      const path = `input[${index}]`;
      if (!isObject(item)) throw badRequest(`${path} must be an object`, path);
      const type = item.type ?? (item.role !== undefined ? 'message' : undefined);
      if (typeof type !== 'string') throw badRequest(`${path}.type must be a string`, `${path}.type`);
      if (!TRANSLATABLE_ITEMS.has(type)) needNative(`${path} is an item of type ${excerpt(type)}`, path);
      if (type === 'message') {
        if (typeof item.role !== 'string' || !MESSAGE_ROLES.has(item.role)) throw badRequest(`${path}.role must be one of user, assistant, system, developer`, `${path}.role`);
        const content = item.content;
        if (Array.isArray(content)) {
          for (let partIndex = 0; partIndex < content.length; partIndex += 1) {
            const part: unknown = content[partIndex];
            const partPath = `${path}.content[${partIndex}]`;
            if (!isObject(part) || typeof part.type !== 'string') throw badRequest(`${partPath} must be an object with a string type`, `${partPath}.type`);
            if ((part.type === 'input_text' || part.type === 'output_text') && typeof part.text !== 'string') throw badRequest(`${partPath}.text must be a string`, `${partPath}.text`);
            if (part.type === 'input_image') {
              if (part.image_url == null) needNative(`${partPath} refers to an uploaded file`, partPath);
              else if (typeof part.image_url !== 'string') throw badRequest(`${partPath}.image_url must be a string`, `${partPath}.image_url`);
              imageCount += 1;
            } else if (part.type === 'input_file' || part.type === 'input_audio') {
              otherMedia ??= partPath;
              if (part.type === 'input_file' && part.file_data == null) needNative(`${partPath} refers to an uploaded file`, partPath);
            }
            mediaBytes += mediaBytesOf(part);
          }
        } else if (typeof content !== 'string') throw badRequest(`${path}.content must be a string or an array of content parts`, `${path}.content`);
      } else if (type === 'function_call') {
        if (typeof item.call_id !== 'string' || typeof item.name !== 'string' || typeof item.arguments !== 'string') {
          throw badRequest(`${path} (function_call) needs string call_id, name and arguments`, path);
        }
      } else if (type === 'function_call_output') {
        if (typeof item.call_id !== 'string') throw badRequest(`${path}.call_id must be a string`, `${path}.call_id`);
        if (typeof item.output !== 'string' && !Array.isArray(item.output)) throw badRequest(`${path}.output must be a string or an array of content parts`, `${path}.output`);
      }
    }
  } else if (input != null || body.previous_response_id == null) {
    throw badRequest('input must be a string or an array of input items', 'input');
  }
  if (body.instructions != null && typeof body.instructions !== 'string') throw badRequest('instructions must be a string', 'instructions');
  const maxOutputTokens = body.max_output_tokens;
  if (maxOutputTokens != null && (typeof maxOutputTokens !== 'number' || !Number.isSafeInteger(maxOutputTokens) || maxOutputTokens < 1)) {
    throw badRequest('max_output_tokens must be a positive integer', 'max_output_tokens');
  }
  checkRange(body, 'temperature', 0, 2);
  checkRange(body, 'top_p', 0, 1);
  if (body.stream != null && typeof body.stream !== 'boolean') throw badRequest('stream must be a boolean', 'stream');
  if (body.parallel_tool_calls != null && typeof body.parallel_tool_calls !== 'boolean') throw badRequest('parallel_tool_calls must be a boolean', 'parallel_tool_calls');
  if (body.user != null && typeof body.user !== 'string') throw badRequest('user must be a string', 'user');
  if (body.tools != null) {
    if (!Array.isArray(body.tools)) throw badRequest('tools must be an array', 'tools');
    body.tools.forEach((tool: unknown, index) => {
      if (!isObject(tool) || typeof tool.type !== 'string') throw badRequest(`tools[${index}] must be an object with a string type`, `tools[${index}].type`);
      if (tool.type !== 'function') needNative(`tools[${index}] is a built-in tool of type ${excerpt(tool.type)}`, `tools[${index}]`);
      else if (typeof tool.name !== 'string' || tool.name.length === 0) throw badRequest(`tools[${index}].name must be a non-empty string`, `tools[${index}].name`);
    });
  }
  const toolChoice = body.tool_choice;
  if (toolChoice != null && !(typeof toolChoice === 'string' && TOOL_CHOICES.has(toolChoice))) {
    if (!isObject(toolChoice) || typeof toolChoice.type !== 'string') throw badRequest('tool_choice must be auto, none, required or an object with a type', 'tool_choice');
    if (toolChoice.type !== 'function') needNative(`tool_choice names a built-in tool (${excerpt(toolChoice.type)})`, 'tool_choice');
    else if (typeof toolChoice.name !== 'string') throw badRequest('tool_choice.name must be a string', 'tool_choice.name');
  }
  let textFormat: string | undefined;
  if (body.text != null) {
    if (!isObject(body.text)) throw badRequest('text must be an object', 'text');
    const format = body.text.format;
    if (format != null) {
      if (!isObject(format) || typeof format.type !== 'string' || !TEXT_FORMATS.has(format.type)) {
        throw badRequest('text.format.type must be one of text, json_object, json_schema', 'text.format.type');
      }
      if (format.type === 'json_schema' && (typeof format.name !== 'string' || !isObject(format.schema))) {
        throw badRequest('text.format of type json_schema needs a string name and a schema object', 'text.format');
      }
      textFormat = format.type;
    }
  }
  if (body.reasoning != null && !isObject(body.reasoning)) throw badRequest('reasoning must be an object', 'reasoning');
  return {
    model, stream: body.stream === true, maxOutputTokens: (maxOutputTokens as number | null | undefined) ?? undefined,
    itemCount, imageCount, otherMedia, mediaBytes, textFormat,
    samplingParams: ['temperature', 'top_p'].filter((name) => body[name] != null),
    nativeOnly,
  };
}

const count = (value: unknown): number => (typeof value === 'number' && Number.isFinite(value) && value > 0 ? Math.round(value) : 0);

/** A Responses `usage` object as the gateway's usage (input_tokens include the cached ones); undefined when it reports nothing. */
export function fromResponsesUsage(value: unknown): Usage | undefined {
  if (!isObject(value)) return undefined;
  const prompt = count(value.input_tokens);
  const completion = count(value.output_tokens);
  if (prompt + completion === 0) return undefined;
  const usage: Usage = { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
  const cached = isObject(value.input_tokens_details) ? count(value.input_tokens_details.cached_tokens) : 0;
  const reasoning = isObject(value.output_tokens_details) ? count(value.output_tokens_details.reasoning_tokens) : 0;
  usage.prompt_tokens_details = { cached_tokens: cached };
  usage.completion_tokens_details = { reasoning_tokens: reasoning };
  return usage;
}

/** The gateway's usage in the Responses shape. */
export function toResponsesUsage(usage: Usage): JsonObject {
  const details = (value: unknown, field: string) => (isObject(value) ? count(value[field]) : 0);
  return {
    input_tokens: usage.prompt_tokens,
    input_tokens_details: { cached_tokens: details(usage.prompt_tokens_details, 'cached_tokens') },
    output_tokens: usage.completion_tokens,
    output_tokens_details: { reasoning_tokens: details(usage.completion_tokens_details, 'reasoning_tokens') },
    total_tokens: usage.prompt_tokens + usage.completion_tokens,
  };
}

/** Output text of a response object (message text and function-call arguments), for a local count. */
export function responseOutputText(response: JsonObject): string {
  let text = '';
  for (const item of Array.isArray(response.output) ? response.output : []) {
    if (!isObject(item)) continue;
    if (typeof item.arguments === 'string') text += item.arguments;
    for (const part of Array.isArray(item.content) ? item.content : []) {
      if (isObject(part) && typeof part.text === 'string') text += part.text;
    }
    for (const part of Array.isArray(item.summary) ? item.summary : []) {
      if (isObject(part) && typeof part.text === 'string') text += part.text;
    }
  }
  return text;
}

const LIFECYCLE = new Set(['response.created', 'response.queued', 'response.in_progress', 'response.completed', 'response.incomplete', 'response.failed']);
const TERMINAL = new Set(['response.completed', 'response.incomplete', 'response.failed']);
const DELTAS = new Set(['response.output_text.delta', 'response.function_call_arguments.delta', 'response.reasoning_summary_text.delta', 'response.refusal.delta']);

/**
 * A Responses event stream as the client sees it: every event as it came, except that the
 * lifecycle events carry the model name the client asked for and the terminal one carries usage
 * (counted locally when the upstream left it out, so the client sees what is billed).
 */
export class ResponsesStream {
  private terminal = false;
  private failed = false;
  private upstreamUsage: Usage | undefined;
  private estimated: Usage | undefined;
  private readonly delivered = new DeliveredText();
  private lastSequence = -1;

  constructor(private readonly options: { model: string; promptTokens: () => number }) {}

  get complete(): boolean { return this.terminal; }
  get deliveredChars(): number { return this.delivered.chars; }
  deliveredTokens(): number { return this.delivered.tokens(); }
  get upstreamError(): boolean { return this.failed; }

  push(event: SseEvent): string {
    let parsed: unknown;
    try { parsed = JSON.parse(event.data); } catch { return encodeSseEvent(event.data, event.event); }
    if (!isObject(parsed)) return encodeSseEvent(event.data, event.event);
    const type = typeof parsed.type === 'string' ? parsed.type : event.event ?? '';
    if (typeof parsed.sequence_number === 'number') this.lastSequence = parsed.sequence_number;
    if (DELTAS.has(type)) {
      if (typeof parsed.delta === 'string') this.delivered.add(parsed.delta);
      return encodeSseEvent(event.data, event.event);
    }
    if (type === 'error') { this.failed = true; return encodeSseEvent(event.data, event.event); }
    if (!LIFECYCLE.has(type) || !isObject(parsed.response)) return encodeSseEvent(event.data, event.event);
    const response = parsed.response;
    let changed = false;
    if (response.model !== this.options.model) { response.model = this.options.model; changed = true; }
    if (TERMINAL.has(type)) {
      this.terminal = true;
      if (type === 'response.failed') this.failed = true;
      this.upstreamUsage = fromResponsesUsage(response.usage);
      if (this.upstreamUsage === undefined) {
        this.estimated = this.localUsage();
        response.usage = toResponsesUsage(this.estimated);
        changed = true;
      }
    }
    return encodeSseEvent(changed ? JSON.stringify(parsed) : event.data, event.event ?? type);
  }

  finish(): string { return ''; }

  /** An error as the Responses API streams it: an `error` event, numbered after the last one. */
  errorEvent(error: { code: string; message: string; param?: string }): string {
    return encodeSseEvent(JSON.stringify({ type: 'error', sequence_number: this.lastSequence + 1, code: error.code, message: error.message, param: error.param ?? null }), 'error');
  }

  usage(): { usage: Usage; source: 'upstream' | 'estimated' } {
    if (this.upstreamUsage !== undefined) return { usage: this.upstreamUsage, source: 'upstream' };
    return { usage: this.estimated ?? this.localUsage(), source: 'estimated' };
  }

  private localUsage(): Usage {
    const completion = this.delivered.tokens();
    const prompt = this.options.promptTokens();
    return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
  }
}
