// POST /v1/messages in Anthropic's real wire format, stream and non-stream.
import { allowedPieces, messagesCharacters, textCharacters, tokensForCharacters } from './content';
import { MockError, requireObject, sendJson } from './http-io';
import { writeStream, type StreamPlan } from './sse-writer';
import type { Exchange, MockContext } from './types';

const TOOL_ARGUMENT_PIECES = ['{', '}'];
const TOOL_ARGUMENTS = TOOL_ARGUMENT_PIECES.join('');
const STOP = 'event: message_stop\ndata: {"type":"message_stop"}\n\n';
// Named, because the SDK skips events without a name and the fault must reach its JSON parser.
const MALFORMED = 'event: content_block_delta\ndata: {not json\n\n';

const event = (name: string, data: string): string => `event: ${name}\ndata: ${data}\n\n`;

function hasToolResult(content: unknown): boolean {
  return Array.isArray(content) && content.some((block) => (block as { type?: unknown } | null)?.type === 'tool_result');
}

/** The tool the mock calls, if any: only when tools are offered and the user's last turn is not a tool result. */
function toolToCall(tools: unknown, toolChoice: unknown, messages: unknown[]): string | undefined {
  if (!Array.isArray(tools) || tools.length === 0) return undefined;
  const choice = toolChoice as { type?: unknown; name?: unknown } | undefined;
  if (choice?.type === 'none') return undefined;
  const last = messages[messages.length - 1] as { role?: unknown; content?: unknown } | undefined;
  if (last?.role !== 'user' || hasToolResult(last.content)) return undefined;
  if (choice?.type === 'tool' && typeof choice.name === 'string') return choice.name;
  const name = (tools[0] as { name?: unknown } | null)?.name;
  return typeof name === 'string' ? name : 'tool';
}

export async function handleMessages(exchange: Exchange, context: MockContext): Promise<void> {
  if (exchange.request.headers['anthropic-version'] === undefined) {
    throw new MockError(400, 'anthropic-version: header is required');
  }
  const body = requireObject(exchange.body);
  const model = body.model;
  if (typeof model !== 'string' || model.length === 0) throw new MockError(400, 'model: Field required');
  // The real API refuses a request without max_tokens; a gateway that forgets it must fail here too.
  // 0 is valid (it warms the prompt cache and generates nothing).
  const maxTokens = body.max_tokens;
  if (typeof maxTokens !== 'number' || !Number.isInteger(maxTokens) || maxTokens < 0) {
    throw new MockError(400, 'max_tokens: Field required and must be a non-negative integer');
  }
  const messages = body.messages;
  if (!Array.isArray(messages) || messages.length === 0) throw new MockError(400, 'messages: Field required');

  const toolName = toolToCall(body.tools, body.tool_choice, messages);
  const override = exchange.fault?.usageOverride;
  const inputTokens = override?.prompt_tokens ?? tokensForCharacters(messagesCharacters(messages) + textCharacters(body.system));
  const cacheReadTokens = override?.cached_tokens ?? 0;
  const sequence = context.nextId();
  const id = `msg_mock${sequence}`;
  const toolUseId = `toolu_mock${sequence}`;
  const pieceCount = toolName === undefined ? allowedPieces(exchange.fault?.ignoreMaxTokens ? undefined : maxTokens, context.text.pieces.length) : 0;
  const stopReason = toolName !== undefined ? 'tool_use'
    : pieceCount < context.text.pieces.length ? 'max_tokens' : 'end_turn';
  const outputTokens = override?.completion_tokens ?? (toolName !== undefined ? tokensForCharacters(toolName.length + TOOL_ARGUMENTS.length) : pieceCount);
  const omitUsage = exchange.fault?.omitUsage === true;

  if (body.stream !== true) {
    const block = toolName === undefined
      ? {
        type: 'text',
        text: pieceCount === context.text.pieces.length ? context.text.fullText : context.text.pieces.slice(0, pieceCount).join(''),
      }
      : { type: 'tool_use', id: toolUseId, name: toolName, input: {} };
    sendJson(exchange.response, 200, {
      id, type: 'message', role: 'assistant', model, content: [block], stop_reason: stopReason, stop_sequence: null,
      ...(omitUsage ? {} : {
        usage: { input_tokens: inputTokens, output_tokens: outputTokens, cache_creation_input_tokens: 0, cache_read_input_tokens: cacheReadTokens },
      }),
    });
    return;
  }

  const startUsage = omitUsage ? ''
    : `,"usage":{"input_tokens":${inputTokens},"output_tokens":1,"cache_creation_input_tokens":0,"cache_read_input_tokens":${cacheReadTokens}}`;
  const blockStart = toolName === undefined
    ? '{"type":"text","text":""}'
    : `{"type":"tool_use","id":"${toolUseId}","name":${JSON.stringify(toolName)},"input":{}}`;
  const head = event('message_start', `{"type":"message_start","message":{"id":"${id}","type":"message","role":"assistant",`
      + `"model":${JSON.stringify(model)},"content":[],"stop_reason":null,"stop_sequence":null${startUsage}}}`)
    + event('content_block_start', `{"type":"content_block_start","index":0,"content_block":${blockStart}}`)
    + event('ping', '{"type":"ping"}');
  const content = toolName === undefined
    ? context.text.jsonPieces.slice(0, pieceCount).map((piece) =>
      event('content_block_delta', `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":${piece}}}`))
    : TOOL_ARGUMENT_PIECES.map((piece) => event('content_block_delta',
      `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":${JSON.stringify(piece)}}}`));
  const tail = event('content_block_stop', '{"type":"content_block_stop","index":0}')
    + event('message_delta', `{"type":"message_delta","delta":{"stop_reason":"${stopReason}","stop_sequence":null}`
      + (omitUsage ? '}' : `,"usage":{"output_tokens":${outputTokens}}}`));
  const plan: StreamPlan = { head, content, tail, terminal: STOP, malformed: MALFORMED };
  await writeStream(exchange, plan, context);
}
