import { test } from 'node:test';
import assert from 'node:assert/strict';
import { inflateSync } from 'node:zlib';
import type { ModelConfig } from '../../src/config';
import { checkImageOptions, imagePriceUsd, validateImageGeneration } from '../../src/formats/images';
import { simulateImages, SIMULATED_PNG_BASE64 } from '../../src/formats/simulated-images';

function imageModel(overrides: Partial<ModelConfig> = {}): ModelConfig {
  return {
    id: 'sim-image', owned_by: 'test', kind: 'image', price: { per_call: 0.04 }, reasoning: false, multimodal: false,
    json_mode: false, max_output_tokens: 4096, chat_image: false, groups: [], created: 1_700_000_000,
    image: {
      sizes: ['1024x1024', '1024x1792', '1792x1024'], qualities: ['standard', 'hd'], styles: ['vivid', 'natural'],
      size_multipliers: { '1024x1792': 2, '1792x1024': 2 }, quality_multipliers: { hd: 2 },
    },
    ...overrides,
  };
}

function rejects(action: () => unknown, status: number, param: string | undefined, message: RegExp): void {
  assert.throws(action, (error: { status: number; param?: string; message: string }) => {
    assert.equal(error.status, status);
    assert.equal(error.param, param);
    assert.match(error.message, message);
    return true;
  });
}

test('a full generation request is read into its info', () => {
  const info = validateImageGeneration({
    model: 'sim-image', prompt: 'a red fox', n: 3, size: '1024x1792', quality: 'hd', style: 'vivid', response_format: 'b64_json',
    aspect_ratio: '16:9', seed: 42, prompt_upsampling: true, safety_tolerance: 2,
  });
  assert.deepEqual(info, {
    model: 'sim-image', prompt: 'a red fox', n: 3, size: '1024x1792', quality: 'hd', style: 'vivid', responseFormat: 'b64_json',
  });
});

test('n defaults to 1 and unset options stay absent', () => {
  assert.deepEqual(validateImageGeneration({ model: 'm', prompt: 'p', size: null }), { model: 'm', prompt: 'p', n: 1 });
});

test('each invalid generation field is a 400 naming its param', () => {
  const valid = { model: 'm', prompt: 'p' };
  const rows: [body: unknown, param: string | undefined, message: RegExp][] = [
    [[1, 2], undefined, /JSON object/],
    [{ prompt: 'p' }, 'model', /model is required/],
    [{ model: 7, prompt: 'p' }, 'model', /model must be a string/],
    [{ model: 'm' }, 'prompt', /prompt is required/],
    [{ model: 'm', prompt: '   ' }, 'prompt', /prompt must not be empty/],
    [{ ...valid, n: 0 }, 'n', /n must be an integer between 1 and 10/],
    [{ ...valid, n: 11 }, 'n', /between 1 and 10/],
    [{ ...valid, n: 1.5 }, 'n', /integer/],
    [{ ...valid, n: '2' }, 'n', /integer/],
    [{ ...valid, size: 1024 }, 'size', /size must be a string/],
    [{ ...valid, quality: true }, 'quality', /quality must be a string/],
    [{ ...valid, style: {} }, 'style', /style must be a string/],
    [{ ...valid, response_format: 'png' }, 'response_format', /"url" or "b64_json"/],
    [{ ...valid, aspect_ratio: 1.77 }, 'aspect_ratio', /aspect_ratio must be a string/],
    [{ ...valid, seed: 'abc' }, 'seed', /seed must be an integer/],
    [{ ...valid, seed: 1.5 }, 'seed', /seed must be an integer/],
    [{ ...valid, prompt_upsampling: 'yes' }, 'prompt_upsampling', /prompt_upsampling must be a boolean/],
    [{ ...valid, safety_tolerance: '2' }, 'safety_tolerance', /safety_tolerance must be an integer/],
  ];
  for (const [body, param, message] of rows) rejects(() => validateImageGeneration(body), 400, param, message);
});

