// Writes test/fixtures/clients/: real request bodies of current clients, captured by pointing each
// client at the mock upstream (which answers in the real wire formats and records every request).
// Run after a build: `node dist/scripts/capture-client-fixtures.js`. The clients get a placeholder
// key that is checked never to appear in a body; ids that identify a machine or a session are
// replaced with fixed values, so the corpus holds no secret and stays stable between captures.
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { createAnthropic } from '@ai-sdk/anthropic';
import { createOpenAI } from '@ai-sdk/openai';
import { generateText, jsonSchema, Output, tool } from 'ai';
import { ChatAnthropic } from '@langchain/anthropic';
import { ChatOpenAI } from '@langchain/openai';
import { startMockUpstream, type MockUpstream } from './mock-upstream';

const ROOT = join(__dirname, '..', '..');
const OUT = join(ROOT, 'test', 'fixtures', 'clients');
const KEY = 'sk-capture-placeholder-not-a-secret';
const CLAUDE_MODEL = 'claude-sonnet-4-6';
const GPT_MODEL = 'gpt-4o-mini';
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=';
const CITY_SCHEMA = { type: 'object', properties: { city: { type: 'string' }, population: { type: 'integer' } }, required: ['city', 'population'], additionalProperties: false };
const WEATHER_TOOL = { name: 'get_weather', description: 'Current weather of a city', input_schema: { type: 'object' as const, properties: { city: { type: 'string' } }, required: ['city'] } };

function version(name: string): string {
  return (JSON.parse(readFileSync(join(ROOT, 'node_modules', name, 'package.json'), 'utf8')) as { version: string }).version;
}

/** Fixed values for what identifies a machine, a user or a session. */
function scrub(text: string): string {
  return text
    .replace(/[0-9a-f]{64}/g, '0'.repeat(64))
    .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, '00000000-0000-4000-8000-000000000000')
    .replace(/\/tmp\/tollgate-capture-[A-Za-z0-9]+/g, '/home/user');
}

function save(mock: MockUpstream, dialect: 'anthropic' | 'openai', name: string, client: string, note: string, from = 0): void {
  const recorded = mock.requests.slice(from).filter((request) => request.method === 'POST');
  if (recorded.length === 0) throw new Error(`${name}: the client sent nothing`);
  const request = recorded[0];
  const text = scrub(JSON.stringify(request.body));
  if (text.includes(KEY)) throw new Error(`${name}: the key reached the body`);
  mkdirSync(join(OUT, dialect), { recursive: true });
  const fixture = { client, note, path: request.path.replace(/\?.*$/, ''), body: JSON.parse(text) };
  writeFileSync(join(OUT, dialect, `${name}.json`), `${JSON.stringify(fixture, null, 1)}\n`);
  console.log(`${dialect}/${name}.json ${text.length} bytes`);
}

function runClaude(baseUrl: string, env: Record<string, string>, model = CLAUDE_MODEL): Promise<void> {
  const home = mkdtempSync(join(tmpdir(), 'tollgate-capture-'));
  return new Promise<void>((resolve, reject) => {
    const child = spawn(join(ROOT, 'node_modules', '.bin', 'claude'), ['-p', 'What files are in this directory?', '--output-format', 'json', '--model', model], {
      cwd: home, stdio: ['ignore', 'pipe', 'inherit'],
      env: {
        PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, ANTHROPIC_BASE_URL: baseUrl, ANTHROPIC_API_KEY: KEY,
        DISABLE_TELEMETRY: '1', DISABLE_ERROR_REPORTING: '1', DISABLE_AUTOUPDATER: '1', CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1', ...env,
      },
    });
    child.stdout.resume();
    child.on('error', reject);
    child.on('exit', () => { rmSync(home, { recursive: true, force: true }); resolve(); });
  });
}

