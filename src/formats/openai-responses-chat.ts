// Responses API ↔ chat completions, for upstreams that speak chat (the simulator, and Anthropic
// channels through their chat translation): a validated Responses request becomes a chat request,
// a chat.completion becomes a Response object. Pure: no I/O; fields without a counterpart come back
// as warnings (names only), never dropped silently.
import { randomBytes } from 'node:crypto';
import { isObject, type JsonObject } from './json-value';
import { normalizeUsage } from './openai-usage';
import { toResponsesUsage } from './openai-responses';

export interface Converted<T> { value: T; warnings: string[] }

/** Request fields with no chat counterpart that are left out (with a warning when present). */
const DROPPED_FIELDS = ['include', 'truncation', 'metadata', 'prompt_cache_key', 'safety_identifier', 'service_tier', 'background', 'max_tool_calls', 'prompt', 'store'];

type ChatMessage = JsonObject & { role: string };

function partsToChat(content: unknown[], warnings: string[], path: string): unknown[] {
  const parts: unknown[] = [];
  content.forEach((part, index) => {
    if (!isObject(part)) return;
    switch (part.type) {
      case 'input_text': case 'output_text': parts.push({ type: 'text', text: part.text }); break;
      case 'refusal': parts.push({ type: 'text', text: part.refusal }); break;
      case 'input_image': parts.push({ type: 'image_url', image_url: { url: part.image_url, ...(typeof part.detail === 'string' ? { detail: part.detail } : {}) } }); break;
      case 'input_file': parts.push({ type: 'file', file: { file_data: part.file_data, ...(typeof part.filename === 'string' ? { filename: part.filename } : {}) } }); break;
      default: warnings.push(`${path}.content[${index}] (${String(part.type)})`);
    }
  });
  return parts;
}

/** Plain text of content parts (assistant turns and tool outputs are text in chat). */
function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.map((part) => (isObject(part) ? String(part.text ?? part.refusal ?? '') : '')).join('');
}

function chatMessages(body: JsonObject, warnings: string[]): ChatMessage[] {
  const messages: ChatMessage[] = [];
  if (typeof body.instructions === 'string' && body.instructions.length > 0) messages.push({ role: 'system', content: body.instructions });
  const input = body.input;
  if (typeof input === 'string') { messages.push({ role: 'user', content: input }); return messages; }
  (Array.isArray(input) ? input : []).forEach((item: unknown, index) => {
    if (!isObject(item)) return;
    const path = `input[${index}]`;
    const type = item.type ?? 'message';
    if (type === 'message') {
      const role = item.role === 'developer' ? 'system' : String(item.role);
      if (role === 'assistant') messages.push({ role, content: textOf(item.content) });
      else if (typeof item.content === 'string') messages.push({ role, content: item.content });
      else {
        const parts = partsToChat(item.content as unknown[], warnings, path);
        // system turns are text in every chat dialect
        messages.push({ role, content: role === 'system' ? textOf(item.content) : parts });
      }
    } else if (type === 'function_call') {
      const call = { id: item.call_id, type: 'function', function: { name: item.name, arguments: item.arguments } };
      const last = messages[messages.length - 1];
      // consecutive calls (and a call right after the assistant's text) are one assistant turn
      if (last?.role === 'assistant' && !('tool_call_id' in last)) {
        last.tool_calls = [...(Array.isArray(last.tool_calls) ? last.tool_calls : []), call];
        if (last.content === '') last.content = null;
      } else messages.push({ role: 'assistant', content: null, tool_calls: [call] });
    } else if (type === 'function_call_output') {
      messages.push({ role: 'tool', tool_call_id: item.call_id, content: textOf(item.output) });
    } else {
      warnings.push(`${path} (${String(type)})`);
    }
  });
  return messages;
}

function chatTools(tools: unknown): unknown[] | undefined {
  if (!Array.isArray(tools) || tools.length === 0) return undefined;
  return tools.filter(isObject).map((tool) => ({
    type: 'function',
    function: {
      name: tool.name,
      ...(tool.description != null ? { description: tool.description } : {}),
      ...(tool.parameters != null ? { parameters: tool.parameters } : {}),
      ...(typeof tool.strict === 'boolean' ? { strict: tool.strict } : {}),
    },
  }));
}

function chatToolChoice(choice: unknown): unknown {
  if (isObject(choice) && choice.type === 'function') return { type: 'function', function: { name: choice.name } };
  return choice;
}

function chatResponseFormat(text: unknown): unknown {
  const format = isObject(text) ? text.format : undefined;
  if (!isObject(format) || format.type === 'text') return undefined;
  if (format.type === 'json_object') return { type: 'json_object' };
  return {
    type: 'json_schema',
    json_schema: {
      name: format.name, schema: format.schema,
      ...(typeof format.strict === 'boolean' ? { strict: format.strict } : {}),
      ...(typeof format.description === 'string' ? { description: format.description } : {}),
    },
  };
}

