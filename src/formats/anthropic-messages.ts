// Anthropic Messages wire types and request validation for POST /v1/messages. Pure: no I/O.
// Validation checks shape, not policy: model permissions, reasoning rules and billing live elsewhere.
// Unknown block types and unknown top-level fields pass, so a request forwarded to an Anthropic
// channel keeps newer features the gateway does not know yet.
import { badRequest } from '../errors';

/** Every converter returns the value plus the fields it could not carry, named for logs and headers. */
export interface Converted<T> { value: T; warnings: string[] }

export type AnthropicImageSource =
  | { type: 'base64'; media_type: string; data: string }
  | { type: 'url'; url: string }
  | { type: 'file'; file_id: string };

export interface AnthropicTextBlock { type: 'text'; text: string; cache_control?: unknown; citations?: unknown }
export interface AnthropicImageBlock { type: 'image'; source: AnthropicImageSource; cache_control?: unknown }
export interface AnthropicToolUseBlock { type: 'tool_use'; id: string; name: string; input: unknown; cache_control?: unknown }
export interface AnthropicToolResultBlock {
  type: 'tool_result'; tool_use_id: string; content?: string | AnthropicContentBlock[]; is_error?: boolean; cache_control?: unknown;
}
export interface AnthropicThinkingBlock { type: 'thinking'; thinking: string; signature?: string }
export interface AnthropicRedactedThinkingBlock { type: 'redacted_thinking'; data: string }
export interface AnthropicDocumentBlock {
  type: 'document';
  source: { type: string; media_type?: string; data?: string; url?: string; file_id?: string; content?: string | AnthropicContentBlock[] };
  title?: string | null; context?: string | null; cache_control?: unknown;
}
export type AnthropicContentBlock =
  | AnthropicTextBlock | AnthropicImageBlock | AnthropicToolUseBlock | AnthropicToolResultBlock
  | AnthropicThinkingBlock | AnthropicRedactedThinkingBlock | AnthropicDocumentBlock;

export interface AnthropicMessageParam { role: 'user' | 'assistant' | 'system'; content: string | AnthropicContentBlock[] }

export interface AnthropicTool {
  name: string; description?: string; input_schema?: Record<string, unknown>;
  /** absent or 'custom' for client tools; server tools carry a versioned type such as web_search_20250305 */
  type?: string; cache_control?: unknown;
}

export type AnthropicToolChoice =
  | { type: 'auto' | 'any' | 'none'; disable_parallel_tool_use?: boolean }
  | { type: 'tool'; name: string; disable_parallel_tool_use?: boolean };

export interface AnthropicRequest {
  model: string;
  max_tokens: number;
  messages: AnthropicMessageParam[];
  system?: string | AnthropicTextBlock[];
  stop_sequences?: string[];
  temperature?: number;
  top_p?: number;
  top_k?: number;
  stream?: boolean;
  tools?: AnthropicTool[];
  tool_choice?: AnthropicToolChoice;
  metadata?: { user_id?: string | null };
  thinking?: { type: 'enabled'; budget_tokens: number; display?: string | null } | { type: 'disabled' | 'adaptive' | 'between_tools' | (string & {}); display?: string | null };
  output_config?: { effort?: string | null; format?: { type: 'json_schema'; schema: Record<string, unknown> } | null };
  [field: string]: unknown;
}

export interface AnthropicUsage {
  input_tokens: number;
  output_tokens: number;
  cache_creation_input_tokens?: number | null;
  cache_read_input_tokens?: number | null;
}

export interface AnthropicMessage {
  id: string;
  type: 'message';
  role: 'assistant';
  model: string;
  content: AnthropicContentBlock[];
  stop_reason: string | null;
  stop_sequence: string | null;
  usage: AnthropicUsage;
}

