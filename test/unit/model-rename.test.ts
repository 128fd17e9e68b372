// The upstream's model name (a model_map target) is swapped for the client's in forwarded events.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ModelRename } from '../../src/formats/model-rename';
import { AnthropicStreamFill } from '../../src/formats/anthropic-stream-fill';
import { countTokens } from '../../src/billing/tokens';

test('ModelRename: only between different names; every "model" member of the events is renamed', () => {
  assert.equal(ModelRename.between('gpt-4o-mini', 'gpt-4o-mini'), undefined);
  const rename = ModelRename.between('gpt-upstream-1', 'gpt-4o-mini')!;
  const events = Buffer.from('data: {"id":"a","model":"gpt-upstream-1","choices":[]}\n\ndata: {"id":"b","model":"gpt-upstream-1"}\n\n');
  assert.equal(rename.apply(events).toString(), 'data: {"id":"a","model":"gpt-4o-mini","choices":[]}\n\ndata: {"id":"b","model":"gpt-4o-mini"}\n\n');
  const untouched = Buffer.from('data: {"content":"the model gpt-upstream-1 said"}\n\n');
  assert.equal(rename.apply(untouched), untouched, 'text that is not the member stays, and no copy is made');
});

test('AnthropicStreamFill: the first event is held until complete and renamed, even with the name split across chunks', () => {
  const fill = new AnthropicStreamFill({ rename: ModelRename.between('claude-upstream-1', 'claude-x'), promptTokens: () => assert.fail('usage is there'), maxHeldBytes: 1024 });
  const whole = 'event: message_start\ndata: {"type":"message_start","message":{"model":"claude-upstream-1","usage":{"input_tokens":5,"output_tokens":1}}}\n\n'
    + 'event: ping\ndata: {"type":"ping","model":"claude-upstream-1"}\n\n';
  const split = whole.indexOf('upstream');
  assert.equal(fill.push(Buffer.from(whole.slice(0, split))), null, 'nothing goes out before the first event is complete');
  const out = fill.push(Buffer.from(whole.slice(split)))!.toString();
  assert.ok(out.startsWith('event: message_start\ndata: {"type":"message_start","message":{"model":"claude-x","usage"'), out);
  assert.ok(out.endsWith('"model":"claude-upstream-1"}\n\n'), 'later events pass as they are (only the first names the model)');
  const later = Buffer.from('data: x\n\n');
  assert.equal(fill.push(later), later, 'then bytes pass through untouched');
  assert.equal(fill.finish(), null);

  const short = new AnthropicStreamFill({ rename: ModelRename.between('a-up', 'a'), promptTokens: () => 0, maxHeldBytes: 1024 });
  assert.equal(short.push(Buffer.from('data: {"model":"a-up"}')), null);
  assert.equal(short.finish()!.toString(), 'data: {"model":"a"}', 'an upstream that ends inside the first event still has it renamed');
});

test('AnthropicStreamFill: an upstream that omitted usage gets it filled in (the local prompt count, the delivered output counted)', () => {
  const fill = new AnthropicStreamFill({ promptTokens: () => 42, maxHeldBytes: 1024 });
  const event = (type: string, data: object) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
  const stream = event('message_start', { message: { id: 'msg_1', type: 'message', role: 'assistant', model: 'm', content: [] } })
    + event('content_block_start', { index: 0, content_block: { type: 'text', text: '' } })
    + event('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'Hello there, friend.' } })
    + event('content_block_stop', { index: 0 })
    + event('message_delta', { delta: { stop_reason: 'end_turn', stop_sequence: null } })
    + event('message_stop', {});
  const out = String(fill.push(Buffer.from(stream.slice(0, 40)))) + String(fill.push(Buffer.from(stream.slice(40))) ?? '') + String(fill.finish() ?? '');
  const events = out.split('\n\n').filter(Boolean).map((block) => JSON.parse(block.split('\ndata: ')[1]));
  assert.deepEqual(events.map((payload) => payload.type), ['message_start', 'content_block_start', 'content_block_delta', 'content_block_stop', 'message_delta', 'message_stop']);
  assert.deepEqual(events[0].message.usage, { input_tokens: 42, output_tokens: 0 });
  assert.deepEqual(events[4].usage, { output_tokens: countTokens('Hello there, friend.') });
});
