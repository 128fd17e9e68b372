// POST /v1/chat/completions in OpenAI's real wire format, stream and non-stream.
import { allowedPieces, messagesCharacters, tokensForCharacters } from './content';
import { MockError, requireObject, sendJson } from './http-io';
import { writeStream, type StreamPlan } from './sse-writer';
import type { Exchange, MockContext } from './types';

const TOOL_ARGUMENT_PIECES = ['{', '}'];
const TOOL_ARGUMENTS = TOOL_ARGUMENT_PIECES.join('');
const DONE = 'data: [DONE]\n\n';
const MALFORMED = 'data: {not json\n\n';

/** The tool the mock calls, if any: only when tools are offered and the user spoke last. */
function toolToCall(tools: unknown, toolChoice: unknown, messages: unknown[]): string | undefined {
  if (!Array.isArray(tools) || tools.length === 0 || toolChoice === 'none') return undefined;
  const last = messages[messages.length - 1] as { role?: unknown } | undefined;
  if (last?.role !== 'user') return undefined;
  const chosen = (toolChoice as { function?: { name?: unknown } } | undefined)?.function?.name;
  if (typeof chosen === 'string') return chosen;
  const first = tools[0] as { function?: { name?: unknown }; name?: unknown };
  const name = first?.function?.name ?? first?.name;
  return typeof name === 'string' ? name : 'tool';
}

function readChoiceCount(value: unknown): number {
  if (value === undefined || value === null) return 1;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > 128) {
    throw new MockError(400, `${JSON.stringify(value)} is not valid for 'n': expected an integer from 1 to 128.`, 'invalid_value', 'n');
  }
  return value;
}

export async function handleChatCompletions(exchange: Exchange, context: MockContext): Promise<void> {
  const body = requireObject(exchange.body);
  const model = body.model;
  if (typeof model !== 'string' || model.length === 0) {
    throw new MockError(400, 'you must provide a model parameter', undefined, 'model');
  }
  const messages = body.messages;
  if (!Array.isArray(messages) || messages.length === 0) {
    throw new MockError(400, "'messages' is a required property and must be a non-empty array", undefined, 'messages');
  }
  const choiceCount = readChoiceCount(body.n);
  const toolName = toolToCall(body.tools, body.tool_choice, messages);
  const promptTokens = tokensForCharacters(messagesCharacters(messages));
  const sequence = context.nextId();
  const id = `chatcmpl-mock${sequence}`;
  const toolCallId = `call_mock${sequence}`;
  const created = Math.floor(Date.now() / 1000);

  const pieceCount = toolName === undefined
    ? allowedPieces(exchange.fault?.ignoreMaxTokens ? undefined : body.max_completion_tokens ?? body.max_tokens, context.text.pieces.length)
    : 0;
  const finishReason = toolName !== undefined ? 'tool_calls'
    : pieceCount < context.text.pieces.length ? 'length' : 'stop';
  const tokensPerChoice = toolName !== undefined ? tokensForCharacters(toolName.length + TOOL_ARGUMENTS.length) : pieceCount;
  const usage = exchange.fault?.omitUsage ? undefined : {
    prompt_tokens: promptTokens,
    completion_tokens: tokensPerChoice * choiceCount,
    total_tokens: promptTokens + tokensPerChoice * choiceCount,
    prompt_tokens_details: { cached_tokens: 0 },
    completion_tokens_details: { reasoning_tokens: 0 },
  };
  const override = exchange.fault?.usageOverride;
  if (usage && override) {
    const { cached_tokens: cached, ...counts } = override;
    Object.assign(usage, counts);
    if (cached !== undefined) usage.prompt_tokens_details = { cached_tokens: cached };
    usage.total_tokens = usage.prompt_tokens + usage.completion_tokens;
  }

  if (body.stream !== true) {
    const content = pieceCount === context.text.pieces.length
      ? context.text.fullText
      : context.text.pieces.slice(0, pieceCount).join('');
    const choices = [];
    for (let index = 0; index < choiceCount; index += 1) {
      const message = toolName === undefined
        ? { role: 'assistant', content, refusal: null }
        : {
          role: 'assistant', content: null, refusal: null,
          tool_calls: [{ id: toolCallId, type: 'function', function: { name: toolName, arguments: TOOL_ARGUMENTS } }],
        };
      choices.push({ index, message, logprobs: null, finish_reason: finishReason });
    }
    sendJson(exchange.response, 200, {
      id, object: 'chat.completion', created, model, system_fingerprint: 'fp_mock', choices, ...(usage ? { usage } : {}),
    });
    return;
  }

  const streamOptions = body.stream_options as { include_usage?: unknown } | undefined;
  const includeUsage = streamOptions?.include_usage === true && usage !== undefined;
  // Chunks differ only in index, delta and finish reason: plain concatenation, no JSON.stringify per chunk.
  const prefix = `data: {"id":"${id}","object":"chat.completion.chunk","created":${created},"model":${JSON.stringify(model)},`
    + '"system_fingerprint":"fp_mock","choices":[{"index":';
  const suffix = includeUsage ? ',"usage":null}\n\n' : '}\n\n';
  const chunk = (index: number, delta: string, finish: string): string =>
    `${prefix}${index},"delta":${delta},"logprobs":null,"finish_reason":${finish}}]${suffix}`;

  const firstDelta = toolName === undefined
    ? '{"role":"assistant","content":""}'
    : `{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"${toolCallId}","type":"function",`
      + `"function":{"name":${JSON.stringify(toolName)},"arguments":""}}]}`;
  const deltas = toolName === undefined
    ? context.text.jsonPieces.slice(0, pieceCount).map((piece) => `{"content":${piece}}`)
    : TOOL_ARGUMENT_PIECES.map((piece) => `{"tool_calls":[{"index":0,"function":{"arguments":${JSON.stringify(piece)}}}]}`);

  let head = '';
  let tail = '';
  for (let index = 0; index < choiceCount; index += 1) {
    head += chunk(index, firstDelta, 'null');
    tail += chunk(index, '{}', `"${finishReason}"`);
  }
  const content = deltas.map((delta) => {
    let text = '';
    for (let index = 0; index < choiceCount; index += 1) text += chunk(index, delta, 'null');
    return text;
  });
  if (includeUsage) {
    tail += `data: {"id":"${id}","object":"chat.completion.chunk","created":${created},"model":${JSON.stringify(model)},`
      + `"system_fingerprint":"fp_mock","choices":[],"usage":${JSON.stringify(usage)}}\n\n`;
  }
  const plan: StreamPlan = { head, content, tail, terminal: DONE, malformed: MALFORMED };
  await writeStream(exchange, plan, context);
}