export interface MessagesRequestInfo {
  model: string; stream: boolean; maxTokens: number; hasImages: boolean; hasDocuments: boolean; messageCount: number;
  /** bytes of inline base64 images and documents, left out of the request's bytes for the token estimate */
  mediaBytes: number;
  /** image blocks, those inside tool results and document contents included */
  imageCount: number;
  /** output_config.format asks for JSON following a schema */
  jsonSchema: boolean;
}

type Json = Record<string, unknown>;

const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);
// Safe integers only: 1e300 is an integer to JavaScript, but no token count, and it would otherwise
// reach billing as an absurd estimate instead of a 400 naming the field.
const isInteger = (value: unknown): value is number => typeof value === 'number' && Number.isSafeInteger(value);
const fail = (param: string, rule: string): never => { throw badRequest(`${param}: ${rule}`, param); };

function requireString(value: unknown, param: string, nonEmpty = false): string {
  if (value === undefined) fail(param, 'field required');
  if (typeof value !== 'string' || (nonEmpty && value.length === 0)) fail(param, nonEmpty ? 'must be a non-empty string' : 'must be a string');
  return value as string;
}

function checkRange(body: Json, field: string, low: number, high: number): void {
  const value = body[field];
  if (value === undefined || value === null) return;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < low || value > high) {
    fail(field, `must be a number between ${low} and ${high}`);
  }
}

/**
 * What the request carries besides text: the bytes of inline (base64) media, which the token estimate
 * leaves out of the request's bytes, and its images and documents.
 */
interface Tally { mediaBytes: number; images: number; documents: boolean }

function checkImageSource(source: unknown, param: string, tally: Tally): void {
  if (!isObject(source)) fail(param, 'field required');
  const value = source as Json;
  if (value.type === 'base64') {
    requireString(value.media_type, `${param}.media_type`, true);
    tally.mediaBytes += requireString(value.data, `${param}.data`, true).length;
  } else if (value.type === 'url') {
    requireString(value.url, `${param}.url`, true);
  } else if (value.type === 'file') {
    requireString(value.file_id, `${param}.file_id`, true);
  } else {
    fail(`${param}.type`, 'must be base64, url or file');
  }
}

/** Document sources as the SDK types them: base64 (PDF), text, content (blocks), url, file. */
function checkDocumentSource(source: unknown, param: string, tally: Tally): void {
  if (!isObject(source)) fail(param, 'field required');
  const value = source as Json;
  switch (value.type) {
    case 'base64': tally.mediaBytes += requireString(value.data, `${param}.data`, true).length; return;
    case 'text': requireString(value.data, `${param}.data`); return;
    case 'url': requireString(value.url, `${param}.url`, true); return;
    case 'file': requireString(value.file_id, `${param}.file_id`, true); return;
    case 'content':
      if (typeof value.content === 'string') return;
      if (!Array.isArray(value.content)) fail(`${param}.content`, 'must be a string or an array of text and image blocks');
      (value.content as unknown[]).forEach((inner, index) => {
        const block = inner as Json;
        if (!isObject(inner) || (block.type !== 'text' && block.type !== 'image')) fail(`${param}.content.${index}`, 'must be a text or image block');
        if (block.type === 'text') requireString(block.text, `${param}.content.${index}.text`);
        else { checkImageSource(block.source, `${param}.content.${index}.source`, tally); tally.images += 1; }
      });
      return;
    default:
      fail(`${param}.type`, 'must be base64, text, content, url or file');
  }
}

