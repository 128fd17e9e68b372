import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { OpenAIStreamTail } from '../../src/formats/openai-stream-tail';
import { StreamIdentity } from '../../src/formats/openai-stream-identity';
import { canonicalUsage, normalizeUsage, parseUsageFromChatResponse, type Usage } from '../../src/formats/openai-usage';
import { SseDecoder } from '../../src/formats/sse';
import { countTokens } from '../../src/billing/tokens';

type Json = Record<string, any>;

const CREATED = 1700000000;
const UPSTREAM_USAGE = { prompt_tokens: 12, completion_tokens: 9, total_tokens: 21, prompt_tokens_details: { cached_tokens: 0 } };

function chunk(choices: Json[], extra: Json = {}): string {
  return `data: ${JSON.stringify({ id: 'chatcmpl-up1', object: 'chat.completion.chunk', created: CREATED, model: 'gpt-4o-2024-08-06', system_fingerprint: 'fp_1', choices, ...extra })}\n\n`;
}
const delta = (value: Json, finishReason: string | null = null, index = 0) => chunk([{ index, delta: value, logprobs: null, finish_reason: finishReason }]);
const PIECES = ['Hello', ', wor', 'ld "quoted" \\ é', ' 🌍\n中文'];
const CONTENT = PIECES.join('');

function openAIStream(options: { usage?: boolean; done?: boolean; finish?: boolean } = {}): string[] {
  const events = [delta({ role: 'assistant', content: '' }), ...PIECES.map((piece) => delta({ content: piece }))];
  if (options.finish ?? true) events.push(delta({}, 'stop'));
  if (options.usage ?? true) events.push(chunk([], { usage: UPSTREAM_USAGE }));
  if (options.done ?? true) events.push('data: [DONE]\n\n');
  return events;
}

interface Run {
  forwarded: Buffer;
  output: Buffer;
  result: ReturnType<OpenAIStreamTail['finish']>;
  textBytes: number;
}

function run(chunks: Array<string | Buffer>, options: { maxTextBytes?: number; fallback?: (text: string) => Usage } = {}): Run {
  const tail = new OpenAIStreamTail({ model: 'client-model', maxTextBytes: options.maxTextBytes });
  const forwarded: Buffer[] = [];
  for (const piece of chunks) {
    const out = tail.push(Buffer.isBuffer(piece) ? piece : Buffer.from(piece));
    if (out !== null) forwarded.push(out);
  }
  const result = tail.finish(options.fallback);
  const forwardedBytes = Buffer.concat(forwarded);
  return { forwarded: forwardedBytes, output: Buffer.concat([forwardedBytes, Buffer.from(result.tail)]), result, textBytes: tail.completionTextBytes() };
}

function dataEvents(bytes: Buffer): string[] {
  const decoder = new SseDecoder();
  return [...decoder.push(bytes), ...decoder.end()].map((event) => event.data);
}

function contentOf(bytes: Buffer): string {
  return dataEvents(bytes).filter((data) => data !== '[DONE]')
    .map((data) => JSON.parse(data).choices.map((choice: Json) => choice.delta.content ?? '').join('')).join('');
}

test('forwards ordinary events verbatim and ends with one empty-delta chunk carrying finish_reason and usage, then [DONE]', () => {
  const events = openAIStream();
  const { forwarded, output, result, textBytes } = run(events);
  assert.equal(forwarded.toString(), events.slice(0, 5).join(''), 'content events pass through byte for byte');
  const data = dataEvents(output);
  assert.equal(data.at(-1), '[DONE]');
  assert.equal(data.filter((item) => item === '[DONE]').length, 1);
  const final = JSON.parse(data.at(-2)!);
  assert.deepEqual(final, {
    id: 'chatcmpl-up1', object: 'chat.completion.chunk', created: CREATED, model: 'client-model', system_fingerprint: 'fp_1',
    choices: [{ index: 0, delta: {}, finish_reason: 'stop' }], usage: UPSTREAM_USAGE,
  });
  assert.equal(contentOf(output), CONTENT);
  assert.equal(result.usageSource, 'upstream');
  assert.equal(result.finishReason, 'stop');
  assert.equal(result.sawDone, true);
  assert.equal(textBytes, Buffer.byteLength(CONTENT));
});

