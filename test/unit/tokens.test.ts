import { test } from 'node:test';
import assert from 'node:assert/strict';
import { countBudget, countChatPromptTokens, countTokens, estimatePromptTokens, IMAGE_PART_TOKENS, INLINE_EXACT_CHARS, MAX_PIECE_CHARS, POOL_EXACT_CHARS } from '../../src/billing/tokens';

test('countTokens uses o200k_base', () => {
  assert.equal(countTokens(''), 0);
  assert.equal(countTokens('hello world'), 2);
  // o200k_base merges far more CJK than cl100k_base; the exact count pins the encoding
  assert.equal(countTokens('你好，世界'), 3);
});

test('text that looks like a special token is counted, not refused', () => {
  assert.ok(countTokens('<|endoftext|>') > 1);
});

test('estimatePromptTokens leans above the real count for ordinary text', () => {
  const text = 'The quick brown fox jumps over the lazy dog. '.repeat(20);
  const messages = [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: text }];
  const estimate = estimatePromptTokens('Be brief.'.length + text.length, messages.length);
  const counted = countChatPromptTokens(messages);
  assert.ok(estimate >= counted, `estimate ${estimate} < counted ${counted}`);
  assert.equal(estimatePromptTokens(0, 1), 7);
  assert.equal(estimatePromptTokens(300, 2, 1), 100 + 8 + IMAGE_PART_TOKENS + 3);
});

test('countChatPromptTokens counts text parts, names, tool calls and a fixed price per image', () => {
  const textOnly = countChatPromptTokens([{ role: 'user', content: 'hello world' }]);
  assert.equal(textOnly, 3 + countTokens('user') + 2 + 3);
  const withImage = countChatPromptTokens([{
    role: 'user',
    content: [{ type: 'text', text: 'hello world' }, { type: 'image_url', image_url: { url: 'https://x/y.png' } }],
  }]);
  assert.equal(withImage, textOnly + IMAGE_PART_TOKENS);
  const withName = countChatPromptTokens([{ role: 'user', name: 'alice', content: 'hello world' }]);
  assert.equal(withName, textOnly + 1 + countTokens('alice'));
  const call = countChatPromptTokens([{
    role: 'assistant', content: null, tool_calls: [{ id: 'c', type: 'function', function: { name: 'lookup', arguments: '{"q":"x"}' } }],
  }]);
  assert.equal(call, 3 + countTokens('assistant') + countTokens('lookup') + countTokens('{"q":"x"}') + 3);
});

test('a long run without spaces is counted in bounded pieces: linear, near the exact count', () => {
  let letters = '';
  for (let index = 0; index < 20_000; index += 1) letters += String.fromCharCode(97 + ((index * 7919) % 26));
  const counted = countTokens(letters, countBudget(Infinity));
  // every cut costs at most about one token: 20,000 / MAX_PIECE_CHARS cuts
  assert.ok(counted > 0 && counted <= countTokens(letters.slice(0, 10_000), countBudget(Infinity)) * 2 + 20_000 / MAX_PIECE_CHARS + 2);
  const emoji = '😀😃😄😁'.repeat(200);   // surrogate pairs: a cut never splits one
  assert.equal(countTokens(emoji, countBudget(Infinity)), countTokens(emoji.slice(0, 400), countBudget(Infinity)) + countTokens(emoji.slice(400), countBudget(Infinity)));
});

test('past its budget a count estimates the rest at the rate of what it counted', () => {
  const text = 'The quarterly report shows growth in every region. '.repeat(2000);
  const exact = countTokens(text, countBudget(Infinity));
  const budget = countBudget(10_000);
  const bounded = countTokens(text, budget);
  assert.equal(budget.exactChars, 0);
  assert.equal(budget.countedChars, 10_000);
  assert.ok(Math.abs(bounded - exact) / exact < 0.02, `bounded ${bounded} vs exact ${exact}`);
  // one budget spans the counts of one request
  const shared = countBudget(100);
  countTokens('x'.repeat(100), shared);
  assert.equal(countTokens('hello world '.repeat(10), shared), Math.ceil((120 * shared.countedTokens) / shared.countedChars));
  assert.ok(INLINE_EXACT_CHARS < POOL_EXACT_CHARS);
});
