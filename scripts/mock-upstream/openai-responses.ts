// POST /v1/responses in OpenAI's real wire format, stream and not: a Response object whose output
// is one assistant message (the mock's content pieces, cut at max_output_tokens) or, when function
// tools are offered and the last input item is a user message, one function_call; the stream is the
// response.* events with sequence numbers, response.completed (or .incomplete) last, with usage.
// Prompt tokens: ceil(characters of instructions and input text / 4).
import { allowedPieces, textCharacters, tokensForCharacters } from './content';
import { MockError, requireObject, sendJson } from './http-io';
import { writeStream, type StreamPlan } from './sse-writer';
import type { Exchange, MockContext } from './types';

type Json = Record<string, unknown>;
const TOOL_ARGUMENT_PIECES = ['{"input":', '"mock"}'];

function inputCharacters(body: Json): number {
  let total = typeof body.instructions === 'string' ? body.instructions.length : 0;
  if (typeof body.input === 'string') return total + body.input.length;
  if (!Array.isArray(body.input)) throw new MockError(400, "'input' must be a string or an array of input items", 'invalid_value', 'input');
  for (const item of body.input as Json[]) {
    if (typeof item !== 'object' || item === null) continue;
    if (typeof item.content === 'string' || Array.isArray(item.content)) total += textCharacters(item.content);
    if (typeof item.output === 'string') total += item.output.length;
    if (typeof item.arguments === 'string') total += item.arguments.length;
  }
  return total;
}

function toolToCall(body: Json): string | undefined {
  if (!Array.isArray(body.tools) || body.tools.length === 0 || body.tool_choice === 'none') return undefined;
  const last = Array.isArray(body.input) ? body.input[body.input.length - 1] as Json | undefined : { role: 'user' };
  if (last?.role !== 'user') return undefined;
  const tool = (body.tools as Json[]).find((candidate) => candidate.type === 'function');
  return typeof tool?.name === 'string' ? tool.name : undefined;
}

export async function handleResponses(exchange: Exchange, context: MockContext): Promise<void> {
  const body = requireObject(exchange.body);
  if (typeof body.model !== 'string' || body.model.length === 0) throw new MockError(400, 'Missing required parameter: model', 'missing_required_parameter', 'model');
  const promptTokens = tokensForCharacters(inputCharacters(body));
  const toolName = toolToCall(body);
  const sequence = context.nextId();
  const responseId = `resp_mock${sequence}`;
  const itemId = toolName === undefined ? `msg_mock${sequence}` : `fc_mock${sequence}`;
  const callId = `call_mock${sequence}`;
  const pieces = toolName === undefined
    ? context.text.pieces.slice(0, allowedPieces(exchange.fault?.ignoreMaxTokens ? undefined : body.max_output_tokens, context.text.pieces.length))
    : TOOL_ARGUMENT_PIECES;
  const incomplete = toolName === undefined && pieces.length < context.text.pieces.length;
  const text = pieces.join('');
  const outputTokens = toolName === undefined ? pieces.length : tokensForCharacters(text.length);
  const usage = exchange.fault?.omitUsage ? null : {
    input_tokens: exchange.fault?.usageOverride?.prompt_tokens ?? promptTokens, input_tokens_details: { cached_tokens: exchange.fault?.usageOverride?.cached_tokens ?? 0 },
    output_tokens: exchange.fault?.usageOverride?.completion_tokens ?? outputTokens, output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: 0,
  };
  if (usage) usage.total_tokens = usage.input_tokens + usage.output_tokens;
  const item = (status: string, content: string): Json => (toolName === undefined
    ? { id: itemId, type: 'message', status, role: 'assistant', content: status === 'in_progress' ? [] : [{ type: 'output_text', text: content, annotations: [], logprobs: [] }] }
    : { id: itemId, type: 'function_call', status, arguments: content, call_id: callId, name: toolName });
  const response = (status: string, output: Json[], withUsage: boolean): Json => ({
    id: responseId, object: 'response', created_at: Math.floor(Date.now() / 1000), status, background: false, error: null,
    incomplete_details: status === 'incomplete' ? { reason: 'max_output_tokens' } : null, instructions: body.instructions ?? null,
    max_output_tokens: body.max_output_tokens ?? null, model: body.model, output, parallel_tool_calls: true, previous_response_id: body.previous_response_id ?? null,
    reasoning: { effort: null, summary: null }, store: body.store ?? true, temperature: body.temperature ?? 1, text: body.text ?? { format: { type: 'text' } },
    tool_choice: body.tool_choice ?? 'auto', tools: body.tools ?? [], top_p: body.top_p ?? 1, truncation: 'disabled',
    usage: withUsage ? usage : null, user: null, metadata: {},
  });
  const finalStatus = incomplete ? 'incomplete' : 'completed';

  if (body.stream !== true) {
    sendJson(exchange.response, 200, response(finalStatus, [item('completed', text)], true));
    return;
  }
  let number = 0;
  const event = (type: string, fields: Json) => `event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: number++, ...fields })}\n\n`;
  let head = event('response.created', { response: response('in_progress', [], false) })
    + event('response.in_progress', { response: response('in_progress', [], false) })
    + event('response.output_item.added', { output_index: 0, item: item('in_progress', '') });
  if (toolName === undefined) {
    head += event('response.content_part.added', { item_id: itemId, output_index: 0, content_index: 0, part: { type: 'output_text', text: '', annotations: [], logprobs: [] } });
  }
  const content = pieces.map((piece) => (toolName === undefined
    ? event('response.output_text.delta', { item_id: itemId, output_index: 0, content_index: 0, delta: piece, logprobs: [] })
    : event('response.function_call_arguments.delta', { item_id: itemId, output_index: 0, delta: piece })));
  let tail = '';
  if (toolName === undefined) {
    tail += event('response.output_text.done', { item_id: itemId, output_index: 0, content_index: 0, text, logprobs: [] })
      + event('response.content_part.done', { item_id: itemId, output_index: 0, content_index: 0, part: { type: 'output_text', text, annotations: [], logprobs: [] } });
  } else {
    tail += event('response.function_call_arguments.done', { item_id: itemId, output_index: 0, name: toolName, arguments: text });
  }
  tail += event('response.output_item.done', { output_index: 0, item: item('completed', text) });
  const terminal = event(`response.${finalStatus}`, { response: response(finalStatus, [item('completed', text)], true) });
  const plan: StreamPlan = { head, content, tail, terminal, malformed: 'event: response.output_text.delta\ndata: {not json\n\n' };
  await writeStream(exchange, plan, context);
}