test('the official openai client reads the rewritten stream: full text, finish_reason and usage on the last chunk', async () => {
  const { output } = run(openAIStream());
  const client = new OpenAI({
    apiKey: 'sk-test', baseURL: 'http://127.0.0.1:9/v1', maxRetries: 0,
    fetch: async () => new Response(new Uint8Array(output), { headers: { 'content-type': 'text/event-stream' } }),
  });
  const stream = await client.chat.completions.create({ model: 'client-model', messages: [{ role: 'user', content: 'hi' }], stream: true });
  let text = '';
  let last: OpenAI.Chat.Completions.ChatCompletionChunk | undefined;
  for await (const item of stream) {
    text += item.choices[0]?.delta.content ?? '';
    last = item;
  }
  assert.equal(text, CONTENT);
  assert.equal(last?.choices[0].finish_reason, 'stop');
  assert.deepEqual(last?.choices[0].delta, {});
  assert.equal(last?.usage?.total_tokens, 21);
});

test('gives the same bytes however the upstream cuts its chunks, with LF or CRLF framing', () => {
  for (const framing of ['\n', '\r\n']) {
    const whole = Buffer.from(openAIStream().join('').replace(/\n/g, framing));
    const expected = run([whole]).output.toString();
    assert.equal(dataEvents(Buffer.from(expected)).at(-1), '[DONE]');
    for (let cut = 1; cut < whole.length; cut += 1) {
      assert.equal(run([whole.subarray(0, cut), whole.subarray(cut)]).output.toString(), expected, `cut at ${cut}`);
    }
    const bytes = Array.from({ length: whole.length }, (_, index) => whole.subarray(index, index + 1));
    assert.equal(run(bytes).output.toString(), expected, 'one byte at a time');
  }
});

test('without upstream usage the fallback gets the completion text and the usage is marked estimated', () => {
  let seen = '';
  const { output, result } = run(openAIStream({ usage: false }), {
    fallback: (text) => {
      seen = text;
      return { prompt_tokens: 5, completion_tokens: 7, total_tokens: 12 };
    },
  });
  assert.equal(seen, CONTENT);
  assert.equal(result.usageSource, 'estimated');
  assert.deepEqual(JSON.parse(dataEvents(output).at(-2)!).usage, { prompt_tokens: 5, completion_tokens: 7, total_tokens: 12 });
});

test('without usage and without a fallback the completion is counted with the tokenizer', () => {
  const { result } = run(openAIStream({ usage: false }));
  assert.equal(result.usage.completion_tokens, countTokens(CONTENT));
  assert.equal(result.usage.total_tokens, result.usage.completion_tokens);
});

test('content carried by the finishing chunk is re-emitted unfinished, never lost', () => {
  const events = [
    delta({ role: 'assistant', content: 'Hi' }),
    chunk([{ index: 0, delta: { content: ' there' }, finish_reason: 'length' }], { usage: UPSTREAM_USAGE }),
    'data: [DONE]\n\n',
  ];
  const { output, result } = run(events);
  const data = dataEvents(output);
  assert.equal(contentOf(output), 'Hi there');
  const reEmitted = JSON.parse(data[1]);
  assert.equal(reEmitted.choices[0].finish_reason, null);
  assert.equal(reEmitted.usage, undefined);
  assert.equal(JSON.parse(data[2]).choices[0].finish_reason, 'length');
  assert.equal(result.finishReason, 'length');
});

test('a stream cut short has no [DONE]; the tail still closes it with finish_reason stop', () => {
  const { output, result } = run(openAIStream({ usage: false, done: false, finish: false }));
  assert.equal(result.sawDone, false);
  assert.equal(result.finishReason, null);
  assert.equal(JSON.parse(dataEvents(output).at(-2)!).choices[0].finish_reason, 'stop');
});

