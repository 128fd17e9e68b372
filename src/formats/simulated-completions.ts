// The simulator's legacy text completions: each prompt answered as the chat simulator answers a
// user message with that text (the same deterministic words, one word piece = one token), in the
// real text_completion wire format, stream and not. Choices run prompt by prompt, `n` per prompt.
import { randomBytes } from 'node:crypto';
import { completionPrompts } from './openai-completions';
import { simulateChatCompletion } from './simulated-chat';

export interface SimulatedCompletionsRequest {
  model: string;
  prompt: unknown;
  n?: number;
  max_tokens?: number;
  echo?: boolean;
}

interface Choice { text: string; pieces: string[]; finishReason: string }

function choicesOf(request: SimulatedCompletionsRequest): Choice[] {
  const n = typeof request.n === 'number' && request.n >= 1 ? Math.floor(request.n) : 1;
  const choices: Choice[] = [];
  for (const prompt of completionPrompts(request.prompt)) {
    const text = typeof prompt === 'string' ? prompt : `[${prompt.length} tokens]`;
    const chat = simulateChatCompletion({ model: request.model, messages: [{ role: 'user', content: text }], n, max_tokens: request.max_tokens }, { promptTokens: 0 });
    for (const choice of chat.choices) {
      const content = choice.message.content ?? '';
      const pieces = content.match(/\s*\S+/g) ?? [];
      choices.push({ text: request.echo === true ? `${text}${content}` : content, pieces: request.echo === true ? [text, ...pieces] : pieces, finishReason: choice.finish_reason });
    }
  }
  return choices;
}

const completionTokens = (choices: Choice[], echo: boolean) => choices.reduce((sum, choice) => sum + choice.pieces.length - (echo ? 1 : 0), 0);

function identity(): { id: string; created: number } {
  return { id: `cmpl-sim${randomBytes(10).toString('hex')}`, created: Math.floor(Date.now() / 1000) };
}

/** A whole text_completion object with usage. */
export function simulateCompletion(request: SimulatedCompletionsRequest, promptTokens: number): Record<string, unknown> {
  const choices = choicesOf(request);
  const completion = completionTokens(choices, request.echo === true);
  return {
    ...identity(), object: 'text_completion', model: request.model,
    choices: choices.map((choice, index) => ({ text: choice.text, index, logprobs: null, finish_reason: choice.finishReason })),
    usage: { prompt_tokens: promptTokens, completion_tokens: completion, total_tokens: promptTokens + completion },
  };
}

/** The same answer as SSE events: one per piece and choice, a finishing event per choice, usage when asked, [DONE]. */
export function simulateCompletionStream(request: SimulatedCompletionsRequest, promptTokens: number, includeUsage: boolean): string[] {
  const choices = choicesOf(request);
  const { id, created } = identity();
  const event = (body: Record<string, unknown>) => `data: ${JSON.stringify({ id, object: 'text_completion', created, model: request.model, ...body })}\n\n`;
  const events: string[] = [];
  choices.forEach((choice, index) => {
    for (const piece of choice.pieces) events.push(event({ choices: [{ text: piece, index, logprobs: null, finish_reason: null }] }));
    events.push(event({ choices: [{ text: '', index, logprobs: null, finish_reason: choice.finishReason }] }));
  });
  if (includeUsage) {
    const completion = completionTokens(choices, request.echo === true);
    events.push(event({ choices: [], usage: { prompt_tokens: promptTokens, completion_tokens: completion, total_tokens: promptTokens + completion } }));
  }
  events.push('data: [DONE]\n\n');
  return events;
}
