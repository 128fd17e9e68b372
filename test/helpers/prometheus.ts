// A strict reader of the Prometheus text exposition format (0.0.4), for tests: every line must be a
// HELP, a TYPE or a sample of a family whose TYPE came first; names, label names and escapes must be
// valid; no series twice; a histogram's buckets are cumulative and its +Inf bucket equals _count.
import assert from 'node:assert/strict';

export interface Sample { name: string; labels: Record<string, string>; value: number }
export interface Family { name: string; type: string; help: string; samples: Sample[] }

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const TYPES = new Set(['counter', 'gauge', 'histogram', 'summary', 'untyped']);

function parseValue(text: string, line: string): number {
  if (text === '+Inf') return Number.POSITIVE_INFINITY;
  if (text === '-Inf') return Number.NEGATIVE_INFINITY;
  if (text === 'NaN') return Number.NaN;
  assert.match(text, /^[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?$/, `not a sample value: ${line}`);
  return Number(text);
}

/** label set `{a="x",b="y"}` starting at `start`; returns the labels and the index after `}` */
function parseLabels(line: string, start: number): { labels: Record<string, string>; end: number } {
  const labels: Record<string, string> = {};
  let index = start + 1;
  while (line[index] !== '}') {
    const equals = line.indexOf('=', index);
    assert.ok(equals > index, `bad label set: ${line}`);
    const name = line.slice(index, equals);
    assert.match(name, LABEL_NAME, `bad label name "${name}": ${line}`);
    assert.equal(line[equals + 1], '"', `label value must be quoted: ${line}`);
    let value = '';
    let cursor = equals + 2;
    for (;;) {
      const char = line[cursor];
      assert.ok(char !== undefined, `unterminated label value: ${line}`);
      if (char === '"') break;
      if (char === '\\') {
        const next = line[cursor + 1];
        assert.ok(next === '\\' || next === '"' || next === 'n', `bad escape in label value: ${line}`);
        value += next === 'n' ? '\n' : next;
        cursor += 2;
      } else { value += char; cursor += 1; }
    }
    assert.ok(!(name in labels), `label ${name} twice: ${line}`);
    labels[name] = value;
    index = cursor + 1;
    if (line[index] === ',') index += 1;
  }
  return { labels, end: index + 1 };
}

/** The families of an exposition, by name; throws on anything the format does not allow. */
export function parsePrometheus(text: string): Map<string, Family> {
  const families = new Map<string, Family>();
  const seen = new Set<string>();
  const familyOf = (sample: string): Family | undefined => families.get(sample)
    ?? families.get(sample.replace(/_(bucket|sum|count)$/, ''));
  for (const line of text.split('\n')) {
    if (line === '') continue;
    if (line.startsWith('# HELP ')) {
      const [name, ...help] = line.slice(7).split(' ');
      assert.match(name, METRIC_NAME);
      const family = families.get(name) ?? { name, type: 'untyped', help: '', samples: [] };
      family.help = help.join(' ');
      families.set(name, family);
      continue;
    }
    if (line.startsWith('# TYPE ')) {
      const [name, type] = line.slice(7).split(' ');
      assert.match(name, METRIC_NAME);
      assert.ok(TYPES.has(type), `unknown type ${type}`);
      const family = families.get(name) ?? { name, type, help: '', samples: [] };
      assert.equal(family.samples.length, 0, `TYPE after samples of ${name}`);
      family.type = type;
      families.set(name, family);
      continue;
    }
    assert.ok(!line.startsWith('#'), `unknown comment line: ${line}`);
    const brace = line.indexOf('{');
    const space = line.indexOf(' ');
    const nameEnd = brace !== -1 && brace < space ? brace : space;
    const name = line.slice(0, nameEnd);
    assert.match(name, METRIC_NAME, `bad metric name: ${line}`);
    let labels: Record<string, string> = {};
    let rest = nameEnd;
    if (line[nameEnd] === '{') ({ labels, end: rest } = parseLabels(line, nameEnd));
    const valueText = line.slice(rest).trim().split(' ')[0];
    const value = parseValue(valueText, line);
    const family = familyOf(name);
    assert.ok(family, `sample before its TYPE: ${line}`);
    const identity = `${name}${JSON.stringify(Object.entries(labels).sort())}`;
    assert.ok(!seen.has(identity), `series twice: ${line}`);
    seen.add(identity);
    family.samples.push({ name, labels, value });
  }
  for (const family of families.values()) if (family.type === 'histogram') checkHistogram(family);
  return families;
}

function checkHistogram(family: Family): void {
  const groups = new Map<string, Sample[]>();
  for (const sample of family.samples) {
    if (!sample.name.endsWith('_bucket')) continue;
    const { le, ...rest } = sample.labels;
    assert.ok(le !== undefined, `bucket without le: ${family.name}`);
    const key = JSON.stringify(Object.entries(rest).sort());
    groups.set(key, [...(groups.get(key) ?? []), sample]);
  }
  for (const [key, buckets] of groups) {
    let previous = -1;
    for (const bucket of buckets) {
      assert.ok(bucket.value >= previous, `${family.name} buckets not cumulative at le=${bucket.labels.le}`);
      previous = bucket.value;
    }
    assert.equal(buckets.at(-1)!.labels.le, '+Inf', `${family.name}: last bucket is not +Inf`);
    const count = family.samples.find((sample) => sample.name === `${family.name}_count` && JSON.stringify(Object.entries(sample.labels).sort()) === key);
    assert.ok(count, `${family.name}: no _count for ${key}`);
    assert.equal(buckets.at(-1)!.value, count.value, `${family.name}: +Inf bucket ≠ _count`);
  }
}

/** The value of the one sample of `name` whose labels include `labels` (0 when there is none). */
export function sampleValue(families: Map<string, Family>, name: string, labels: Record<string, string> = {}): number {
  const family = families.get(name) ?? families.get(name.replace(/_(bucket|sum|count)$/, ''));
  const matching = (family?.samples ?? []).filter((sample) => sample.name === name
    && Object.entries(labels).every(([label, value]) => sample.labels[label] === value));
  return matching.reduce((sum, sample) => sum + sample.value, 0);
}