test('look-alike text inside content is not mistaken for a terminal event', () => {
  const tricky = 'say "finish_reason":"stop", "usage":{"prompt_tokens":1} and\ndata: [DONE]';
  const events = [delta({ content: tricky }), delta({ content: '[DONE]' }), ...openAIStream().slice(-3)];
  const { forwarded, output } = run(events);
  assert.equal(forwarded.toString(), events[0] + events[1]);
  assert.equal(contentOf(output), `${tricky}[DONE]`);
});

test('CRLF framing and spaced JSON are understood', () => {
  const spaced = (value: Json) => `data: ${JSON.stringify(value).replace(/":/g, '": ').replace(/,"/g, ', "')}\r\n\r\n`;
  const events = [
    spaced({ id: 'x1', created: 5, choices: [{ index: 0, delta: { content: 'a' }, finish_reason: null }] }),
    spaced({ id: 'x1', created: 5, choices: [{ index: 0, delta: {}, finish_reason: 'stop' }], usage: UPSTREAM_USAGE }),
    'data: [DONE]\r\n\r\n',
  ];
  const { forwarded, output, result } = run(events);
  assert.equal(forwarded.toString(), events[0]);
  assert.equal(result.usageSource, 'upstream');
  assert.equal(result.sawDone, true);
  const final = JSON.parse(dataEvents(output).at(-2)!);
  assert.equal(final.id, 'x1');
  assert.equal(final.created, 5);
});

test('several choices each get a final chunk; only the last carries usage', () => {
  const events = [
    delta({ content: 'a' }, null, 0), delta({ content: 'b' }, null, 1),
    delta({}, 'stop', 1), delta({}, 'length', 0), chunk([], { usage: UPSTREAM_USAGE }), 'data: [DONE]\n\n',
  ];
  const finals = dataEvents(run(events).output).slice(-3, -1).map((data) => JSON.parse(data));
  assert.deepEqual(finals.map((item) => item.choices[0]), [
    { index: 0, delta: {}, finish_reason: 'length' }, { index: 1, delta: {}, finish_reason: 'stop' },
  ]);
  assert.equal(finals[0].usage, undefined);
  assert.deepEqual(finals[1].usage, UPSTREAM_USAGE);
});

test('text kept for counting is bounded; counts for the rest are scaled from the bytes forwarded', () => {
  const words = Array.from({ length: 400 }, (_, index) => `word${String(index).padStart(3, '0')} `);
  const events = [...words.map((word) => delta({ content: word })), 'data: [DONE]\n\n'];
  const fullText = words.join('');
  let seen = '';
  const { result, textBytes } = run(events, {
    maxTextBytes: 4096,
    fallback: (text) => {
      seen = text;
      return { prompt_tokens: 3, completion_tokens: countTokens(text), total_tokens: 0 };
    },
  });
  assert.ok(seen.length > 0 && seen.length <= 4096, `kept ${seen.length} chars`);
  assert.ok(fullText.startsWith(seen), 'the kept text is the start of the completion');
  const exact = countTokens(fullText);
  const close = (value: number, target: number) => Math.abs(value - target) / target < 0.1;
  assert.ok(close(result.usage.completion_tokens, exact), `estimate ${result.usage.completion_tokens} vs ${exact}`);
  assert.equal(result.usage.total_tokens, result.usage.completion_tokens + 3);
  assert.ok(close(textBytes, Buffer.byteLength(fullText)), `${textBytes} bytes`);
  assert.ok(close(run(events, { maxTextBytes: 4096 }).result.usage.completion_tokens, exact));
});

