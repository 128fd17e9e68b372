// parseJsonUtf8 gives what JSON.parse(bytes.toString('utf8')) gives, key order included, for every
// input: large mostly-ASCII texts (read as Latin-1, their non-ASCII strings and keys decoded after),
// large texts with \u escapes of non-ASCII characters (parsed as UTF-16), dense CJK, short texts,
// "__proto__" keys, repeated keys, invalid UTF-8 and invalid JSON.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MAX_REGULAR_TWO_BYTE_UNITS, parseJsonUtf8 } from '../../src/formats/json-utf8';

function generator(seed: number): () => number {
  let state = seed;
  return () => { state = (state * 48271) % 2147483647; return state / 2147483647; };
}

const ASCII_WORDS = ['const', 'value', 'return', ' ', '\n', '\t', '{', '}', '"', '\\', '/', ':', ',', '0', 'export function step'];
const OTHER = ['→', '├──', '中文', 'é', 'ÿ', '\u0080', '😀', '\u2028', 'Ω', '\u00ad'];

function randomString(random: () => number, length: number, nonAscii: number): string {
  let text = '';
  while (text.length < length) text += random() < nonAscii ? OTHER[Math.floor(random() * OTHER.length)] : ASCII_WORDS[Math.floor(random() * ASCII_WORDS.length)];
  return text;
}

/** A random document as text, its strings and keys drawn with `nonAscii` odds of a non-ASCII piece. */
function randomDocument(random: () => number, depth: number, nonAscii: number, long: number): string {
  const pick = random();
  if (depth > 5 || pick < 0.3) return JSON.stringify(randomString(random, random() < 0.1 ? long : Math.floor(random() * 40), nonAscii));
  if (pick < 0.4) return ['1', '-2.5e3', 'true', 'false', 'null', '0.1'][Math.floor(random() * 6)];
  const count = 1 + Math.floor(random() * 6);
  if (pick < 0.65) return `[${Array.from({ length: count }, () => randomDocument(random, depth + 1, nonAscii, long)).join(', ')}]`;
  const members = Array.from({ length: count }, () => {
    const key = random() < 0.05 ? '__proto__' : random() < 0.05 ? 'same' : randomString(random, Math.floor(random() * 12), nonAscii);
    return `${JSON.stringify(key)}: ${randomDocument(random, depth + 1, nonAscii, long)}`;
  });
  return `{${members.join(',')}}`;
}

/** The same value as JSON.parse of the UTF-8 text, key order and "__proto__" keys included. */
function assertSameParse(bytes: Buffer, label: string): void {
  const expected = JSON.parse(bytes.toString('utf8')) as unknown;
  const actual = parseJsonUtf8(bytes);
  assert.equal(JSON.stringify(actual), JSON.stringify(expected), label);
  assert.deepStrictEqual(actual, expected, label);
}

test('large mostly-ASCII documents (the Latin-1 reading): the same value, strings and keys decoded', () => {
  const random = generator(7);
  let large = 0;
  for (let round = 0; round < 60; round += 1) {
    let text = randomDocument(random, 0, 0.02, 3000);
    while (Buffer.byteLength(text) < 70_000) text = `[${text}, ${randomDocument(random, 0, 0.02, 3000)}]`;
    const bytes = Buffer.from(text);
    if (bytes.toString('utf8').length > MAX_REGULAR_TWO_BYTE_UNITS) large += 1;
    assertSameParse(bytes, `round ${round}`);
  }
  assert.ok(large > 50, `only ${large} documents were past the two-byte bound`);
});

test('escapes of non-ASCII characters, dense CJK, short texts, invalid UTF-8 and invalid JSON', () => {
  const filler = `"${'export function step(state) { return state; } → ok\\n'.repeat(1600)}"`;
  const cases: Array<[string, Buffer]> = [
    ['\\u00e9 beside raw non-ASCII', Buffer.from(`{"a":${filler},"b":"caf\\u00e9 → é"}`)],
    ['\\u2028 and a surrogate pair escaped', Buffer.from(`{"a":${filler},"b":"x\\u2028y\\ud83d\\ude00 ├"}`)],
    ['an escaped backslash before u', Buffer.from(`{"a":${filler},"C:\\\\users":"\\\\u00e9 ├"}`)],
    ['ASCII escapes only', Buffer.from(`{"a":${filler},"b":"\\u001b[31m red \\u0000 ├──"}`)],
    ['a non-ASCII key, "__proto__" and repeated keys', Buffer.from(`{"a":${filler},"__proto__":{"x":1},"ключ":"значение","k":1,"k":"→"}`)],
    ['a non-ASCII key holding an array', Buffer.from(`[{"a":${filler}},{"中文":["→",{"é":"ÿ"}],"z":0}]`)],
    ['a top-level string', Buffer.from(JSON.stringify(`${'a'.repeat(70_000)}→`))],
    ['strings longer than the reused buffer, then shorter ones', Buffer.from(JSON.stringify({ a: `${'x'.repeat(70_000)}→`, b: `${'y'.repeat(2_000)}é`, c: '→', d: `é${'z'.repeat(65_536)}` }))],
    ['a long non-ASCII key', Buffer.from(`{"a":${filler},"a key longer than sixteen → characters":1,"→ short":2}`)],
    ['dense CJK', Buffer.from(JSON.stringify({ text: '我们的季度报告显示收入增长了百分之十二。'.repeat(4000) }))],
    ['short', Buffer.from('{"a":"→","b":[1,2]}')],
  ];
  for (const [label, bytes] of cases) assertSameParse(bytes, label);
  const proto = parseJsonUtf8(cases[4][1]) as Record<string, unknown>;
  assert.equal(Object.getPrototypeOf(proto), Object.prototype, 'a "__proto__" key stays a key');
  assert.deepEqual(Object.keys(proto), ['a', '__proto__', 'ключ', 'k']);

  const invalidUtf8 = Buffer.concat([Buffer.from(`{"a":${filler},"b":"`), Buffer.from([0xe2, 0x86]), Buffer.from('"}')]);
  assertSameParse(invalidUtf8, 'invalid UTF-8: replacement characters as toString places them');
  const invalidJson = Buffer.from(`{"a":${filler},"b":→}`);
  assert.throws(() => JSON.parse(invalidJson.toString('utf8')), SyntaxError);
  assert.throws(() => parseJsonUtf8(invalidJson), SyntaxError);
});
