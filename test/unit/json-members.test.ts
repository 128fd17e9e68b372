// topLevelMemberCount counts the members of a JSON object's top level as written, repeated keys
// included, so repeatsTopLevelKey tells a body whose bytes an upstream could read otherwise than
// JSON.parse did. The cases are built member by member, so the expected count is known without
// parsing: random keys and values, nesting, strings with escaped quotes and backslashes at every
// position (short strings and long ones, which the scan skips by search), CJK and astral text,
// and whitespace between every token.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { repeatsTopLevelKey, topLevelMemberCount } from '../../src/formats/json-value';

function generator(seed: number): () => number {
  let state = seed;
  return () => { state = (state * 48271) % 2147483647; return state / 2147483647; };
}

const PIECES = ['a', 'model', ' ', '"', '\\', '\\"', '"\\', '{', '}', '[', ']', ':', ',', '中文', '→', '😀', '\n', '\u0000', '\\u0022', 'xyz'];

function randomString(random: () => number): string {
  const length = random() < 0.5 ? Math.floor(random() * 8) : Math.floor(random() * 200);
  let text = '';
  for (let index = 0; index < length; index += 1) text += PIECES[Math.floor(random() * PIECES.length)];
  return text;
}

function space(random: () => number): string {
  return random() < 0.7 ? '' : [' ', '\n', '\t', '\r\n  '][Math.floor(random() * 4)];
}

function randomValue(random: () => number, depth: number): string {
  const pick = random();
  if (depth > 4 || pick < 0.3) return JSON.stringify(randomString(random));
  if (pick < 0.4) return String(Math.floor(random() * 1e6) / 100);
  if (pick < 0.45) return ['true', 'false', 'null'][Math.floor(random() * 3)];
  if (pick < 0.7) {
    const items = Array.from({ length: Math.floor(random() * 4) }, () => space(random) + randomValue(random, depth + 1) + space(random));
    return `[${items.join(',')}]`;
  }
  return randomObject(random, depth + 1, Math.floor(random() * 4), false).text;
}

/** An object of `count` members as text; with `repeat`, some of its keys appear more than once. */
function randomObject(random: () => number, depth: number, count: number, repeat: boolean): { text: string; members: number; keys: number } {
  const keys: string[] = [];
  for (let index = 0; index < count; index += 1) {
    const reuse = (repeat || random() < 0.1) && keys.length > 0 && random() < 0.5;
    keys.push(reuse ? keys[Math.floor(random() * keys.length)] : randomString(random) + String(index));
  }
  const members = keys.map((key) => `${space(random)}${JSON.stringify(key)}${space(random)}:${space(random)}${randomValue(random, depth)}${space(random)}`);
  return { text: `{${members.join(',')}}`, members: keys.length, keys: new Set(keys).size };
}

test('the members of the top level as written, on 3,000 random objects', () => {
  const random = generator(29);
  let repeated = 0;
  for (let round = 0; round < 3_000; round += 1) {
    const { text, members, keys } = randomObject(random, 0, Math.floor(random() * 9), random() < 0.3);
    const raw = Buffer.from(space(random) + text + space(random));
    const parsed = JSON.parse(raw.toString('utf8')) as Record<string, unknown>;
    assert.equal(Object.keys(parsed).length, keys, text);
    assert.equal(topLevelMemberCount(raw), members, text);
    assert.equal(repeatsTopLevelKey(raw, parsed), members !== keys, text);
    if (members !== keys) repeated += 1;
  }
  assert.ok(repeated > 300, `only ${repeated} cases repeated a key`);
});

test('a repeated key is found wherever the members sit, beside long strings and deep values', () => {
  const longText = `${'x'.repeat(100)}\\"${'中'.repeat(50)}\\\\`;
  const cases: Array<[string, boolean]> = [
    ['{"model":"a","model":"b"}', true],
    ['{"model":"a","messages":[{"model":"b"}],"n":1}', false],
    [`{"messages":[{"content":"${longText}"}],"model":"a","model":"b"}`, true],
    [`{"messages":[{"content":"${longText}"}],"model":"a"}`, false],
    [`{"a":"${'\\\\'.repeat(40)}","b":{"c":[[[{"d":"}"}]]]},"a":1}`, true],
    ['{"a":"\\\\","b":"\\"","c":":"}', false],
    ['{ "a" : 1 , "a" : 2 }', true],
    ['{}', false],
  ];
  for (const [text, repeats] of cases) {
    const raw = Buffer.from(text);
    assert.equal(repeatsTopLevelKey(raw, JSON.parse(text) as Record<string, unknown>), repeats, text);
  }
});