test('past the kept bound, events one per chunk and events cut anywhere give the same bytes, kept text and scaled count', () => {
  const words = Array.from({ length: 400 }, (_, index) => `word${String(index).padStart(3, '0')} `);
  let seed = 17;
  const random = () => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed / 2147483648; };
  for (const usage of [false, true]) {
    const events = [...words.map((word) => delta({ content: word })), delta({}, 'stop'), ...(usage ? [chunk([], { usage: UPSTREAM_USAGE })] : []), 'data: [DONE]\n\n'];
    const fallback = (text: string) => ({ prompt_tokens: 3, completion_tokens: countTokens(text), total_tokens: 0 });
    const perEvent = run(events, { maxTextBytes: 4096, fallback });
    // each chunk: the end of one event and the start of the next (the framer holds a part every time)
    const whole = Buffer.from(events.join(''));
    const cuts: Buffer[] = [];
    let at = 0;
    let eventEnd = 0;
    for (const event of events) {
      eventEnd += Buffer.byteLength(event);
      const cut = Math.min(whole.length, eventEnd + 1 + Math.floor(random() * 40));
      cuts.push(whole.subarray(at, cut));
      at = cut;
    }
    if (at < whole.length) cuts.push(whole.subarray(at));
    const cutAnywhere = run(cuts.filter((piece) => piece.length > 0), { maxTextBytes: 4096, fallback });
    assert.equal(cutAnywhere.output.toString(), perEvent.output.toString(), `usage ${usage}`);
    assert.deepEqual(cutAnywhere.result.usage, perEvent.result.usage);
    assert.equal(cutAnywhere.result.usageSource, usage ? 'upstream' : 'estimated');
    assert.equal(cutAnywhere.textBytes, perEvent.textBytes);
    assert.equal(contentOf(perEvent.output), words.join(''));
  }
});

test('once the upstream reported usage no text is kept: a whole stream in one chunk copies nothing; usage and bytes are the upstream\'s', () => {
  const whole = openAIStream().join('');
  const oneChunk = run([whole], { fallback: () => assert.fail('no local count when the upstream reported usage') });
  assert.equal(oneChunk.textBytes, 0);
  assert.equal(oneChunk.result.usageSource, 'upstream');
  assert.deepEqual(oneChunk.result.usage, UPSTREAM_USAGE);
  assert.equal(contentOf(oneChunk.output), CONTENT);
  // chunk by chunk the text before the usage is kept as before, and the client sees the same bytes
  const perEvent = run(openAIStream());
  assert.equal(perEvent.textBytes, Buffer.byteLength(CONTENT));
  assert.deepEqual(perEvent.output.toString(), oneChunk.output.toString());
});

test('tool call arguments count as completion text', () => {
  const call = (value: Json) => delta({ tool_calls: [{ index: 0, ...value }] });
  const events = [
    call({ id: 'call_1', type: 'function', function: { name: 'lookup', arguments: '' } }),
    call({ function: { arguments: '{"city":' } }), call({ function: { arguments: '"Paris"}' } }),
    delta({}, 'tool_calls'), 'data: [DONE]\n\n',
  ];
  let seen = '';
  run(events, { fallback: (text) => ((seen = text), { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 }) });
  assert.equal(seen, '{"city":"Paris"}');
});

test('nothing after [DONE] is forwarded', () => {
  const tail = new OpenAIStreamTail({ model: 'm' });
  const out = tail.push(Buffer.from(`${delta({ content: 'a' })}data: [DONE]\n\n${delta({ content: 'late' })}`));
  assert.equal(out?.toString(), delta({ content: 'a' }));
  assert.equal(tail.push(Buffer.from(delta({ content: 'later' }))), null);
  assert.equal(tail.finish().sawDone, true);
});

test('a last event without its blank line still counts', () => {
  const { output, result } = run([delta({ content: 'a' }), 'data: [DONE]\n']);
  assert.equal(result.sawDone, true);
  assert.equal(dataEvents(output).filter((data) => data === '[DONE]').length, 1);
});

test('firstContentSeen turns true with the first forwarded event; an id is generated when the upstream has none', () => {
  const tail = new OpenAIStreamTail({ model: 'm' });
  assert.equal(tail.push(Buffer.from('data: {"choices":[{"index":0,"delta":{"content":"x"}')), null);
  assert.equal(tail.firstContentSeen, false);
  assert.notEqual(tail.push(Buffer.from(',"finish_reason":null}]}\n\n')), null);
  assert.equal(tail.firstContentSeen, true);
  const final = JSON.parse(dataEvents(Buffer.from(tail.finish().tail))[0]);
  assert.match(final.id, /^chatcmpl-[0-9a-f]{24}$/);
  assert.equal(typeof final.created, 'number');
});

