import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { validateMessagesRequest } from '../../src/formats/anthropic-messages';
import { renderError } from '../../src/errors';

const fixture = (name: string) => JSON.parse(readFileSync(path.join(__dirname, '../../../test/fixtures/chat-translation', name), 'utf8'));

const minimal = () => ({ model: 'claude-sonnet-4-5', max_tokens: 256, messages: [{ role: 'user', content: 'Hello' }] });

/** Asserts a 400 whose message and param name the field. */
function rejects(body: unknown, param: string, message: string): void {
  assert.throws(() => validateMessagesRequest(body), (error: any) => {
    assert.equal(error.status, 400);
    assert.equal(error.param, param);
    assert.equal(error.message, message);
    return true;
  });
}

test('a full realistic request is accepted and summarised', () => {
  const body = fixture('anthropic-request.json');
  const info = validateMessagesRequest(body);
  assert.equal(info.model, 'claude-sonnet-4-5');
  assert.equal(info.stream, true);
  assert.equal(info.maxTokens, 1024);
  assert.equal(info.hasImages, true);
  assert.equal(info.messageCount, 5);
  // the base64 image's data is left out of the bytes the prompt is estimated from; the URL image is counted as an image
  assert.equal(info.imageCount, 2);
  assert.equal(info.mediaBytes, 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=='.length);
});

test('a minimal request: text only, not streamed', () => {
  assert.deepEqual(validateMessagesRequest(minimal()), {
    model: 'claude-sonnet-4-5', stream: false, maxTokens: 256, hasImages: false, imageCount: 0, hasDocuments: false, mediaBytes: 0, messageCount: 1, jsonSchema: false,
  });
});

test('images inside tool results count as images', () => {
  const body = {
    ...minimal(),
    messages: [
      { role: 'user', content: 'look' },
      { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'screenshot', input: {} }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: [{ type: 'image', source: { type: 'url', url: 'https://example.com/a.png' } }] }] },
    ],
  };
  assert.equal(validateMessagesRequest(body).hasImages, true);
});

test('required fields are named', () => {
  rejects([], 'body', 'body: must be a JSON object');
  rejects({ max_tokens: 10, messages: [] }, 'model', 'model: field required');
  rejects({ ...minimal(), model: '' }, 'model', 'model: must be a non-empty string');
  const { max_tokens: _dropped, ...withoutMax } = minimal();
  rejects(withoutMax, 'max_tokens', 'max_tokens: field required');
  // 0 warms the prompt cache upstream: valid there, so valid here
  assert.equal(validateMessagesRequest({ ...minimal(), max_tokens: 0 }).maxTokens, 0);
  rejects({ ...minimal(), max_tokens: -1 }, 'max_tokens', 'max_tokens: must be a non-negative integer');
  rejects({ ...minimal(), max_tokens: 1.5 }, 'max_tokens', 'max_tokens: must be a non-negative integer');
  rejects({ ...minimal(), max_tokens: 1e300 }, 'max_tokens', 'max_tokens: must be a non-negative integer');
  rejects({ model: 'm', max_tokens: 1 }, 'messages', 'messages: field required');
  rejects({ ...minimal(), messages: [] }, 'messages', 'messages: must be a non-empty array');
});