async function main(): Promise<void> {
  const mock = await startMockUpstream({ chunks: 4 });
  const anthropic = new Anthropic({ apiKey: KEY, baseURL: mock.url, maxRetries: 0 });
  const openai = new OpenAI({ apiKey: KEY, baseURL: `${mock.url}/v1`, maxRetries: 0 });
  const ai = { anthropic: createAnthropic({ apiKey: KEY, baseURL: `${mock.url}/v1` }), openai: createOpenAI({ apiKey: KEY, baseURL: `${mock.url}/v1` }) };
  const claudeCode = `Claude Code ${version('@anthropic-ai/claude-code')}`;
  const anthropicSdk = `@anthropic-ai/sdk ${version('@anthropic-ai/sdk')}`;
  const openaiSdk = `openai ${version('openai')}`;
  const aiSdk = `ai ${version('ai')}`;
  const capture = async (dialect: 'anthropic' | 'openai', name: string, client: string, note: string, run: () => Promise<unknown>) => {
    const from = mock.requests.length;
    try { await run(); } catch (error) { console.log(`${name}: the client reported ${String(error).slice(0, 120)} (the request is what counts)`); }
    save(mock, dialect, name, client, note, from);
  };
  try {
    await capture('anthropic', 'claude-code-default', claudeCode, 'claude -p with its default tools (tool search on): system turn inside messages, adaptive thinking, output_config.effort, context_management', () => runClaude(mock.url, {}));
    await capture('anthropic', 'claude-code-all-tools', claudeCode, 'claude -p with ENABLE_TOOL_SEARCH=false: every tool sent up front', () => runClaude(mock.url, { ENABLE_TOOL_SEARCH: 'false' }));
    await capture('anthropic', 'claude-code-unknown-model', claudeCode, 'claude -p --model with a name it does not know (a gateway model): its environment goes in a role "system" turn inside messages',
      () => runClaude(mock.url, {}, 'tollgate-house-model'));
    await capture('anthropic', 'anthropic-sdk-thinking-adaptive', anthropicSdk, 'adaptive thinking with an effort, streamed', async () => {
      const stream = anthropic.messages.stream({ model: CLAUDE_MODEL, max_tokens: 2048, thinking: { type: 'adaptive', display: 'summarized' }, output_config: { effort: 'low' }, messages: [{ role: 'user', content: 'Why is the sky blue? One sentence.' }] });
      await stream.finalMessage();
    });
    await capture('anthropic', 'anthropic-sdk-thinking-enabled', anthropicSdk, 'manual extended thinking with a budget', () => anthropic.messages.create({
      model: CLAUDE_MODEL, max_tokens: 3000, thinking: { type: 'enabled', budget_tokens: 1024 }, messages: [{ role: 'user', content: 'What is 17 * 23?' }],
    }));
    await capture('anthropic', 'anthropic-sdk-structured', anthropicSdk, 'structured output: output_config.format json_schema', () => anthropic.messages.create({
      model: CLAUDE_MODEL, max_tokens: 256, output_config: { format: { type: 'json_schema', schema: CITY_SCHEMA } }, messages: [{ role: 'user', content: 'The largest city of France, as JSON.' }],
    }));
    await capture('anthropic', 'anthropic-sdk-tool-result', anthropicSdk, 'a tool round trip: tool_use, tool_result (one an error), a system turn, cache_control', () => anthropic.messages.create({
      model: CLAUDE_MODEL, max_tokens: 256, tools: [WEATHER_TOOL], tool_choice: { type: 'auto' },
      system: [{ type: 'text', text: 'You answer weather questions.', cache_control: { type: 'ephemeral' } }],
      messages: [
        { role: 'user', content: 'Weather in Paris and Oslo?' },
        { role: 'assistant', content: [{ type: 'text', text: 'Checking both.' }, { type: 'tool_use', id: 'toolu_01', name: 'get_weather', input: { city: 'Paris' } }, { type: 'tool_use', id: 'toolu_02', name: 'get_weather', input: { city: 'Oslo' } }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_01', content: '18 C, sunny' }, { type: 'tool_result', tool_use_id: 'toolu_02', content: [{ type: 'text', text: 'station offline' }], is_error: true }] },
        { role: 'system', content: 'Answer in one line.' },
      ],
    }));
    await capture('anthropic', 'anthropic-sdk-documents', anthropicSdk, 'an image and documents of every inline source type (base64 PDF, text, content)', () => anthropic.messages.create({
      model: CLAUDE_MODEL, max_tokens: 256, messages: [{ role: 'user', content: [
        { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } },
        { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: 'JVBERi0xLjQKJcfsj6IK' }, title: 'Report' },
        { type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'Revenue grew 12%.' }, title: 'Notes', context: 'Q3' },
        { type: 'document', source: { type: 'content', content: [{ type: 'text', text: 'Costs fell 3%.' }] } },
        { type: 'text', text: 'Summarise all of it.' },
      ] }],
    }));
    await capture('anthropic', 'ai-sdk-anthropic-structured', aiSdk, 'generateText with Output.object through @ai-sdk/anthropic', () => generateText({
      model: ai.anthropic(CLAUDE_MODEL), output: Output.object({ schema: jsonSchema(CITY_SCHEMA) }), prompt: 'The largest city of France.', maxRetries: 0,
    }));
    await capture('anthropic', 'ai-sdk-anthropic-tools', aiSdk, 'generateText with a tool through @ai-sdk/anthropic', () => generateText({
      model: ai.anthropic(CLAUDE_MODEL), prompt: 'Weather in Paris?', maxRetries: 0,
      tools: { get_weather: tool({ description: 'Current weather of a city', inputSchema: jsonSchema({ type: 'object', properties: { city: { type: 'string' } }, required: ['city'] }) }) },
    }));
    await capture('anthropic', 'langchain-anthropic-structured', `@langchain/anthropic ${version('@langchain/anthropic')}`, 'withStructuredOutput (a forced tool)', () =>
      new ChatAnthropic({ model: CLAUDE_MODEL, apiKey: KEY, anthropicApiUrl: mock.url, maxRetries: 0 }).withStructuredOutput(CITY_SCHEMA, { name: 'city' }).invoke('The largest city of France.'));

    await capture('openai', 'openai-sdk-structured', openaiSdk, 'response_format json_schema (strict)', () => openai.chat.completions.create({
      model: GPT_MODEL, messages: [{ role: 'user', content: 'The largest city of France, as JSON.' }],
      response_format: { type: 'json_schema', json_schema: { name: 'city', schema: CITY_SCHEMA, strict: true } },
    }));
    await capture('openai', 'openai-sdk-tool-result', openaiSdk, 'a tool round trip, streamed with include_usage', async () => {
      const stream = await openai.chat.completions.create({
        model: GPT_MODEL, stream: true, stream_options: { include_usage: true },
        tools: [{ type: 'function', function: { name: 'get_weather', description: 'Current weather of a city', parameters: WEATHER_TOOL.input_schema } }],
        messages: [
          { role: 'system', content: 'You answer weather questions.' },
          { role: 'user', content: 'Weather in Paris?' },
          { role: 'assistant', content: null, tool_calls: [{ id: 'call_01', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] },
          { role: 'tool', tool_call_id: 'call_01', content: '18 C, sunny' },
        ],
      });
      for await (const _chunk of stream) { /* drain */ }
    });
    await capture('openai', 'openai-sdk-reasoning', openaiSdk, 'reasoning_effort with max_completion_tokens', () => openai.chat.completions.create({
      model: GPT_MODEL, reasoning_effort: 'low', max_completion_tokens: 4000, messages: [{ role: 'developer', content: 'Think, then answer.' }, { role: 'user', content: 'What is 17 * 23?' }],
    }));
    await capture('openai', 'ai-sdk-openai-structured', aiSdk, 'generateText with Output.object through @ai-sdk/openai chat', () => generateText({
      model: ai.openai.chat(GPT_MODEL), output: Output.object({ schema: jsonSchema(CITY_SCHEMA) }), prompt: 'The largest city of France.', maxRetries: 0,
    }));
    await capture('openai', 'langchain-openai-structured', `@langchain/openai ${version('@langchain/openai')}`, 'withStructuredOutput', () =>
      new ChatOpenAI({ model: GPT_MODEL, apiKey: KEY, configuration: { baseURL: `${mock.url}/v1` }, maxRetries: 0 }).withStructuredOutput(CITY_SCHEMA, { name: 'city' }).invoke('The largest city of France.'));
  } finally {
    await mock.close();
  }
}

main().catch((error) => { console.error(error); process.exitCode = 1; });
