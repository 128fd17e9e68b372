// OpenAI chat dialect → Anthropic Messages (for OpenAI clients served by an Anthropic channel):
// the request goes out as Anthropic, the answer comes back as OpenAI. Pure: no I/O.
import type {
  AnthropicContentBlock, AnthropicMessage, AnthropicMessageParam, AnthropicRequest, AnthropicTool,
  AnthropicToolChoice, AnthropicToolUseBlock, AnthropicUsage, Converted,
} from './anthropic-messages';
import { parseToolArguments } from './anthropic-to-openai';
import { toOpenAIFinishReason } from './map-stop-reason';
import { badRequest } from '../errors';
import { isObject } from './json-value';
import { refuseMalformedToolLists } from './openai-chat';

// ---- OpenAI chat wire types (the subset both directions read and write) ----------------------

export type OpenAIContentPart =
  | { type: 'text'; text: string }
  | { type: 'image_url'; image_url: { url: string; detail?: string } }
  | { type: 'refusal'; refusal: string }
  | { type: 'file'; file: { file_data?: string; file_id?: string; filename?: string } }
  | { type: 'input_audio'; input_audio: unknown };

export interface OpenAIToolCall { id: string; type: 'function'; function: { name: string; arguments: string } }

export interface OpenAIChatMessage {
  role: 'system' | 'developer' | 'user' | 'assistant' | 'tool' | 'function';
  content?: string | OpenAIContentPart[] | null;
  name?: string;
  tool_calls?: OpenAIToolCall[];
  tool_call_id?: string;
  function_call?: { name: string; arguments: string };
  /** reasoning text as DeepSeek-style compatible servers send it */
  reasoning_content?: string;
  refusal?: string | null;
}

export interface OpenAIFunction { name: string; description?: string; parameters?: Record<string, unknown>; strict?: boolean }
export interface OpenAITool { type: 'function'; function: OpenAIFunction }

export type OpenAIToolChoice = 'auto' | 'none' | 'required' | { type: 'function'; function: { name: string } };

export interface OpenAIChatRequest {
  model: string;
  messages: OpenAIChatMessage[];
  max_tokens?: number; max_completion_tokens?: number; temperature?: number; top_p?: number; n?: number;
  stop?: string | string[] | null;
  stream?: boolean; stream_options?: { include_usage?: boolean };
  user?: string;
  tools?: OpenAITool[]; tool_choice?: OpenAIToolChoice; parallel_tool_calls?: boolean;
  /** legacy function calling */
  functions?: OpenAIFunction[]; function_call?: 'auto' | 'none' | { name: string };
  [field: string]: unknown;
}

export interface OpenAIUsage {
  prompt_tokens: number; completion_tokens: number; total_tokens: number;
  prompt_tokens_details?: { cached_tokens?: number } | null;
}

export interface OpenAIChatCompletion {
  id: string; object: 'chat.completion'; created: number; model: string;
  choices: Array<{ index: number; message: OpenAIChatMessage; finish_reason: string | null; logprobs?: unknown }>;
  usage?: OpenAIUsage;
}

export interface OpenAIChunkDelta {
  role?: 'assistant';
  content?: string | null;
  reasoning_content?: string | null;
  reasoning?: string | null;
  refusal?: string | null;
  tool_calls?: Array<{ index?: number; id?: string; type?: 'function'; function?: { name?: string; arguments?: string } }>;
}

export interface OpenAIChatChunk {
  id: string; object: 'chat.completion.chunk'; created: number; model: string;
  choices: Array<{ index: number; delta: OpenAIChunkDelta; finish_reason: string | null; logprobs?: unknown }>;
  usage?: OpenAIUsage | null;
}

// Fields this converter reads; every other field of the request is named in a warning.
const HANDLED_FIELDS = new Set([
  'model', 'messages', 'max_tokens', 'max_completion_tokens', 'temperature', 'top_p', 'stop', 'stream', 'stream_options',
  'n', 'user', 'tools', 'tool_choice', 'parallel_tool_calls', 'functions', 'function_call', 'response_format', 'reasoning_effort',
]);

const DATA_URI = /^data:([^;,]+);base64,(.*)$/s;

/** Text of a system/tool message: a string or text parts; other parts cannot be carried. */
function plainText(content: OpenAIChatMessage['content'], param: string, warnings: string[]): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  const texts: string[] = [];
  content.forEach((part, index) => {
    if (part.type === 'text') texts.push(part.text);
    else warnings.push(`${param}.content.${index}: ${part.type} part dropped (text only here)`);
  });
  return texts.join('\n');
}

