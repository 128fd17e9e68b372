// Deterministic completion text and token counts, so tests can predict usage exactly:
// prompt tokens = ceil(text characters / 4) (at least 1); one content piece = one completion token.
import type { ContentPieces } from './types';

const WORDS = ['Hello', 'from', 'the', 'mock', 'upstream.'];

/** `count` content pieces: the mock's words, or `text` as every piece (MockFault.pieceText). */
export function buildPieces(count: number, text?: string): ContentPieces {
  const pieces: string[] = [];
  for (let index = 0; index < count; index += 1) {
    pieces.push(text ?? (index === 0 ? '' : ' ') + WORDS[index % WORDS.length]);
  }
  return { pieces, jsonPieces: pieces.map((piece) => JSON.stringify(piece)), fullText: pieces.join('') };
}

export function tokensForCharacters(characters: number): number {
  return Math.max(1, Math.ceil(characters / 4));
}

/** Characters of text in a message content: a string, or text parts / blocks (nested tool results too). */
export function textCharacters(content: unknown): number {
  if (typeof content === 'string') return content.length;
  if (!Array.isArray(content)) return 0;
  let total = 0;
  for (const part of content) {
    if (typeof part !== 'object' || part === null) continue;
    const record = part as Record<string, unknown>;
    if (typeof record.text === 'string') total += record.text.length;
    else if (record.type === 'tool_result') total += textCharacters(record.content);
  }
  return total;
}

export function messagesCharacters(messages: unknown[]): number {
  let total = 0;
  for (const message of messages) {
    if (typeof message === 'object' && message !== null) total += textCharacters((message as { content?: unknown }).content);
  }
  return total;
}

/** How many pieces a `max_tokens`-style limit leaves; undefined or non-numbers leave all. */
export function allowedPieces(limit: unknown, available: number): number {
  if (typeof limit !== 'number' || !Number.isFinite(limit) || limit < 0) return available;
  return Math.min(available, Math.floor(limit));
}