test('parseUsageFromChatResponse reads usage of a non-stream body', () => {
  const body = JSON.stringify({ id: 'x', object: 'chat.completion', choices: [], usage: { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 } });
  assert.deepEqual(parseUsageFromChatResponse(Buffer.from(body)), { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 });
  assert.equal(parseUsageFromChatResponse('{"choices":[]}'), undefined);
  assert.equal(parseUsageFromChatResponse('not json'), undefined);
});

test('parseUsageFromChatResponse finds usage wherever it is, pretty-printed or not, and ignores look-alikes in text', () => {
  const usage = { prompt_tokens: 5, completion_tokens: 6, total_tokens: 11, prompt_tokens_details: { cached_tokens: 2 } };
  const message = { role: 'assistant', content: 'a "usage":{"prompt_tokens":999} inside the text' };
  const last = { id: 'x', choices: [{ index: 0, message }], usage };
  const notLast = { id: 'x', usage, choices: [{ index: 0, message }], extra: { a: { b: 1 } } };
  const beforeObject = { id: 'x', choices: [], usage, system_fingerprint: 'fp', meta: { n: 1 } };
  for (const answer of [last, notLast, beforeObject]) {
    for (const text of [JSON.stringify(answer), `${JSON.stringify(answer, null, 2)}\n`]) {
      assert.deepEqual(parseUsageFromChatResponse(Buffer.from(text)), usage, text);
    }
  }
  const onlyInText = { id: 'x', choices: [{ index: 0, message }] };
  assert.equal(parseUsageFromChatResponse(Buffer.from(JSON.stringify(onlyInText))), undefined);
});

test('terminal events in the common layout are read without parsing the event, with the same result as the general path', () => {
  // each case's terminal events (the last one or two before [DONE])
  const cases: Record<string, string[]> = {
    'OpenAI: finish, then usage': [delta({}, 'stop'), chunk([], { usage: UPSTREAM_USAGE })],
    'finish and usage in one event': [chunk([{ index: 0, delta: {}, finish_reason: 'length' }], { usage: { prompt_tokens: 3, completion_tokens: 4 } })],
    'role-only delta, member after usage': [chunk([{ index: 0, delta: { role: 'assistant' }, logprobs: null, finish_reason: 'tool_calls' }], { usage: null, obfuscation: 'a}b' }),
      chunk([], { usage: { prompt_tokens: 5.6, completion_tokens: 2, total_tokens: 8 }, obfuscation: 'x' })],
    'second choice finishing': [delta({}, 'stop', 1), delta({}, 'length', 0), chunk([], { usage: UPSTREAM_USAGE })],
  };
  const plainHits: number[] = [];
  const prototype = OpenAIStreamTail.prototype as unknown as { plainTerminal(data: string): string | undefined };
  const original = prototype.plainTerminal;
  prototype.plainTerminal = function counted(this: unknown, data: string) {
    const handled = original.call(this, data);
    if (handled !== undefined) plainHits.push(1);
    return handled;
  };
  try {
    for (const [name, terminal] of Object.entries(cases)) {
      const head = openAIStream({ finish: false, usage: false, done: false });
      plainHits.length = 0;
      const plain = run([...head, ...terminal, 'data: [DONE]\n\n']);
      assert.equal(plainHits.length, terminal.length, `${name}: every terminal event took the plain path`);
      // an extra nested member takes each event off the common layout: the general path parses it
      const general = run([...head, ...terminal.map((event) => event.replace(/}\n\n$/, ',"x_nested":{"a":[1]}}\n\n')), 'data: [DONE]\n\n']);
      assert.equal(plainHits.length, terminal.length, `${name}: the altered events took the general path`);
      assert.deepEqual(plain.result.usage, general.result.usage, name);
      assert.equal(plain.result.usageSource, general.result.usageSource, name);
      assert.equal(plain.result.finishReason, general.result.finishReason, name);
      assert.equal(plain.output.toString(), general.output.toString(), name);
    }
  } finally {
    prototype.plainTerminal = original;
  }
  const both = run([...openAIStream({ finish: false, usage: false, done: false }), ...cases['second choice finishing'], 'data: [DONE]\n\n']);
  const last = new SseDecoder().push(both.output).map((event) => event.data).filter((data) => data !== '[DONE]').slice(-2);
  // one final chunk per choice, by index, the usage on the last
  assert.deepEqual(last.map((data) => (JSON.parse(data) as Json).choices[0]), [
    { index: 0, delta: {}, finish_reason: 'length' }, { index: 1, delta: {}, finish_reason: 'stop' }]);
});