function userPart(part: OpenAIContentPart, param: string, warnings: string[]): AnthropicContentBlock | undefined {
  if (part.type === 'text') return { type: 'text', text: part.text };
  if (part.type === 'image_url') {
    const url = part.image_url?.url ?? '';
    if (part.image_url?.detail && part.image_url.detail !== 'auto') warnings.push(`${param}.image_url.detail: no Anthropic counterpart, dropped`);
    const dataUri = DATA_URI.exec(url);
    if (dataUri) return { type: 'image', source: { type: 'base64', media_type: dataUri[1], data: dataUri[2] } };
    if (/^https?:\/\//i.test(url)) return { type: 'image', source: { type: 'url', url } };
    warnings.push(`${param}: image URL is neither http(s) nor a base64 data URI; dropped`);
    return undefined;
  }
  if (part.type === 'file') {
    const dataUri = DATA_URI.exec(part.file?.file_data ?? '');
    if (dataUri && dataUri[1] === 'application/pdf') {
      return { type: 'document', source: { type: 'base64', media_type: dataUri[1], data: dataUri[2] }, title: part.file?.filename };
    }
  }
  warnings.push(`${param}: ${part.type} part has no Anthropic counterpart, dropped`);
  return undefined;
}

function assistantBlocks(message: OpenAIChatMessage, param: string, warnings: string[], functionCalls: AnthropicToolUseBlock[]): AnthropicContentBlock[] {
  const blocks: AnthropicContentBlock[] = [];
  const addText = (text: string | undefined) => { if (text) blocks.push({ type: 'text', text }); };
  if (typeof message.content === 'string') addText(message.content);
  else if (Array.isArray(message.content)) {
    message.content.forEach((part, index) => {
      if (part.type === 'text') addText(part.text);
      else if (part.type === 'refusal') addText(part.refusal);
      else warnings.push(`${param}.content.${index}: ${part.type} part dropped`);
    });
  }
  if (message.reasoning_content) warnings.push(`${param}.reasoning_content: Anthropic needs signed thinking blocks; dropped`);
  (message.tool_calls ?? []).forEach((call, index) => {
    if (call.type !== undefined && call.type !== 'function') {
      warnings.push(`${param}.tool_calls.${index}: ${call.type} tool call dropped`);
      return;
    }
    blocks.push({
      type: 'tool_use', id: call.id, name: call.function.name,
      input: parseToolArguments(call.function.arguments, `${param}.tool_calls.${index}`, warnings),
    });
  });
  if (message.function_call) {
    const block: AnthropicToolUseBlock = {
      type: 'tool_use', id: `call_legacy_${functionCalls.length}`, name: message.function_call.name,
      input: parseToolArguments(message.function_call.arguments, `${param}.function_call`, warnings),
    };
    functionCalls.push(block);
    blocks.push(block);
  }
  return blocks;
}

function convertMessages(body: OpenAIChatRequest, warnings: string[]): { system: string[]; messages: AnthropicMessageParam[] } {
  const system: string[] = [];
  const messages: AnthropicMessageParam[] = [];
  const functionCalls: AnthropicToolUseBlock[] = [];
  // Consecutive turns of one role are merged: tool results then text form one user turn, as Anthropic expects.
  const append = (role: 'user' | 'assistant', content: string | AnthropicContentBlock[]) => {
    if (content.length === 0) return;
    const last = messages[messages.length - 1];
    if (!last || last.role !== role) { messages.push({ role, content }); return; }
    const asBlocks = (value: string | AnthropicContentBlock[]): AnthropicContentBlock[] =>
      typeof value === 'string' ? [{ type: 'text', text: value }] : value;
    last.content = [...asBlocks(last.content), ...asBlocks(content)];
  };
  (body.messages ?? []).forEach((message, index) => {
    const param = `messages.${index}`;
    switch (message.role) {
      case 'system':
      case 'developer': {
        if (messages.length > 0) warnings.push(`${param}: ${message.role} message moved into the system prompt`);
        const text = plainText(message.content, param, warnings);
        if (text) system.push(text);
        return;
      }
      case 'user':
        if (typeof message.content === 'string') append('user', message.content);
        else if (Array.isArray(message.content)) {
          const blocks = message.content.map((part, partIndex) => userPart(part, `${param}.content.${partIndex}`, warnings));
          append('user', blocks.filter((block): block is AnthropicContentBlock => block !== undefined));
        }
        return;
      case 'assistant':
        append('assistant', assistantBlocks(message, param, warnings, functionCalls));
        return;
      case 'tool':
        append('user', [{ type: 'tool_result', tool_use_id: message.tool_call_id ?? '', content: plainText(message.content, param, warnings) }]);
        return;
      case 'function': {
        // Legacy function results carry only the name: answer the latest call of that name.
        const call = [...functionCalls].reverse().find((candidate) => candidate.name === message.name);
        if (!call) { warnings.push(`${param}: function result without a matching function_call; dropped`); return; }
        append('user', [{ type: 'tool_result', tool_use_id: call.id, content: plainText(message.content, param, warnings) }]);
        return;
      }
      default:
        warnings.push(`${param}: role ${String(message.role)} has no Anthropic counterpart; dropped`);
    }
  });
  return { system, messages };
}

function convertTools(tools: OpenAITool[], warnings: string[]): AnthropicTool[] {
  const result: AnthropicTool[] = [];
  tools.forEach((tool, index) => {
    if (tool.type !== 'function' || !tool.function) { warnings.push(`tools.${index}: ${tool.type} tool has no Anthropic counterpart; dropped`); return; }
    if (tool.function.strict !== undefined) warnings.push(`tools.${index}.function.strict: no Anthropic counterpart, dropped`);
    result.push({
      name: tool.function.name,
      ...(tool.function.description !== undefined ? { description: tool.function.description } : {}),
      input_schema: tool.function.parameters ?? { type: 'object', properties: {} },
    });
  });
  return result;
}

function convertToolChoice(choice: unknown, warnings: string[]): AnthropicToolChoice | undefined {
  if (choice === 'auto') return { type: 'auto' };
  if (choice === 'required') return { type: 'any' };
  if (choice === 'none') return { type: 'none' };
  const named = choice as { type?: string; function?: { name?: string }; name?: string } | null;
  const name = named?.function?.name ?? named?.name;
  if (typeof name === 'string') return { type: 'tool', name };
  warnings.push('tool_choice: no Anthropic counterpart, dropped');
  return undefined;
}

/** reasoning_effort → a thinking budget (Anthropic requires at least 1,024 and less than max_tokens). */
const THINKING_BUDGETS: Record<string, number> = { low: 1024, medium: 4096, high: 16_384, xhigh: 32_768 };
const MIN_THINKING_BUDGET = 1024;

/** n > 1 cannot be honoured by an Anthropic channel: a 400 rather than one choice where several were asked for. */
function refuseChoices(n: unknown): void {
  if (typeof n === 'number' && n > 1) {
    throw badRequest(`n: this model is served by an Anthropic channel, which returns one choice; ${n} were asked for (send n: 1 or call ${n} times)`, 'n', 'unsupported_value');
  }
}

/** A called function (`tool_calls[].function`, `function_call`): a string name, arguments a string or absent. */
function checkCalledFunction(value: unknown, param: string): void {
  if (!isObject(value)) throw badRequest(`${param} must be an object with a string name and string arguments`, param);
  if (typeof value.name !== 'string') throw badRequest(`${param}.name must be a string`, `${param}.name`);
  if (value.arguments != null && typeof value.arguments !== 'string') {
    throw badRequest(`${param}.arguments must be a string (the arguments as JSON text)`, `${param}.arguments`);
  }
}

/**
 * The tool fields the translation reads, in the shapes it needs: a 400 naming the field for one it
 * cannot carry, where OpenAI would refuse it too, rather than a TypeError mid-translation.
 */
function refuseUntranslatableTools(body: OpenAIChatRequest): void {
  refuseMalformedToolLists(body);
  (body.messages ?? []).forEach((message, index) => {
    const calls: unknown = message.tool_calls;
    if (calls != null) {
      if (!Array.isArray(calls)) throw badRequest(`messages[${index}].tool_calls must be an array of tool calls`, `messages[${index}].tool_calls`);
      calls.forEach((call, callIndex) => {
        const param = `messages[${index}].tool_calls[${callIndex}]`;
        if (!isObject(call)) throw badRequest(`${param} must be an object`, param);
        if (call.type === undefined || call.type === 'function') checkCalledFunction(call.function, `${param}.function`);
      });
    }
    if (message.function_call != null) checkCalledFunction(message.function_call, `messages[${index}].function_call`);
  });
}

export function toAnthropicRequest(body: OpenAIChatRequest, options: { model: string; defaultMaxTokens: number; reasoning?: boolean }): Converted<AnthropicRequest> {
  refuseChoices(body.n);
  refuseUntranslatableTools(body);
  const warnings: string[] = [];
  const { system, messages } = convertMessages(body, warnings);
  const request: AnthropicRequest = {
    model: options.model,
    max_tokens: body.max_completion_tokens ?? body.max_tokens ?? options.defaultMaxTokens,
    messages,
  };
  if (system.length > 0) request.system = system.join('\n');
  if (body.stop !== undefined && body.stop !== null) request.stop_sequences = typeof body.stop === 'string' ? [body.stop] : body.stop;
  if (typeof body.temperature === 'number') {
    if (body.temperature > 1) warnings.push(`temperature: ${body.temperature} is above the Anthropic maximum; sent as 1`);
    request.temperature = Math.min(body.temperature, 1);
  }
  if (typeof body.top_p === 'number') request.top_p = body.top_p;
  if (typeof body.user === 'string') request.metadata = { user_id: body.user };
  if (body.stream === true) request.stream = true;
  const format = body.response_format as { type?: string; json_schema?: { schema?: unknown } } | undefined;
  if (format?.type === 'json_schema' && typeof format.json_schema?.schema === 'object' && format.json_schema.schema !== null) {
    request.output_config = { format: { type: 'json_schema', schema: format.json_schema.schema as Record<string, unknown> } };
  } else if (format != null && format.type !== 'text') warnings.push(`response_format: ${String(format.type)} has no Anthropic counterpart, dropped`);
  const effort = body.reasoning_effort;
  if (typeof effort === 'string' && effort !== 'none' && effort !== 'minimal') {
    const budget = Math.min(THINKING_BUDGETS[effort] ?? THINKING_BUDGETS.medium, request.max_tokens - 1);
    if (budget < MIN_THINKING_BUDGET) warnings.push(`reasoning_effort: max_tokens ${request.max_tokens} leaves no room for a thinking budget of ${MIN_THINKING_BUDGET}; dropped`);
    else {
      request.thinking = { type: 'enabled', budget_tokens: budget };
      // Anthropic refuses sampling parameters other than the defaults while thinking
      for (const field of ['temperature', 'top_p'] as const) {
        if (request[field] !== undefined) { warnings.push(`${field}: not accepted with thinking; dropped`); delete request[field]; }
      }
    }
  }

  const tools = [...(body.tools ?? []), ...(body.functions ?? []).map((fn) => ({ type: 'function', function: fn }) as OpenAITool)];
  if (tools.length > 0) request.tools = convertTools(tools, warnings);
  // Anthropic rejects tool_choice without tools; without tools "none" is what happens anyway.
  const choice = body.tool_choice ?? body.function_call;
  if (choice !== undefined && choice !== null && request.tools?.length) request.tool_choice = convertToolChoice(choice, warnings);
  if (body.parallel_tool_calls === false && request.tools?.length) {
    request.tool_choice = { ...(request.tool_choice ?? { type: 'auto' }), disable_parallel_tool_use: true };
  }
  if (request.tool_choice === undefined) delete request.tool_choice;

  for (const field of Object.keys(body)) {
    if (!HANDLED_FIELDS.has(field) && body[field] !== undefined && body[field] !== null) {
      warnings.push(`${field}: no Anthropic counterpart, dropped`);
    }
  }
  return { value: request, warnings };
}

export function toOpenAIUsage(usage: AnthropicUsage | undefined): OpenAIUsage {
  const cacheRead = usage?.cache_read_input_tokens ?? 0;
  const prompt = (usage?.input_tokens ?? 0) + cacheRead + (usage?.cache_creation_input_tokens ?? 0);
  const completion = usage?.output_tokens ?? 0;
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion, prompt_tokens_details: { cached_tokens: cacheRead } };
}