/** A validated Responses request (validateResponsesRequest) as a chat completions request. */
export function toChatRequestFromResponses(body: JsonObject, options: { model: string; stream: boolean }): Converted<JsonObject> {
  const warnings: string[] = [];
  const request: JsonObject = { model: options.model, messages: chatMessages(body, warnings) };
  const tools = chatTools(body.tools);
  if (tools) request.tools = tools;
  if (body.tool_choice != null) request.tool_choice = chatToolChoice(body.tool_choice);
  if (body.parallel_tool_calls != null && tools) request.parallel_tool_calls = body.parallel_tool_calls;
  if (body.max_output_tokens != null) request.max_tokens = body.max_output_tokens;
  for (const field of ['temperature', 'top_p', 'user'] as const) if (body[field] != null) request[field] = body[field];
  if (typeof body.top_logprobs === 'number') { request.logprobs = true; request.top_logprobs = body.top_logprobs; }
  const responseFormat = chatResponseFormat(body.text);
  if (responseFormat) request.response_format = responseFormat;
  if (isObject(body.reasoning) && typeof body.reasoning.effort === 'string') request.reasoning_effort = body.reasoning.effort;
  if (isObject(body.reasoning) && body.reasoning.summary != null) warnings.push('reasoning.summary');
  if (options.stream) { request.stream = true; request.stream_options = { include_usage: true }; }
  for (const field of DROPPED_FIELDS) if (body[field] != null && !(field === 'store' && body.store === false)) warnings.push(field);
  return { value: request, warnings };
}

export const newResponseId = (): string => `resp_${randomBytes(12).toString('hex')}`;
export const newItemId = (prefix: 'msg' | 'fc'): string => `${prefix}_${randomBytes(12).toString('hex')}`;

/** The fields a Response object echoes from its request, as OpenAI fills them in. */
export function responseShell(request: JsonObject, fields: { id: string; createdAt: number; model: string; status: string }): JsonObject {
  return {
    id: fields.id, object: 'response', created_at: fields.createdAt, status: fields.status, background: false, error: null,
    incomplete_details: null, instructions: request.instructions ?? null, max_output_tokens: request.max_output_tokens ?? null,
    model: fields.model, output: [], parallel_tool_calls: request.parallel_tool_calls ?? true, previous_response_id: null,
    reasoning: { effort: isObject(request.reasoning) ? request.reasoning.effort ?? null : null, summary: null },
    store: false, temperature: request.temperature ?? 1,
    text: { format: isObject(request.text) && isObject(request.text.format) ? request.text.format : { type: 'text' } },
    tool_choice: request.tool_choice ?? 'auto', tools: Array.isArray(request.tools) ? request.tools : [], top_p: request.top_p ?? 1,
    truncation: 'disabled', usage: null, user: request.user ?? null, metadata: isObject(request.metadata) ? request.metadata : {},
  };
}

/** status and incomplete_details of a Response from a chat finish_reason. */
export function responseStatus(finishReason: unknown): { status: string; incomplete: JsonObject | null } {
  if (finishReason === 'length') return { status: 'incomplete', incomplete: { reason: 'max_output_tokens' } };
  if (finishReason === 'content_filter') return { status: 'incomplete', incomplete: { reason: 'content_filter' } };
  return { status: 'completed', incomplete: null };
}

export function messageItem(id: string, text: string, status: string): JsonObject {
  return { id, type: 'message', status, role: 'assistant', content: [{ type: 'output_text', text, annotations: [], logprobs: [] }] };
}

export function functionCallItem(id: string, callId: string, name: string, args: string, status: string): JsonObject {
  return { id, type: 'function_call', status, arguments: args, call_id: callId, name };
}

/** A chat.completion (its first choice) as a Response object; usage in the Responses shape when it has one. */
export function toResponseFromChatCompletion(completion: JsonObject, options: { model: string; request: JsonObject }): Converted<JsonObject> {
  const warnings: string[] = [];
  const choices = Array.isArray(completion.choices) ? completion.choices : [];
  if (choices.length > 1) warnings.push('choices[1…]');
  const choice = isObject(choices[0]) ? choices[0] : {};
  const message = isObject(choice.message) ? choice.message : {};
  const { status, incomplete } = responseStatus(choice.finish_reason);
  const createdAt = typeof completion.created === 'number' ? completion.created : Math.floor(Date.now() / 1000);
  const response = responseShell(options.request, { id: newResponseId(), createdAt, model: options.model, status });
  response.incomplete_details = incomplete;
  const output: JsonObject[] = [];
  if (typeof message.content === 'string' && message.content.length > 0) output.push(messageItem(newItemId('msg'), message.content, 'completed'));
  if (typeof message.refusal === 'string' && message.refusal.length > 0) {
    output.push({ id: newItemId('msg'), type: 'message', status: 'completed', role: 'assistant', content: [{ type: 'refusal', refusal: message.refusal }] });
  }
  for (const call of Array.isArray(message.tool_calls) ? message.tool_calls : []) {
    if (!isObject(call) || !isObject(call.function)) continue;
    output.push(functionCallItem(newItemId('fc'), String(call.id ?? ''), String(call.function.name ?? ''), String(call.function.arguments ?? ''), 'completed'));
  }
  response.output = output;
  const usage = normalizeUsage(completion.usage);
  response.usage = usage === undefined ? null : toResponsesUsage(usage);
  return { value: response, warnings };
}
