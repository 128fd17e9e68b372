import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SseDecoder, encodeSseEvent, type SseEvent } from '../../src/formats/sse';

function decodeInChunks(input: Buffer, cuts: number[]): SseEvent[] {
  const decoder = new SseDecoder();
  const events: SseEvent[] = [];
  let start = 0;
  for (const cut of [...cuts, input.length]) {
    events.push(...decoder.push(input.subarray(start, cut)));
    start = cut;
  }
  events.push(...decoder.end());
  return events;
}

test('dispatches events on blank lines, joining data lines with \\n and reading event and id', () => {
  const events = new SseDecoder().push('event: delta\nid: 7\ndata: first\ndata: second\n\ndata: {"a":1}\n\n');
  assert.deepEqual(events, [
    { event: 'delta', id: '7', data: 'first\nsecond' },
    { data: '{"a":1}' },
  ]);
});

test('ignores comments, unknown fields and events without data', () => {
  const events = new SseDecoder().push(': keep-alive\n\nretry: 100\nevent: ping\n\nfoo: bar\ndata: x\n\n');
  assert.deepEqual(events, [{ data: 'x' }]);
});

test('removes exactly one space after the colon; a bare field name means an empty value', () => {
  const events = new SseDecoder().push('data:  two spaces\n\ndata:none\n\ndata\n\n');
  assert.deepEqual(events.map((event) => event.data), [' two spaces', 'none', '']);
});

test('accepts \\r\\n and lone \\r line ends, also when \\r and \\n arrive in different chunks', () => {
  const decoder = new SseDecoder();
  const events = [
    ...decoder.push('data: a\r'),
    ...decoder.push('\n\r'),
    ...decoder.push('\ndata: b\r\rdata: c\r\n\r\n'),
  ];
  assert.deepEqual(events.map((event) => event.data), ['a', 'b', 'c']);
});

test('gives the same events wherever the bytes are cut, even inside a multi-byte character', () => {
  const input = Buffer.from('\ufeffevent: message\r\ndata: héllo 🌍 wörld\r\n\r\n: comment\ndata: 中文\ndata: 第二行\n\ndata: [DONE]\n\n');
  const expected = [
    { event: 'message', data: 'héllo 🌍 wörld' },
    { data: '中文\n第二行' },
    { data: '[DONE]' },
  ];
  for (let cut = 1; cut < input.length; cut += 1) {
    assert.deepEqual(decodeInChunks(input, [cut]), expected, `cut at ${cut}`);
  }
  assert.deepEqual(decodeInChunks(input, Array.from({ length: input.length - 1 }, (_, index) => index + 1)), expected);
});

test('an event the stream ends in the middle of is discarded, or dispatched when asked', () => {
  const strict = new SseDecoder();
  assert.deepEqual(strict.push('data: complete\n\ndata: partial'), [{ data: 'complete' }]);
  assert.deepEqual(strict.end(), []);

  const lenient = new SseDecoder({ dispatchIncompleteAtEnd: true });
  lenient.push('data: partial');
  assert.deepEqual(lenient.end(), [{ data: 'partial' }]);
});

test('encodeSseEvent splits multi-line data and round-trips through the decoder', () => {
  const encoded = encodeSseEvent('line one\nline two\r\nline three', 'message_delta');
  assert.equal(encoded, 'event: message_delta\ndata: line one\ndata: line two\ndata: line three\n\n');
  assert.deepEqual(new SseDecoder().push(encoded), [{ event: 'message_delta', data: 'line one\nline two\nline three' }]);
  assert.equal(encodeSseEvent('{"x":1}'), 'data: {"x":1}\n\n');
});

test('encodeSseEvent refuses CR or LF in the event name', () => {
  assert.throws(() => encodeSseEvent('x', 'ping\ndata: injected'), /CR or LF/);
  assert.throws(() => encodeSseEvent('x', 'ping\r'), /CR or LF/);
});
