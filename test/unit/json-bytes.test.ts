// JSON written straight into bytes (src/formats/json-bytes.ts): the same text JSON.stringify gives.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ByteWriter, JsonStringBytes, MAX_NUMBER_BYTES } from '../../src/formats/json-bytes';

test('numbers are written as JSON.stringify writes them', () => {
  const values = [0, -0, 1, 9, 10, 99, 100, 12345, 2 ** 31, 2 ** 32 - 1, 2 ** 32, 1e9 - 1, 1e9, 1e9 + 1, 1e10, 1795783408933, 2 ** 53 - 1, 2 ** 53, 2 ** 53 + 2, 1e21, -1, -123456, 0.5, 1.5, -2.25,
    1e-7, 123456789.123, Number.MAX_VALUE, Number.MIN_VALUE, -Number.MAX_VALUE, Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY];
  for (const value of values) {
    const out = new ByteWriter(MAX_NUMBER_BYTES);
    out.number(value);
    assert.ok(out.length <= MAX_NUMBER_BYTES, `${value} fits the bound`);
    assert.equal(out.view().toString(), JSON.stringify(value), String(value));
  }
});

test('strings are JSON string literals in UTF-8, remembered or not', () => {
  const strings = new JsonStringBytes(2, 10);
  const values = ['', 'plain', 'quote"', 'back\\slash', 'line\nbreak', '\u2028\u2029', '名前 🌍', '\ud800 lone', 'x'.repeat(50), 'plain', '\u007f\u0000'];
  for (const value of values) assert.equal(strings.of(value).toString('utf8'), JSON.stringify(value), value);
});

test('a writer grows keeping what it wrote, and text() makes its own room', () => {
  const out = new ByteWriter(4);
  out.reserve(3);
  out.ascii('[1,');
  out.text('"é".repeat'.repeat(100));
  out.reserve(1);
  out.byte(0x5d);
  assert.equal(out.view().toString(), `[1,${'"é".repeat'.repeat(100)}]`);
});
