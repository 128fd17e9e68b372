// Piscina task file: token counting of big prompts (POST /v1/messages/count_tokens above the
// offload threshold), off the event loop. Pure code only.
import { localPromptTokens } from '../src/billing/message-tokens';
import { POOL_EXACT_CHARS } from '../src/billing/tokens';

export function countMessagesTokens(body: Record<string, unknown>): number {
  return localPromptTokens(body, POOL_EXACT_CHARS);
}
