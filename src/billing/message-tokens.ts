// Local token counts of Anthropic Messages traffic, for when an upstream reports none: the prompt of
// a request (system, turns, tool traffic, tools) and the completion of a Message. Every place that
// shows or bills such a count (the relay's fallback, translated and simulated streams' message_start,
// count_tokens) uses these, so what a client is shown is what is billed.
import { countBudget, countChatPromptTokens, countTokens, INLINE_EXACT_CHARS } from './tokens';

type Json = Record<string, unknown>;
const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);

/** Text of content blocks as the tokenizer should see it: text, thinking, tool inputs. */
function blockText(block: unknown): string {
  if (!isObject(block)) return '';
  if (typeof block.text === 'string') return block.text;
  if (typeof block.thinking === 'string') return block.thinking;
  if (block.type === 'tool_use') return `${String(block.name ?? '')} ${JSON.stringify(block.input ?? {})}`;
  if (block.type === 'tool_result') return typeof block.content === 'string' ? block.content : contentText(block.content);
  return '';
}

function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  return Array.isArray(content) ? content.map(blockText).join('\n') : '';
}

export function completionTokensOfMessage(message: Json): number {
  return countTokens(contentText(message.content));
}

/**
 * Tokenizer count of a messages request (system, turns, tool traffic; images at the fallback price).
 * `exactChars` bounds the text counted exactly (the rest is estimated): the task pool counts more.
 */
export function localPromptTokens(body: Json, exactChars = INLINE_EXACT_CHARS): number {
  const budget = countBudget(exactChars);
  const turns: { role: string; content: unknown }[] = [];
  if (body.system !== undefined) turns.push({ role: 'system', content: contentText(body.system) });
  for (const message of Array.isArray(body.messages) ? body.messages : []) {
    if (!isObject(message)) continue;
    const content = Array.isArray(message.content)
      ? message.content.map((block) => (isObject(block) && block.type === 'image' ? { type: 'image_url' } : { type: 'text', text: blockText(block) }))
      : message.content;
    turns.push({ role: String(message.role), content });
  }
  return countChatPromptTokens(turns, budget) + (Array.isArray(body.tools) ? countTokens(JSON.stringify(body.tools), budget) : 0);
}