test('the first event in OpenAI\'s layout gives its identity by position; any other layout is searched, with the same values', () => {
  const hits: number[] = [];
  const prototype = StreamIdentity.prototype as unknown as { inPlace(buffer: Buffer, end: number): boolean };
  const original = prototype.inPlace;
  prototype.inPlace = function counted(this: unknown, buffer: Buffer, end: number) {
    const found = original.call(this, buffer, end);
    if (found) hits.push(1);
    return found;
  };
  const identity = (events: string[]) => {
    const data = dataEvents(run(events).output).filter((item) => item !== '[DONE]');
    const final = JSON.parse(data.at(-1)!) as Json;
    return [final.id, final.created, final.system_fingerprint];
  };
  try {
    const events = openAIStream();
    assert.deepEqual(identity(events), ['chatcmpl-up1', CREATED, 'fp_1']);
    assert.equal(hits.length, 1, 'read in place');
    const layouts: Record<string, (event: string) => string> = {
      'spaces after colons': (event) => event.replace(/":/g, '": '),
      'fingerprint after choices': (event) => event.replace(',"system_fingerprint":"fp_1"', '').replace(/}\n\n$/, ',"system_fingerprint":"fp_1"}\n\n'),
      'members in another order': (event) => event.replace('{"id":"chatcmpl-up1","object":"chat.completion.chunk"', '{"object":"chat.completion.chunk","id":"chatcmpl-up1"'),
    };
    for (const [name, alter] of Object.entries(layouts)) {
      hits.length = 0;
      assert.deepEqual(identity([alter(events[0]), ...events.slice(1)]), ['chatcmpl-up1', CREATED, 'fp_1'], name);
      assert.equal(hits.length, 0, `${name}: searched`);
    }
    // no fingerprint at all: none in the tail either, whichever way it is read
    hits.length = 0;
    const bare = events.map((event) => event.replace(',"system_fingerprint":"fp_1"', ''));
    assert.deepEqual(identity(bare), ['chatcmpl-up1', CREATED, undefined]);
    assert.equal(hits.length, 0);
  } finally {
    prototype.inPlace = original;
  }
});

test('upstream usage in the layout it is billed in is re-emitted as sent; any other is written from the billed numbers', () => {
  const finalUsage = (usageJson: string) => {
    const usageEvent = chunk([], { usage: 'USAGE' }).replace('"USAGE"', usageJson);
    const { output, result } = run([...openAIStream({ usage: false, done: false }), usageEvent, 'data: [DONE]\n\n']);
    const data = dataEvents(output).filter((item) => item !== '[DONE]');
    return { text: data.at(-1)!.slice(data.at(-1)!.indexOf('"usage":') + 8, -1), result };
  };
  const canonical = '{"prompt_tokens":12,"completion_tokens":9,"total_tokens":21,"prompt_tokens_details":{"cached_tokens":4,"audio_tokens":null},"completion_tokens_details":{"reasoning_tokens":0}}';
  const asSent = finalUsage(canonical);
  assert.equal(asSent.text, canonical);
  assert.deepEqual(asSent.result.usage, JSON.parse(canonical));
  for (const other of [
    '{"completion_tokens":9,"prompt_tokens":12,"total_tokens":21}',   // another order
    '{"prompt_tokens":12,"completion_tokens":9,"total_tokens":21,"cost":0.25}',   // a member the bill does not know
    '{"prompt_tokens":12.0,"completion_tokens":9,"total_tokens":21}',
    '{"prompt_tokens":12,"completion_tokens":9,"total_tokens":21,"prompt_tokens_details":null}',
    '{"input_tokens":12,"output_tokens":9}',
  ]) {
    const written = finalUsage(other);
    assert.equal(written.text, JSON.stringify(written.result.usage), other);
    assert.deepEqual([written.result.usage.prompt_tokens, written.result.usage.completion_tokens, written.result.usage.total_tokens], [12, 9, 21], other);
  }
});

