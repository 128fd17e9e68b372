// The Vercel AI SDK (`ai` with @ai-sdk/openai and @ai-sdk/anthropic) and LangChain JS
// (@langchain/openai, @langchain/anthropic) through every channel kind: text, streams, tools and
// images. The usage each library reports equals the usage record.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { generateText, jsonSchema, streamText, tool } from 'ai';
import { HumanMessage } from '@langchain/core/messages';
import { PNG_BASE64 } from '../integration/messages-harness';
import { aiProviders, anthropicClient, assertBilledAsSeen, CHANNEL_KINDS, langchainAnthropic, langchainOpenAI, MODELS, useClientsSetup } from './harness';

const WEATHER = tool({ description: 'Current weather of a city', inputSchema: jsonSchema<{ city: string }>({ type: 'object', properties: { city: { type: 'string' } }, required: ['city'] }) });

describe('Vercel AI SDK and LangChain', () => {
  const fixture = useClientsSetup();
  const url = () => fixture.setup.url;

  for (const kind of CHANNEL_KINDS) {
    test(`ai: generateText and streamText with @ai-sdk/openai (chat) and @ai-sdk/anthropic through the ${kind} channel`, async () => {
      const key = fixture.setup.keys[kind];
      const providers = aiProviders(url(), key.key);
      const cases = [
        { label: 'openai', model: providers.openai.chat(MODELS.gpt), id: MODELS.gpt },
        { label: 'anthropic', model: providers.anthropic(MODELS.claude), id: MODELS.claude },
      ];
      for (const { label, model, id } of cases) {
        const generated = await generateText({ model, prompt: 'Say hello.', maxOutputTokens: 40, maxRetries: 0 });
        assert.ok(generated.text.length > 0, `${label}: text`);
        assertBilledAsSeen(await fixture.lastRecord(key.id), id, { prompt: generated.usage.inputTokens!, completion: generated.usage.outputTokens! });

        const streamed = streamText({ model, prompt: 'Say hello.', maxOutputTokens: 40, maxRetries: 0 });
        let text = '';
        for await (const piece of streamed.textStream) text += piece;
        assert.ok(text.length > 0, `${label}: streamed text`);
        const usage = await streamed.usage;
        assertBilledAsSeen(await fixture.lastRecord(key.id), id, { prompt: usage.inputTokens!, completion: usage.outputTokens! });
      }
      await fixture.settled(`ai ${kind}`);
    });

    test(`ai: a tool call and an image through the ${kind} channel`, async () => {
      const key = fixture.setup.keys[kind];
      const providers = aiProviders(url(), key.key);
      for (const [model, id] of [[providers.anthropic(MODELS.claude), MODELS.claude], [providers.openai.chat(MODELS.gpt), MODELS.gpt]] as const) {
        const called = await generateText({ model, prompt: 'Weather in Paris?', tools: { get_weather: WEATHER }, toolChoice: { type: 'tool', toolName: 'get_weather' }, maxRetries: 0 });
        assert.equal(called.toolCalls[0]?.toolName, 'get_weather', `${id} via ${kind}: ${JSON.stringify(called.content).slice(0, 300)}`);
        assertBilledAsSeen(await fixture.lastRecord(key.id), id, { prompt: called.usage.inputTokens!, completion: called.usage.outputTokens! });

        const seen = await generateText({
          model, maxOutputTokens: 40, maxRetries: 0,
          messages: [{ role: 'user', content: [{ type: 'text', text: 'What is in this picture?' }, { type: 'image', image: Buffer.from(PNG_BASE64, 'base64'), mediaType: 'image/png' }] }],
        });
        assertBilledAsSeen(await fixture.lastRecord(key.id), id, { prompt: seen.usage.inputTokens!, completion: seen.usage.outputTokens! });
      }
      await fixture.settled(`ai tools ${kind}`);
    });

    test(`LangChain: ChatOpenAI and ChatAnthropic invoke and stream through the ${kind} channel`, async () => {
      const key = fixture.setup.keys[kind];
      const models = [
        { id: MODELS.gpt, chat: langchainOpenAI(url(), key.key, MODELS.gpt, { maxTokens: 40 }) },
        { id: MODELS.claude, chat: langchainAnthropic(url(), key.key, MODELS.claude, { maxTokens: 40 }) },
      ];
      for (const { id, chat } of models) {
        const answer = await chat.invoke([new HumanMessage('Say hello.')]);
        assert.ok(answer.usage_metadata, `${id}: usage_metadata`);
        assertBilledAsSeen(await fixture.lastRecord(key.id), id, { prompt: answer.usage_metadata.input_tokens, completion: answer.usage_metadata.output_tokens });

        let input = 0;
        let output = 0;
        for await (const chunk of await chat.stream([new HumanMessage('Say hello.')])) {
          input += chunk.usage_metadata?.input_tokens ?? 0;
          output += chunk.usage_metadata?.output_tokens ?? 0;
        }
        // LangChain adds up what each event reports and takes the input count from message_start alone.
        // A translated stream cannot know the OpenAI upstream's count then: it shows the local count
        // (count_tokens), which is what is billed when the upstream reports none.
        const record = await fixture.lastRecord(key.id);
        if (kind === 'openai' && id === MODELS.claude) {
          const counted = await anthropicClient(url(), key.key).messages.countTokens({ model: id, messages: [{ role: 'user', content: 'Say hello.' }] });
          assert.equal(input, counted.input_tokens, 'LangChain shows message_start\'s local count');
          assert.equal(output, record.completion_tokens);
        } else assertBilledAsSeen(record, id, { prompt: input, completion: output });
      }
      await fixture.settled(`langchain ${kind}`);
    });
  }
});
