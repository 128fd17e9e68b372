// The redaction of upstream error events in streams (src/formats/stream-error-redact.ts): what it
// rewrites, what it leaves byte for byte, and what it holds back.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { redactErrorEvents, StreamErrorRedactor } from '../../src/formats/stream-error-redact';
import { upstreamSecrets } from '../../src/formats/redact';
import { MAX_EVENT_BYTES } from '../../src/formats/sse';

const channel = { keys: ['chan-Key-Zq81-private'], base_url: 'http://10.1.2.3:8000/v1' };
const secrets = upstreamSecrets(channel);
const text = (out: Buffer | string | null) => (out === null ? '' : out.toString());

test('upstreamSecrets: the keys, the URL and its host, longest first', () => {
  assert.deepEqual(secrets, ['http://10.1.2.3:8000/v1', 'chan-Key-Zq81-private', '10.1.2.3:8000', '10.1.2.3']);
});

test('an error event split over two outputs is held until its end, then redacted; the event before it goes at once', () => {
  const redactor = new StreamErrorRedactor({ secrets: () => secrets });
  const ordinary = Buffer.from('data: {"choices":[{"delta":{"content":"error"}}]}\n\n');
  const error = 'data: {"error":{"message":"key chan-Key-Zq81-private at http:\\/\\/10.1.2.3:8000\\/v1 and sk-live-AbCdEf0123456789xyz"}}\n\n';
  const first = redactor.push(Buffer.concat([ordinary, Buffer.from(error.slice(0, 30))]));
  assert.equal(text(first), ordinary.toString(), 'the ordinary event, untouched; the error event held');
  const second = text(redactor.push(Buffer.from(error.slice(30))));
  assert.equal(second, 'data: {"error":{"message":"key [redacted] at http:\\/\\/[redacted]\\/v1 and [redacted]"}}\n\n');
  assert.equal(text(redactor.end('data: [DONE]\n\n')), 'data: [DONE]\n\n');
});

test('whole events without "error" pass as the same object; what is held at the end goes before the tail, unless it is an unended error', () => {
  const redactor = new StreamErrorRedactor({ secrets: () => assert.fail('secrets are asked for only for an error event') });
  const chunk = Buffer.from('data: {"choices":[{"delta":{"content":"hi"}}]}\n\n');
  assert.equal(redactor.push(chunk), chunk);
  const string = 'event: content_block_delta\ndata: {}\n\n';
  assert.equal(redactor.push(string), string);
  const after = new StreamErrorRedactor({ secrets: () => secrets });
  assert.equal(after.push('event: error\ndata: {"type":"error","error":{"message":"chan-Key-'), null);
  assert.equal(text(after.end('data: [DONE]\n\n')), 'data: [DONE]\n\n', 'an error event the upstream never ended is dropped: it may end inside a secret');
  const plain = new StreamErrorRedactor({ secrets: () => secrets });
  assert.equal(plain.push('data: {"x":1}'), null);
  assert.equal(text(plain.end('\n\n')), 'data: {"x":1}\n\n', 'an unended ordinary event goes out before the tail');
});

test('redactErrorEvents: a non-null "error" member, type or object "error", or `event: error`; never `"error":null` or content', () => {
  const key = 'sk-live-AbCdEf0123456789xyz';
  for (const event of [`data: {"error":{"message":"${key}"}}\n\n`, `data: {"object":"error","message":"${key}"}\n\n`, `event: error\ndata: ${key}\n\n`]) {
    assert.ok(!redactErrorEvents(event, secrets).includes(key), event);
  }
  for (const event of [`data: {"id":"${key}","error":null,"x":"error"}\n\n`, `data: {"delta":{"content":"\\"error\\": ${key}"}}\n\n`]) {
    assert.equal(redactErrorEvents(event, secrets), event);
  }
});

test('an event that never ends is not held past MAX_EVENT_BYTES', () => {
  const redactor = new StreamErrorRedactor({ secrets: () => secrets });
  assert.equal(redactor.push(Buffer.alloc(1000, 'a')), null);
  const out = redactor.push(Buffer.alloc(MAX_EVENT_BYTES, 'b'));
  assert.equal(out?.length, MAX_EVENT_BYTES + 1000);
});

test('an output is looked at exactly when it holds "error", at any place, in short outputs and long ones', () => {
  const redactor = new StreamErrorRedactor({ secrets: () => secrets });
  // near misses share its letters; "errror" and "eror" hold no "error"
  const pieces = ['error', 'errror', 'eror', 'erro', 'rror', 'rr', 'r', 'e', 'o', 'terror', 'x'];
  let seed = 7;
  const next = (bound: number) => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed % bound; };
  for (const length of [40, 300, 511, 512, 2_000, 6_000]) {
    for (let trial = 0; trial < 60; trial += 1) {
      let body = '';
      while (body.length < length) body += next(4) === 0 ? pieces[next(pieces.length)] : 'abcdefghijklmnopqrstuvwxyz '[next(27)];
      const event = Buffer.from(`data: ${body}\n\n`);
      const out = redactor.push(event);
      const holds = event.includes('error');
      assert.equal(out !== event, holds, `${length} bytes, "error" ${holds ? 'held' : 'not held'}: ${body.slice(0, 80)}`);
    }
  }
  for (const event of ['error\n\n', 'data: x\n\nerror\n\n', `${'a'.repeat(600)}error\n\n`, `error${'a'.repeat(600)}\n\n`]) {
    const bytes = Buffer.from(event);
    assert.notEqual(redactor.push(bytes), bytes, JSON.stringify(event.slice(0, 20)));
  }
});
