import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CompletionTextSample } from '../../src/formats/completion-text';

const event = (delta: Record<string, unknown>) =>
  Buffer.from(`data: ${JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: null }] })}\n\n`);
const PIECES = ['Hello', ', "wor"', 'ld \\ é', ' 🌍\n中文', ' end'];

test('text below the bound: every piece, decoded, and no scaling', () => {
  const sample = new CompletionTextSample(64 * 1024);
  for (const piece of PIECES) sample.add(event({ content: piece }));
  assert.equal(sample.text(), PIECES.join(''));
  assert.equal(sample.scale, 1);
  assert.equal(sample.bytes(), Buffer.byteLength(PIECES.join('')));
});

test('at the bound the text is extracted once: the same text and scale as read before it, nothing after it kept', () => {
  const events = Array.from({ length: 60 }, (_, index) => event({ content: `${PIECES[index % PIECES.length]}${index}` }));
  const bound = events.slice(0, 10).reduce((sum, bytes) => sum + bytes.length, 0);
  const sample = new CompletionTextSample(bound);
  // read once before the bound (a budget check mid-stream): the later extraction does not repeat it
  for (const bytes of events.slice(0, 4)) sample.add(bytes);
  const early = sample.text();
  for (const bytes of events.slice(4)) sample.add(bytes);
  const kept = events.slice(0, 10).map((_, index) => `${PIECES[index % PIECES.length]}${index}`).join('');
  assert.ok(kept.startsWith(early));
  assert.equal(sample.text(), kept);
  const forwarded = events.reduce((sum, bytes) => sum + bytes.length, 0);
  assert.equal(sample.scale, forwarded / bound);
  assert.equal(sample.bytes(), Math.round(Buffer.byteLength(kept) * (forwarded / bound)));
});

test('tool call arguments seen before the bound count in the text extracted at the bound', () => {
  const first = event({ tool_calls: [{ index: 0, function: { name: 'lookup', arguments: '{"city":' } }] });
  const second = event({ tool_calls: [{ index: 0, function: { arguments: '"Paris"}' } }] });
  const sample = new CompletionTextSample(first.length + 1);
  sample.withArguments = true;
  sample.add(first);
  sample.add(second);
  assert.equal(sample.text(), '{"city":"Paris"}');
});

test('the chunk handed to add may be reused afterwards', () => {
  const bytes = event({ content: 'kept' });
  const sample = new CompletionTextSample(bytes.length);
  sample.add(bytes);
  bytes.fill(0x20);
  assert.equal(sample.text(), 'kept');
});

test('text copied over many batches: every piece once, in order, whatever its size, and none of the chunks held', () => {
  // short pieces, pieces longer than a short slice, escaped ones, and an event larger than a batch of copies
  const pieces = Array.from({ length: 120 }, (_, index) => index === 50 ? 'x'.repeat(3000)
    : index % 3 === 0 ? `w${index}` : index % 3 === 1 ? ` a longer piece of text ${index} ` : `"q${index}" \\ 中`);
  const sample = new CompletionTextSample(64 * 1024);
  let forwarded = 0;
  for (let index = 0; index < pieces.length; index += 1) {
    const bytes = event({ content: pieces[index] });
    forwarded += bytes.length;
    sample.add(bytes);
    bytes.fill(0x20);
    // read mid-stream (a budget check): the later batches do not repeat it
    if (index === 70) assert.equal(sample.text(), pieces.slice(0, 71).join(''));
  }
  assert.equal(sample.text(), pieces.join(''));
  assert.equal(sample.bytes(), Buffer.byteLength(pieces.join('')));
  assert.equal(sample.scale, 1);
  assert.equal(sample.full, forwarded >= 64 * 1024);
});