test('a size outside the model list is refused with the allowed sizes', () => {
  rejects(() => checkImageOptions({ size: '512x512' }, imageModel()), 400, 'size',
    /size "512x512" is not supported by model sim-image; allowed sizes: 1024x1024, 1024x1792, 1792x1024/);
  checkImageOptions({ size: '1792x1024', quality: 'hd', style: 'natural' }, imageModel());
});

test('any size passes when the model lists none', () => {
  checkImageOptions({ size: '4096x4096' }, imageModel({ image: {} }));
  checkImageOptions({ size: '4096x4096' }, imageModel({ image: undefined }));
});

test('quality and style only where the model offers them', () => {
  rejects(() => checkImageOptions({ quality: 'hd' }, imageModel({ image: { sizes: ['1024x1024'] } })), 400, 'quality',
    /^quality is not supported by model sim-image$/);
  rejects(() => checkImageOptions({ quality: 'ultra' }, imageModel()), 400, 'quality', /quality "ultra" is not supported.*standard, hd/);
  rejects(() => checkImageOptions({ style: 'vivid' }, imageModel({ image: undefined })), 400, 'style', /^style is not supported by model sim-image$/);
  rejects(() => checkImageOptions({ style: 'noir' }, imageModel()), 400, 'style', /allowed values: vivid, natural/);
});

test('price is per_call × n × size multiplier × quality multiplier', () => {
  const model = imageModel();
  assert.equal(imagePriceUsd(model, { n: 1 }), 0.04);
  assert.equal(imagePriceUsd(model, { n: 3, size: '1024x1024', quality: 'standard' }), 0.04 * 3);
  assert.equal(imagePriceUsd(model, { n: 2, size: '1792x1024' }), 0.04 * 2 * 2);
  assert.equal(imagePriceUsd(model, { n: 2, size: '1024x1792', quality: 'hd' }), 0.04 * 2 * 2 * 2);
  assert.equal(imagePriceUsd(imageModel({ image: undefined }), { n: 5, size: '1792x1024', quality: 'hd' }), 0.04 * 5);
});

test('simulated b64_json images are valid 1×1 PNGs, one per n', () => {
  const answer = simulateImages({ n: 2, responseFormat: 'b64_json', prompt: 'a cat' }, 1_700_000_000);
  assert.equal(answer.created, 1_700_000_000);
  assert.equal(answer.data.length, 2);
  for (const entry of answer.data) assert.deepEqual(entry, { b64_json: SIMULATED_PNG_BASE64, revised_prompt: 'a cat' });
  const png = Buffer.from(SIMULATED_PNG_BASE64, 'base64');
  assert.deepEqual([...png.subarray(0, 8)], [137, 80, 78, 71, 13, 10, 26, 10]);
  assert.equal(png.toString('latin1', 12, 16), 'IHDR');
  assert.equal(png.readUInt32BE(16), 1);
  assert.equal(png.readUInt32BE(20), 1);
  const idatLength = png.readUInt32BE(33);
  assert.equal(png.toString('latin1', 37, 41), 'IDAT');
  // filter byte + one RGBA pixel
  assert.equal(inflateSync(png.subarray(41, 41 + idatLength)).length, 5);
});

test('simulated URLs are stable per prompt and distinct per image', () => {
  const first = simulateImages({ n: 3, prompt: 'a cat' });
  const again = simulateImages({ n: 3, responseFormat: 'url', prompt: 'a cat' });
  const other = simulateImages({ n: 1, responseFormat: 'url', prompt: 'a dog' });
  assert.deepEqual(first.data, again.data);
  const urls = first.data.map((entry) => (entry as { url: string }).url);
  assert.equal(new Set(urls).size, 3);
  for (const [index, url] of urls.entries()) assert.match(url, new RegExp(`^https://simulator\\.invalid/images/[0-9a-f]{16}-${index}\\.png$`));
  assert.notEqual((other.data[0] as { url: string }).url, urls[0]);
});
