// The upstream's model name (a model_map target) is swapped for the client's in forwarded events.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FirstEventModelRename, ModelRename } from '../../src/formats/model-rename';

test('ModelRename: only between different names; every "model" member of the events is renamed', () => {
  assert.equal(ModelRename.between('gpt-4o-mini', 'gpt-4o-mini'), undefined);
  const rename = ModelRename.between('gpt-upstream-1', 'gpt-4o-mini')!;
  const events = Buffer.from('data: {"id":"a","model":"gpt-upstream-1","choices":[]}\n\ndata: {"id":"b","model":"gpt-upstream-1"}\n\n');
  assert.equal(rename.apply(events).toString(), 'data: {"id":"a","model":"gpt-4o-mini","choices":[]}\n\ndata: {"id":"b","model":"gpt-4o-mini"}\n\n');
  const untouched = Buffer.from('data: {"content":"the model gpt-upstream-1 said"}\n\n');
  assert.equal(rename.apply(untouched), untouched, 'text that is not the member stays, and no copy is made');
});

test('FirstEventModelRename: the first event is held until complete, even when the name is split across chunks', () => {
  const first = new FirstEventModelRename(ModelRename.between('claude-upstream-1', 'claude-x')!, 1024);
  const whole = 'event: message_start\ndata: {"type":"message_start","message":{"model":"claude-upstream-1"}}\n\nevent: ping\ndata: {"type":"ping","model":"claude-upstream-1"}\n\n';
  const split = whole.indexOf('upstream');
  assert.equal(first.push(Buffer.from(whole.slice(0, split))), null, 'nothing goes out before the first event is complete');
  const out = first.push(Buffer.from(whole.slice(split)))!.toString();
  assert.ok(out.startsWith('event: message_start\ndata: {"type":"message_start","message":{"model":"claude-x"}}\n\n'), out);
  assert.ok(out.endsWith('"model":"claude-upstream-1"}\n\n'), 'later events pass as they are (only the first names the model)');
  const later = Buffer.from('data: x\n\n');
  assert.equal(first.push(later), later);
  assert.equal(first.finish(), null);

  const short = new FirstEventModelRename(ModelRename.between('a-up', 'a')!, 1024);
  assert.equal(short.push(Buffer.from('data: {"model":"a-up"}')), null);
  assert.equal(short.finish()!.toString(), 'data: {"model":"a"}', 'an upstream that ends inside the first event still has it renamed');
});
