// POST /v1/completions (legacy text completions) in OpenAI's real wire format, stream and not:
// `text_completion` objects, choices per prompt × n, the usage chunk (`choices: []`) when
// stream_options.include_usage asks for it, then [DONE]. Tokens as for chat (content.ts).
import { allowedPieces, tokensForCharacters } from './content';
import { MockError, requireObject, sendJson } from './http-io';
import { writeStream, type StreamPlan } from './sse-writer';
import type { Exchange, MockContext } from './types';

function promptCharacters(prompt: unknown): { prompts: number; characters: number } {
  if (typeof prompt === 'string') return { prompts: 1, characters: prompt.length };
  if (Array.isArray(prompt) && prompt.length > 0) {
    if (prompt.every((item) => typeof item === 'number')) return { prompts: 1, characters: prompt.length * 4 };
    let characters = 0;
    for (const item of prompt) {
      if (typeof item === 'string') characters += item.length;
      else if (Array.isArray(item)) characters += item.length * 4;
      else throw new MockError(400, "'prompt' items must be strings or token arrays", 'invalid_value', 'prompt');
    }
    return { prompts: prompt.length, characters };
  }
  throw new MockError(400, "'prompt' is a required property", 'invalid_value', 'prompt');
}

export async function handleCompletions(exchange: Exchange, context: MockContext): Promise<void> {
  const body = requireObject(exchange.body);
  if (typeof body.model !== 'string' || body.model.length === 0) throw new MockError(400, 'you must provide a model parameter', undefined, 'model');
  const { prompts, characters } = promptCharacters(body.prompt);
  const n = typeof body.n === 'number' ? body.n : 1;
  const choiceCount = prompts * n;
  const pieceCount = allowedPieces(exchange.fault?.ignoreMaxTokens ? undefined : body.max_tokens ?? 16, context.text.pieces.length);
  const finishReason = pieceCount < context.text.pieces.length ? 'length' : 'stop';
  const promptTokens = tokensForCharacters(characters);
  const usage = exchange.fault?.omitUsage ? undefined : {
    prompt_tokens: exchange.fault?.usageOverride?.prompt_tokens ?? promptTokens,
    completion_tokens: exchange.fault?.usageOverride?.completion_tokens ?? pieceCount * choiceCount,
    total_tokens: 0,
  };
  if (usage) usage.total_tokens = usage.prompt_tokens + usage.completion_tokens;
  const id = `cmpl-mock${context.nextId()}`;
  const created = Math.floor(Date.now() / 1000);
  const model = JSON.stringify(body.model);

  if (body.stream !== true) {
    const text = context.text.pieces.slice(0, pieceCount).join('');
    const choices = Array.from({ length: choiceCount }, (_, index) => ({ text, index, logprobs: null, finish_reason: finishReason }));
    sendJson(exchange.response, 200, { id, object: 'text_completion', created, model: body.model, choices, ...(usage ? { usage } : {}) });
    return;
  }
  const includeUsage = (body.stream_options as { include_usage?: unknown } | undefined)?.include_usage === true && usage !== undefined;
  const chunk = (index: number, text: string, finish: string) =>
    `data: {"id":"${id}","object":"text_completion","created":${created},"choices":[{"text":${text},"index":${index},"logprobs":null,"finish_reason":${finish}}],"model":${model}}\n\n`;
  const content = context.text.jsonPieces.slice(0, pieceCount).map((piece) => {
    let text = '';
    for (let index = 0; index < choiceCount; index += 1) text += chunk(index, piece, 'null');
    return text;
  });
  let tail = '';
  for (let index = 0; index < choiceCount; index += 1) tail += chunk(index, '""', `"${finishReason}"`);
  if (includeUsage) tail += `data: {"id":"${id}","object":"text_completion","created":${created},"choices":[],"model":${model},"usage":${JSON.stringify(usage)}}\n\n`;
  const plan: StreamPlan = { head: '', content, tail, terminal: 'data: [DONE]\n\n', malformed: 'data: {not json\n\n' };
  await writeStream(exchange, plan, context);
}