test('message and block errors carry their path', () => {
  rejects({ ...minimal(), messages: [{ role: 'tool', content: 'x' }] }, 'messages.0.role', 'messages.0.role: must be user, assistant or system');
  rejects({ ...minimal(), messages: [{ role: 'system', content: [{ type: 'image' }] }] }, 'messages.0.content.0', 'messages.0.content.0: must be a text block');
  rejects({ ...minimal(), messages: [{ role: 'user' }] }, 'messages.0.content', 'messages.0.content: field required');
  rejects({ ...minimal(), messages: [{ role: 'user', content: 5 }] }, 'messages.0.content', 'messages.0.content: must be a string or an array of content blocks');
  rejects({ ...minimal(), messages: [{ role: 'user', content: [] }] }, 'messages.0.content', 'messages.0.content: must not be empty');
  rejects({ ...minimal(), messages: [{ role: 'assistant', content: '' }, { role: 'user', content: 'x' }] }, 'messages.0.content', 'messages.0.content: must not be empty');
  rejects({ ...minimal(), messages: [{ role: 'user', content: [{ type: 'text' }] }] }, 'messages.0.content.0.text', 'messages.0.content.0.text: field required');
  rejects({ ...minimal(), messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'file' } }] }] },
    'messages.0.content.0.source.file_id', 'messages.0.content.0.source.file_id: field required');
  rejects({ ...minimal(), messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'path', path: '/etc' } }] }] },
    'messages.0.content.0.source.type', 'messages.0.content.0.source.type: must be base64, url or file');
  rejects({ ...minimal(), messages: [{ role: 'user', content: [{ type: 'document', source: { type: 'zip' } }] }] },
    'messages.0.content.0.source.type', 'messages.0.content.0.source.type: must be base64, text, content, url or file');
  rejects({ ...minimal(), messages: [{ role: 'user', content: [{ type: 'document', source: { type: 'content', content: [{ type: 'tool_use' }] } }] }] },
    'messages.0.content.0.source.content.0', 'messages.0.content.0.source.content.0: must be a text or image block');
  rejects({ ...minimal(), messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'base64', data: 'AAAA' } }] }] },
    'messages.0.content.0.source.media_type', 'messages.0.content.0.source.media_type: field required');
  rejects({ ...minimal(), messages: [{ role: 'user', content: [{ type: 'tool_use', id: 't', name: 'n', input: {} }] }] },
    'messages.0.content.0', 'messages.0.content.0: tool_use blocks belong in assistant messages');
  rejects({ ...minimal(), messages: [{ role: 'assistant', content: [{ type: 'tool_use', id: 't', name: 'n', input: 'x' }] }] },
    'messages.0.content.0.input', 'messages.0.content.0.input: must be an object');
  rejects({ ...minimal(), messages: [{ role: 'user', content: [{ type: 'tool_result' }] }] },
    'messages.0.content.0.tool_use_id', 'messages.0.content.0.tool_use_id: field required');
});

test('optional parameters are range-checked', () => {
  rejects({ ...minimal(), temperature: 1.5 }, 'temperature', 'temperature: must be a number between 0 and 1');
  rejects({ ...minimal(), top_p: -0.1 }, 'top_p', 'top_p: must be a number between 0 and 1');
  rejects({ ...minimal(), top_k: -1 }, 'top_k', 'top_k: must be a non-negative integer');
  rejects({ ...minimal(), stream: 'yes' }, 'stream', 'stream: must be a boolean');
  rejects({ ...minimal(), stop_sequences: 'END' }, 'stop_sequences', 'stop_sequences: must be an array of strings');
  rejects({ ...minimal(), system: [{ type: 'image' }] }, 'system.0', 'system.0: must be a text block');
  rejects({ ...minimal(), system: 7 }, 'system', 'system: must be a string or an array of text blocks');
  rejects({ ...minimal(), metadata: 'x' }, 'metadata', 'metadata: must be an object');
  rejects({ ...minimal(), tools: [{ name: 'f' }] }, 'tools.0.input_schema', 'tools.0.input_schema: field required');
  rejects({ ...minimal(), tools: [{ input_schema: {} }] }, 'tools.0.name', 'tools.0.name: field required');
  rejects({ ...minimal(), tool_choice: { type: 'required' } }, 'tool_choice.type', 'tool_choice.type: must be auto, any, tool or none');
  rejects({ ...minimal(), tool_choice: { type: 'tool' } }, 'tool_choice.name', 'tool_choice.name: field required');
  rejects({ ...minimal(), thinking: { type: 'enabled' } }, 'thinking.budget_tokens', 'thinking.budget_tokens: field required');
  rejects({ ...minimal(), thinking: { budget_tokens: 1024 } }, 'thinking.type', 'thinking.type: must be a string such as adaptive, enabled or disabled');
  rejects({ ...minimal(), output_config: { format: { type: 'json_schema' } } }, 'output_config.format.schema', 'output_config.format.schema: field required');
  rejects({ ...minimal(), output_config: { format: { type: 'xml' } } }, 'output_config.format.type', 'output_config.format.type: must be json_schema');
});

