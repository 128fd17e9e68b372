// utf8Text gives the string Buffer#toString('utf8') gives, for every input: ASCII, CJK, astral
// characters, a leading BOM, and invalid UTF-8 (truncated, overlong, encoded surrogates, stray
// continuation bytes), below and above the size where it decodes in bulk.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { BULK_DECODE_FROM_BYTES, utf8Text } from '../../src/formats/utf8-text';

/** A small deterministic generator: the same cases on every run. */
function generator(seed: number): () => number {
  let state = seed;
  return () => { state = (state * 48271) % 2147483647; return state / 2147483647; };
}

function randomText(random: () => number, length: number): string {
  let text = '';
  while (text.length < length) {
    const pick = random();
    const codePoint = pick < 0.5 ? Math.floor(random() * 0x80)
      : pick < 0.65 ? 0x80 + Math.floor(random() * 0x780)
        : pick < 0.9 ? 0x800 + Math.floor(random() * 0xd000)
          : 0x10000 + Math.floor(random() * 0xfffff);
    if (codePoint >= 0xd800 && codePoint < 0xe000) continue;
    text += String.fromCodePoint(codePoint);
  }
  return text;
}

test('valid UTF-8: the same string as toString, short and long, sparse and dense non-ASCII', () => {
  const random = generator(17);
  const samples = [
    '', 'plain ASCII', '\ufeff{"model":"m"}', '你好，世界', '→ ⎿ ✓ é 😀 𝄞', String.fromCodePoint(0x10ffff),
    'x'.repeat(BULK_DECODE_FROM_BYTES - 1) + '中', 'x'.repeat(BULK_DECODE_FROM_BYTES) + '中',
    `${'     1→const a = 1;\n'.repeat(400)}`, '请帮我分析这段代码的性能问题。'.repeat(300), 'ASCII only, long. '.repeat(300),
  ];
  for (let index = 0; index < 400; index += 1) samples.push(randomText(random, Math.floor(random() * 3 * BULK_DECODE_FROM_BYTES)));
  for (const text of samples) {
    const bytes = Buffer.from(text, 'utf8');
    assert.equal(utf8Text(bytes), text, `${bytes.length} bytes`);
    assert.equal(utf8Text(bytes), bytes.toString('utf8'));
  }
});

test('invalid UTF-8: the replacement characters toString places, in the same places', () => {
  const random = generator(29);
  const invalid = [
    [0xc3], [0xe4, 0xbd], [0xf0, 0x9f, 0x98], [0xc0, 0xaf], [0xe0, 0x80, 0xaf], [0xed, 0xa0, 0x80], [0xed, 0xbf, 0xbf],
    [0x80], [0xbf, 0xbf], [0xff], [0xfe], [0xf4, 0x90, 0x80, 0x80], [0xf8, 0x88, 0x80, 0x80, 0x80],
  ];
  for (let index = 0; index < 300; index += 1) {
    const text = Buffer.from(randomText(random, Math.floor(random() * 2 * BULK_DECODE_FROM_BYTES)), 'utf8');
    const bad = Buffer.from(invalid[index % invalid.length]);
    const at = Math.floor(random() * (text.length + 1));
    const bytes = Buffer.concat([text.subarray(0, at), bad, text.subarray(at)]);
    assert.equal(utf8Text(bytes), bytes.toString('utf8'), `${bytes.length} bytes, ${bad.toString('hex')} at ${at}`);
  }
  // a long text cut inside its last character
  const cut = Buffer.from('中'.repeat(BULK_DECODE_FROM_BYTES), 'utf8').subarray(0, 3 * BULK_DECODE_FROM_BYTES - 1);
  assert.equal(utf8Text(cut), cut.toString('utf8'));
  assert.ok(utf8Text(cut).endsWith('\ufffd'));
});

test('a view into a larger buffer decodes only its own bytes', () => {
  const whole = Buffer.from(`${'前'.repeat(2000)}|${'后'.repeat(2000)}`, 'utf8');
  const view = whole.subarray(3 * 2000 + 1);
  assert.equal(utf8Text(view), '后'.repeat(2000));
});