test('canonicalUsage reads exactly what JSON.parse and normalizeUsage read, or declines (differential, seeded)', () => {
  let seed = 7;
  const random = () => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed / 2147483648; };
  const pick = <T>(values: T[]): T => values[Math.floor(random() * values.length)];
  const count = () => pick([0, 1, 22, 4096, 999_999_999_999_999, 1.5, -3, null]);
  let read = 0;
  for (let round = 0; round < 2000; round += 1) {
    const members: [string, unknown][] = [['prompt_tokens', count()], ['completion_tokens', count()], ['total_tokens', count()]];
    if (random() < 0.6) members.push(['prompt_tokens_details', random() < 0.9 ? { cached_tokens: count(), ...(random() < 0.3 ? { audio_tokens: count() } : {}) } : null]);
    if (random() < 0.5) members.push(['completion_tokens_details', { reasoning_tokens: count() }]);
    if (random() < 0.1) members.push(['cost', 0.25]);
    if (random() < 0.2) members.sort(() => random() - 0.5);
    if (random() < 0.1) members.splice(2, 1);
    let text = JSON.stringify(Object.fromEntries(members));
    if (random() < 0.1) text = text.replace(/:/g, ': ');
    const fast = canonicalUsage(text);
    const parsed = normalizeUsage(JSON.parse(text));
    if (fast === undefined) continue;
    read += 1;
    assert.deepEqual(fast, parsed, text);
    assert.equal(JSON.stringify(fast), text, `re-emitting ${text} as sent is what the billed object would write`);
  }
  assert.ok(read > 200, `${read} texts read by the pattern`);
  assert.deepEqual(canonicalUsage('{"prompt_tokens":2,"completion_tokens":3,"total_tokens":5}'), { prompt_tokens: 2, completion_tokens: 3, total_tokens: 5 });
  for (const declined of ['{"prompt_tokens":02,"completion_tokens":3,"total_tokens":5}', '{"prompt_tokens":2,"completion_tokens":3}',
    '{"prompt_tokens":2,"completion_tokens":3,"total_tokens":5,"prompt_tokens_details":{"cached_tokens":{"a":1}}}']) {
    assert.equal(canonicalUsage(declined), undefined, declined);
  }
});

test('a terminal event the common layout does not cover keeps its content and its usage on the general path', () => {
  const withContent = chunk([{ index: 0, delta: { content: ' bye' }, finish_reason: 'stop' }], { usage: { prompt_tokens: 2, completion_tokens: 3, total_tokens: 5 } });
  const duplicateUsage = chunk([], { usage: UPSTREAM_USAGE }).replace(/}\n\n$/, ',"usage":{"prompt_tokens":7,"completion_tokens":1}}\n\n');
  const first = run([...openAIStream({ finish: false, usage: false, done: false }), withContent, 'data: [DONE]\n\n']);
  assert.match(first.output.toString(), /"content":" bye"/);
  assert.equal(first.result.usage.completion_tokens, 3);
  const second = run([...openAIStream({ finish: false, usage: false, done: false }), delta({}, 'stop'), duplicateUsage, 'data: [DONE]\n\n']);
  assert.deepEqual([second.result.usage.prompt_tokens, second.result.usage.completion_tokens], [7, 1], 'the last of duplicate keys wins, as JSON.parse has it');
});

test('the forwarded chunk is not held: counting reads a copy, so the upstream\'s buffer may be reused at once', () => {
  const tail = new OpenAIStreamTail({ model: 'client-model' });
  const chunk = Buffer.from(delta({ content: 'hello there' }));
  assert.equal(tail.push(chunk), chunk, 'forwarded as it came');
  chunk.fill('x');   // what a reused read buffer would do
  tail.push(Buffer.from('data: [DONE]\n\n'));
  let counted = '';
  tail.finish((text) => { counted = text; return { prompt_tokens: 1, completion_tokens: countTokens(text), total_tokens: 0 }; });
  assert.equal(counted, 'hello there');
});