/** Whether an Anthropic usage object reports any count (an upstream that omits usage reports none). */
export function reportsUsage(usage: unknown): boolean {
  if (typeof usage !== 'object' || usage === null) return false;
  const counts = usage as Record<string, unknown>;
  return ['input_tokens', 'output_tokens', 'cache_read_input_tokens', 'cache_creation_input_tokens']
    .some((field) => typeof counts[field] === 'number' && (counts[field] as number) > 0);
}

export function toOpenAIChatCompletion(message: AnthropicMessage, options: { model: string }): Converted<OpenAIChatCompletion> {
  const warnings: string[] = [];
  let text = '';
  let reasoning = '';
  const toolCalls: OpenAIToolCall[] = [];
  (message.content ?? []).forEach((block, index) => {
    switch (block.type) {
      case 'text': text += block.text; return;
      case 'thinking': reasoning += block.thinking; return;
      case 'tool_use':
        toolCalls.push({ id: block.id, type: 'function', function: { name: block.name, arguments: JSON.stringify(block.input ?? {}) } });
        return;
      default:
        warnings.push(`content.${index}: ${block.type} block has no OpenAI counterpart, dropped`);
    }
  });
  const reply: OpenAIChatMessage = { role: 'assistant', content: text === '' && toolCalls.length > 0 ? null : text };
  if (reasoning) reply.reasoning_content = reasoning;
  if (toolCalls.length > 0) reply.tool_calls = toolCalls;
  return {
    value: {
      id: `chatcmpl-${message.id}`,
      object: 'chat.completion',
      created: Math.floor(Date.now() / 1000),
      model: options.model,
      choices: [{ index: 0, message: reply, finish_reason: toOpenAIFinishReason(message.stop_reason), logprobs: null }],
      // without the upstream's counts the answer has no usage: the relay estimates, bills and shows that
      ...(reportsUsage(message.usage) ? { usage: toOpenAIUsage(message.usage) } : {}),
    },
    warnings,
  };
}