function checkBlock(block: unknown, param: string, role: string, tally: Tally, nested: boolean): void {
  if (!isObject(block)) fail(param, 'must be a content block object');
  const value = block as Json;
  if (typeof value.type !== 'string') fail(`${param}.type`, 'field required');
  switch (value.type) {
    case 'text':
      requireString(value.text, `${param}.text`);
      return;
    case 'image':
      checkImageSource(value.source, `${param}.source`, tally);
      tally.images += 1;
      return;
    case 'tool_use':
      if (role !== 'assistant' || nested) fail(param, 'tool_use blocks belong in assistant messages');
      requireString(value.id, `${param}.id`, true);
      requireString(value.name, `${param}.name`, true);
      if (!isObject(value.input)) fail(`${param}.input`, 'must be an object');
      return;
    case 'tool_result':
      if (role !== 'user' || nested) fail(param, 'tool_result blocks belong in user messages');
      requireString(value.tool_use_id, `${param}.tool_use_id`, true);
      if (value.is_error !== undefined && typeof value.is_error !== 'boolean') fail(`${param}.is_error`, 'must be a boolean');
      if (Array.isArray(value.content)) {
        value.content.forEach((inner, index) => checkBlock(inner, `${param}.content.${index}`, role, tally, true));
      } else if (value.content !== undefined && typeof value.content !== 'string') fail(`${param}.content`, 'must be a string or an array of content blocks');
      return;
    case 'thinking':
      requireString(value.thinking, `${param}.thinking`);
      return;
    case 'document':
      // forwarded as it is; only a multimodal model may take it
      checkDocumentSource(value.source, `${param}.source`, tally);
      tally.documents = true;
      return;
    default:
      // redacted_thinking and newer block types are forwarded as they are.
      return;
  }
}

function checkTools(tools: unknown): void {
  if (!Array.isArray(tools)) return fail('tools', 'must be an array');
  (tools as unknown[]).forEach((tool, index) => {
    const param = `tools.${index}`;
    if (!isObject(tool)) fail(param, 'must be an object');
    const value = tool as Json;
    // server tools carry a versioned type and are the upstream's to check (some have no name)
    const serverTool = typeof value.type === 'string' && value.type !== 'custom';
    if (serverTool) return;
    requireString(value.name, `${param}.name`, true);
    if (value.description !== undefined) requireString(value.description, `${param}.description`);
    if (!isObject(value.input_schema)) fail(`${param}.input_schema`, value.input_schema === undefined ? 'field required' : 'must be an object');
  });
}

function checkToolChoice(choice: unknown): void {
  if (!isObject(choice)) fail('tool_choice', 'must be an object');
  const value = choice as Json;
  if (!['auto', 'any', 'tool', 'none'].includes(value.type as string)) fail('tool_choice.type', 'must be auto, any, tool or none');
  if (value.type === 'tool') requireString(value.name, 'tool_choice.name', true);
  if (value.disable_parallel_tool_use !== undefined && typeof value.disable_parallel_tool_use !== 'boolean') {
    fail('tool_choice.disable_parallel_tool_use', 'must be a boolean');
  }
}

/**
 * Thinking configs: enabled (with a budget), disabled, adaptive, between_tools, and the types to
 * come, which are the upstream's to accept; only the budget the gateway itself reads is checked.
 */
function checkThinking(thinking: unknown): void {
  if (!isObject(thinking)) fail('thinking', 'must be an object');
  const value = thinking as Json;
  if (typeof value.type !== 'string' || value.type === '') fail('thinking.type', 'must be a string such as adaptive, enabled or disabled');
  if (value.type !== 'enabled') return;
  if (!isInteger(value.budget_tokens) || (value.budget_tokens as number) < 1) {
    fail('thinking.budget_tokens', value.budget_tokens === undefined ? 'field required' : 'must be a positive integer');
  }
}

/** output_config: `format` (a JSON schema the answer follows) is read by translations; `effort` and the rest pass. */
function checkOutputConfig(config: unknown): void {
  if (!isObject(config)) fail('output_config', 'must be an object');
  const format = (config as Json).format;
  if (format === undefined || format === null) return;
  if (!isObject(format)) fail('output_config.format', 'must be an object');
  const value = format as Json;
  if (value.type !== 'json_schema') fail('output_config.format.type', 'must be json_schema');
  if (!isObject(value.schema)) fail('output_config.format.schema', value.schema === undefined ? 'field required' : 'must be an object');
}

