import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BpeCounter, parseTiktokenRanks } from '../../src/billing/bpe-counter';
import { o200kCounter } from '../../src/billing/tokens';

// gpt-tokenizer's own o200k_base counter is the reference: the counter billing uses must count exactly
// as it does (special-token text as plain text), on every kind of text a client or an upstream can send.
const reference = require('gpt-tokenizer/encoding/o200k_base') as { countTokens(text: string, options: object): number };
const PLAIN_TEXT = { allowedSpecial: new Set(), disallowedSpecial: new Set() };
const counter = o200kCounter();

/** a seeded generator, so a failure names a text that can be made again */
function generator(seed: number): (bound: number) => number {
  let state = seed;
  return (bound) => {
    state = (Math.imul(state, 1103515245) + 12345) & 0x7fffffff;
    return state % bound;
  };
}

function assertSameCounts(texts: Iterable<string>): number {
  let checked = 0;
  for (const text of texts) {
    assert.equal(counter.count(text), reference.countTokens(text, PLAIN_TEXT), `text ${JSON.stringify(text)}`);
    checked += 1;
  }
  return checked;
}

test('counts what the reference counts on known texts', () => {
  assert.equal(counter.count(''), 0);
  assert.equal(counter.count('hello world'), 2);
  assert.equal(counter.count('你好，世界'), 3);
  assertSameCounts([
    'The quick brown fox jumps over the lazy dog.', "I'll say it's done, we've seen THEY'RE here", '<|endoftext|><|im_start|>',
    'function f(x) {\n\treturn x * 2; // twice\n}\n', '    indented\n\n\n  lines   ', '1234567890 3.14159 -42 1e10',
    '😀😃👍🏽🇫🇷 emoji', 'Ünïcödé façade naïve Straße', 'Привет, мир! שלום עולם مرحبا بالعالم नमस्ते',
    '这是一个很长的中文句子，没有空格，用来测试分词器在处理连续汉字时的合并顺序是否与参考实现完全一致。',
    'lone \uD800 surrogate \uDC00 here', '\uD800', '\uFFFD\uFFFD', 'a\u0301e\u0301', 'a'.repeat(300), ' '.repeat(50), '\r\n\r\n',
  ]);
});

test('counts what the reference counts on random text of every script (seeded)', () => {
  const next = generator(20261129);
  const alphabet = [...'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 \n\t\r.,;:!?\'"()[]{}<>/\\|-_=+*&^%$#@~`',
    '你', '好', '世', '界', '的', '。', '，', 'é', 'ß', 'Ж', 'щ', 'א', 'ب', 'ह', '€', '→', '😀', '👍🏽', '\u0301', '\uD800', '\uDC00',
    '\u200b', '\uFFFD', 'ｱ', '한', '  ', '\n\n', "'s", "'LL", '<|endoftext|>'];
  const texts: string[] = [];
  for (let index = 0; index < 3000; index += 1) {
    let text = '';
    for (let length = 1 + next(60); length > 0; length -= 1) text += alphabet[next(alphabet.length)];
    texts.push(text);
  }
  for (let index = 0; index < 1500; index += 1) {
    let text = '';
    for (let length = 1 + next(24); length > 0; length -= 1) {
      const kind = next(10);
      text += String.fromCodePoint(kind < 5 ? 32 + next(95) : kind < 8 ? 0xa0 + next(0x3000) : kind < 9 ? 0x4e00 + next(0x5000) : 0x10000 + next(0x20000));
    }
    texts.push(text);
  }
  for (let index = 0; index < 1000; index += 1) {
    let text = '';
    for (let length = 1 + next(12); length > 0; length -= 1) text += String.fromCharCode(next(0x10000));   // any code unit, lone surrogates too
    texts.push(text);
  }
  assert.equal(assertSameCounts(texts), 5500);
});

test('a long piece (a run of CJK, of one letter) is merged as the reference merges it', () => {
  const next = generator(7);
  let cjk = '';
  for (let index = 0; index < 400; index += 1) cjk += String.fromCodePoint(0x4e00 + next(0x800));
  assertSameCounts([cjk, 'x'.repeat(1000), 'ab'.repeat(500), '😀'.repeat(300)]);
});

test('a rank file is decoded token by token; a malformed one is refused', () => {
  const { bytes, offsets } = parseTiktokenRanks(Buffer.from('IQ== 0\nIg== 1\naGk= 2\n4pyTYQ== 3'));
  const tokens = [...offsets.subarray(1)].map((end, rank) => Buffer.from(bytes.subarray(offsets[rank], end)).toString());
  assert.deepEqual(tokens, ['!', '"', 'hi', '✓a']);
  for (const file of ['IQ== 0\nIg==\n', 'IQ== x\n', 'IQ== 1\n', 'IQ== 0\nIg== 0\n', 'I!== 0\n', 'IQ=a 0\n', 'IQ 0\n', ' 0\n']) {
    assert.throws(() => parseTiktokenRanks(Buffer.from(file)), /malformed rank file line/, file);
  }
});

test('the split pattern must be global (a sticky or single match would count only the first piece)', () => {
  assert.throws(() => new BpeCounter({ bytes: new Uint8Array(0), offsets: new Uint32Array(1) }, /a/u), /must be global/);
});
