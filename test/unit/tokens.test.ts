import { test } from 'node:test';
import assert from 'node:assert/strict';
import { countChatPromptTokens, countTokens, estimatePromptTokens, IMAGE_PART_TOKENS } from '../../src/billing/tokens';

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