test('a final assistant turn (prefill) may be empty', () => {
  const body = { ...minimal(), messages: [{ role: 'user', content: 'Hi' }, { role: 'assistant', content: '' }] };
  assert.equal(validateMessagesRequest(body).messageCount, 2);
});

test('server tools, documents and newer block types pass untouched', () => {
  const body = {
    ...minimal(),
    tools: [{ type: 'web_search_20250305', name: 'web_search', max_uses: 3 }],
    messages: [
      { role: 'user', content: [{ type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: 'JVBERi0=' } }, { type: 'text', text: 'Summarise' }] },
      { role: 'assistant', content: [{ type: 'redacted_thinking', data: 'abc' }, { type: 'server_tool_use', id: 's1', name: 'web_search', input: { query: 'x' } }] },
      { role: 'user', content: 'go on' },
    ],
    thinking: { type: 'disabled' },
  };
  assert.equal(validateMessagesRequest(body).messageCount, 3);
});

test('inline media: the base64 data of images (tool results and document contents included) and PDF documents is summed, to be left out of the estimate', () => {
  const image = (data: string) => ({ type: 'image', source: { type: 'base64', media_type: 'image/png', data } });
  const info = validateMessagesRequest({
    ...minimal(),
    messages: [
      { role: 'user', content: [image('a'.repeat(100)), { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: 'b'.repeat(1000) } }] },
      { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'shot', input: {} }] },
      { role: 'user', content: [
        { type: 'tool_result', tool_use_id: 't1', content: [image('c'.repeat(10))] },
        { type: 'document', source: { type: 'content', content: [image('d'.repeat(1)), { type: 'text', text: 'caption' }] } },
      ] },
    ],
  });
  assert.equal(info.mediaBytes, 1111);
  assert.equal(info.imageCount, 3);
  assert.equal(info.hasDocuments, true);
});

test('a validation error renders as an Anthropic error body', () => {
  let caught: unknown;
  try { validateMessagesRequest({ model: 'm', messages: [{ role: 'user', content: 'x' }] }); } catch (error) { caught = error; }
  const rendered = renderError(caught as any, 'anthropic');
  assert.equal(rendered.status, 400);
  assert.deepEqual(JSON.parse(rendered.body), { type: 'error', error: { type: 'invalid_request_error', message: 'max_tokens: field required' } });
});

test('the shapes @anthropic-ai/sdk 1.12 types allow pass: system turns, every thinking type, file/url/text/content sources, nameless server tools', () => {
  for (const thinking of [{ type: 'adaptive', display: 'omitted' }, { type: 'enabled', budget_tokens: 1024, display: 'summarized' }, { type: 'disabled' }, { type: 'between_tools' }]) {
    assert.equal(validateMessagesRequest({ ...minimal(), thinking }).model, 'claude-sonnet-4-5', JSON.stringify(thinking));
  }
  const info = validateMessagesRequest({
    ...minimal(),
    output_config: { effort: 'high', format: { type: 'json_schema', schema: { type: 'object' } } },
    context_management: { edits: [{ type: 'clear_thinking_20251015', keep: 'all' }] },
    tools: [{ type: 'computer_toolset_20260801' }, { type: 'web_fetch_20260318', name: 'web_fetch' }],
    messages: [
      { role: 'user', content: [
        { type: 'image', source: { type: 'file', file_id: 'file_011' } },
        { type: 'document', source: { type: 'file', file_id: 'file_012' } },
        { type: 'document', source: { type: 'url', url: 'https://example.com/a.pdf' } },
        { type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'plain words' }, title: 'T', context: 'C' },
        { type: 'document', source: { type: 'content', content: [{ type: 'text', text: 'inner' }] } },
        { type: 'search_result', source: 'https://example.com', title: 'R', content: [{ type: 'text', text: 'found' }] },
        { type: 'text', text: 'Summarise' },
      ] },
      { role: 'system', content: [{ type: 'text', text: 'Environment: linux' }] },
      { role: 'system', content: 'Be brief.' },
    ],
  });
  assert.equal(info.messageCount, 3);
  assert.equal(info.hasImages, true);
  assert.equal(info.hasDocuments, true);
  assert.equal(info.jsonSchema, true);
  assert.equal(info.mediaBytes, 0, 'no inline media: text documents, URLs and files are in the bytes or not in the request');
});