function checkSystem(system: unknown, param = 'system'): void {
  if (typeof system === 'string') return;
  if (!Array.isArray(system)) fail(param, 'must be a string or an array of text blocks');
  (system as unknown[]).forEach((block, index) => {
    if (!isObject(block) || block.type !== 'text') fail(`${param}.${index}`, 'must be a text block');
    requireString((block as Json).text, `${param}.${index}.text`);
  });
}

export function validateMessagesRequest(body: unknown): MessagesRequestInfo {
  if (!isObject(body)) return fail('body', 'must be a JSON object');
  const request = body as Json;
  const model = requireString(request.model, 'model', true);

  if (request.max_tokens === undefined) fail('max_tokens', 'field required');
  // 0 is valid upstream: it warms the prompt cache without generating anything
  if (!isInteger(request.max_tokens) || (request.max_tokens as number) < 0) fail('max_tokens', 'must be a non-negative integer');

  if (request.messages === undefined) fail('messages', 'field required');
  if (!Array.isArray(request.messages) || request.messages.length === 0) fail('messages', 'must be a non-empty array');
  const messages = request.messages as unknown[];
  const tally: Tally = { mediaBytes: 0, images: 0, documents: false };
  messages.forEach((message, index) => {
    const param = `messages.${index}`;
    if (!isObject(message)) fail(param, 'must be an object');
    const { role, content } = message as Json;
    if (role === 'system') {
      // a system turn inside messages (current clients send them): text only, as the top-level system
      if (typeof content === 'string') return;
      checkSystem(content, `${param}.content`);
      return;
    }
    if (role !== 'user' && role !== 'assistant') fail(`${param}.role`, 'must be user, assistant or system');
    // As the Anthropic API: only a final assistant turn (a prefill) may be empty.
    const emptyAllowed = role === 'assistant' && index === messages.length - 1;
    if ((content === '' || (Array.isArray(content) && content.length === 0)) && !emptyAllowed) fail(`${param}.content`, 'must not be empty');
    if (Array.isArray(content)) {
      content.forEach((block, blockIndex) => checkBlock(block, `${param}.content.${blockIndex}`, role as string, tally, false));
    } else if (typeof content !== 'string') fail(`${param}.content`, content === undefined ? 'field required' : 'must be a string or an array of content blocks');
  });

  if (request.system !== undefined) checkSystem(request.system);
  if (request.stop_sequences !== undefined) {
    if (!Array.isArray(request.stop_sequences) || !request.stop_sequences.every((item) => typeof item === 'string')) {
      fail('stop_sequences', 'must be an array of strings');
    }
  }
  checkRange(request, 'temperature', 0, 1);
  checkRange(request, 'top_p', 0, 1);
  if (request.top_k !== undefined && (!isInteger(request.top_k) || (request.top_k as number) < 0)) {
    fail('top_k', 'must be a non-negative integer');
  }
  if (request.stream !== undefined && typeof request.stream !== 'boolean') fail('stream', 'must be a boolean');
  if (request.tools !== undefined) checkTools(request.tools);
  if (request.tool_choice !== undefined) checkToolChoice(request.tool_choice);
  if (request.metadata !== undefined) {
    if (!isObject(request.metadata)) fail('metadata', 'must be an object');
    const userId = (request.metadata as Json).user_id;
    if (userId !== undefined && userId !== null && typeof userId !== 'string') fail('metadata.user_id', 'must be a string');
  }
  if (request.thinking !== undefined && request.thinking !== null) checkThinking(request.thinking);
  if (request.output_config !== undefined && request.output_config !== null) checkOutputConfig(request.output_config);

  return {
    model,
    stream: request.stream === true,
    maxTokens: request.max_tokens as number,
    hasImages: tally.images > 0,
    imageCount: tally.images,
    hasDocuments: tally.documents,
    mediaBytes: tally.mediaBytes,
    messageCount: messages.length,
    jsonSchema: isObject(request.output_config) && isObject((request.output_config as Json).format),
  };
}
