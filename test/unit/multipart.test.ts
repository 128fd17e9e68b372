import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import path from 'node:path';
import { Piscina } from 'piscina';
import { isGatewayError, renderError, type GatewayErrorShape } from '../../src/errors';
import {
  encodeMultipart, isMultipart, parseMultipart, validateImageEdit, type MultipartLimits, type ParsedEditForm,
} from '../../src/formats/multipart';
import { formBody } from '../helpers/form-body';

const LIMITS: MultipartLimits = { totalBytes: 1024 * 1024, fileBytes: 64 * 1024, files: 4, fieldBytes: 1024, fields: 8 };
const sha256 = (bytes: Uint8Array): string => createHash('sha256').update(bytes).digest('hex');

/** Encodes the way a browser or the openai SDK does (test/helpers/form-body.ts), independent of encodeMultipart. */
async function clientForm(build: (form: FormData) => void): Promise<{ body: Uint8Array; contentType: string }> {
  const form = new FormData();
  build(form);
  return formBody(form);
}

const file = (bytes: Uint8Array, type = 'image/png'): Blob => new Blob([bytes as Uint8Array<ArrayBuffer>], { type });

async function assertRejects(promise: Promise<unknown>, status: number, param: string | undefined, message: RegExp): Promise<void> {
  await assert.rejects(promise, (error: GatewayErrorShape) => {
    assert.equal(error.status, status);
    assert.equal(error.param, param);
    assert.match(error.message, message);
    return true;
  });
}

test('isMultipart recognises only multipart/form-data', () => {
  assert.equal(isMultipart('multipart/form-data; boundary=abc'), true);
  assert.equal(isMultipart('Multipart/Form-Data;boundary=abc'), true);
  assert.equal(isMultipart('application/json'), false);
  assert.equal(isMultipart('multipart/mixed; boundary=abc'), false);
  assert.equal(isMultipart(undefined), false);
});

test('a form with image[] ×2, a mask and text fields parses with bytes intact', async () => {
  const first = randomBytes(3000);
  const second = randomBytes(70);
  const mask = randomBytes(500);
  const { body, contentType } = await clientForm((form) => {
    form.append('model', 'gpt-image-1');
    form.append('prompt', 'put a hat on the cat — ünïcode');
    form.append('image[]', file(first), 'cat.png');
    form.append('image[]', file(second, 'image/jpeg'), 'hat.jpg');
    form.append('mask', file(mask), 'mask.png');
    form.append('n', '2');
    form.append('size', '1024x1024');
  });
  const parsed = await parseMultipart(body, contentType, LIMITS);
  assert.deepEqual(parsed.fields, { model: 'gpt-image-1', prompt: 'put a hat on the cat — ünïcode', n: '2', size: '1024x1024' });
  assert.deepEqual(parsed.files.map((entry) => [entry.field, entry.filename, entry.mimeType, sha256(entry.data)]), [
    ['image[]', 'cat.png', 'image/png', sha256(first)],
    ['image[]', 'hat.jpg', 'image/jpeg', sha256(second)],
    ['mask', 'mask.png', 'image/png', sha256(mask)],
  ]);

  const info = validateImageEdit(parsed, { urlInputsAllowed: () => false });
  assert.equal(info.model, 'gpt-image-1');
  assert.equal(info.n, 2);
  assert.equal(info.size, '1024x1024');
  assert.deepEqual(info.images.map((image) => 'file' in image && image.file.filename), ['cat.png', 'hat.jpg']);
  assert.ok(info.mask && 'file' in info.mask && info.mask.file.filename === 'mask.png');
});

test('each limit answers 413 naming the limit and its value', async () => {
  const tooBigFile = await clientForm((form) => form.append('image', file(new Uint8Array(LIMITS.fileBytes + 1)), 'big.png'));
  await assertRejects(parseMultipart(tooBigFile.body, tooBigFile.contentType, LIMITS), 413, 'image',
    /^file image exceeds the 65536-byte file size limit$/);

  const exactFile = await clientForm((form) => form.append('image', file(new Uint8Array(LIMITS.fileBytes)), 'exact.png'));
  assert.equal((await parseMultipart(exactFile.body, exactFile.contentType, LIMITS)).files[0].data.byteLength, LIMITS.fileBytes);

  const manyFiles = await clientForm((form) => {
    for (let index = 0; index <= LIMITS.files; index++) form.append(`image[${index}]`, file(new Uint8Array([index])), `${index}.png`);
  });
  await assertRejects(parseMultipart(manyFiles.body, manyFiles.contentType, LIMITS), 413, 'image[4]', /too many files: the limit is 4 files/);

  const longField = await clientForm((form) => form.append('prompt', 'x'.repeat(LIMITS.fieldBytes + 1)));
  await assertRejects(parseMultipart(longField.body, longField.contentType, LIMITS), 413, 'prompt',
    /^field prompt exceeds the 1024-byte field size limit$/);

  const exactField = await clientForm((form) => form.append('prompt', 'x'.repeat(LIMITS.fieldBytes)));
  assert.equal((await parseMultipart(exactField.body, exactField.contentType, LIMITS)).fields.prompt.length, LIMITS.fieldBytes);

  const manyFields = await clientForm((form) => {
    for (let index = 0; index <= LIMITS.fields; index++) form.append(`extra${index}`, 'value');
  });
  await assertRejects(parseMultipart(manyFields.body, manyFields.contentType, LIMITS), 413, 'extra8', /too many form fields: the limit is 8 fields/);

  const total = await clientForm((form) => form.append('image', file(new Uint8Array(2000)), 'a.png'));
  await assertRejects(parseMultipart(total.body, total.contentType, { ...LIMITS, totalBytes: 1000 }), 413, undefined,
    /^request body exceeds the 1000-byte multipart size limit$/);
});

test('a JSON body or a broken form is a 400, not a crash', async () => {
  const json = new TextEncoder().encode(JSON.stringify({ model: 'm', prompt: 'p', image: '/tmp/cat.png' }));
  await assertRejects(parseMultipart(json, 'application/json', LIMITS), 400, undefined, /must be multipart\/form-data \(got application\/json\)/);
  await assertRejects(parseMultipart(json, 'multipart/form-data', LIMITS), 400, undefined, /malformed multipart content type.*[Bb]oundary/);
  const truncated = new TextEncoder().encode('--abc\r\nContent-Disposition: form-data; name="prompt"\r\n\r\nhello');
  await assertRejects(parseMultipart(truncated, 'multipart/form-data; boundary=abc', LIMITS), 400, undefined, /malformed multipart body/);
  const truncatedFile = new TextEncoder().encode('--abc\r\nContent-Disposition: form-data; name="image"; filename="a.png"\r\n\r\nabc');
  await assertRejects(parseMultipart(truncatedFile, 'multipart/form-data; boundary=abc', LIMITS), 400, undefined, /malformed multipart body/);
});

function form(fields: Record<string, string>, files: ParsedEditForm['files'] = [], fieldList?: ParsedEditForm['fieldList']): ParsedEditForm {
  return fieldList ? { fields, files, fieldList } : { fields, files };
}
const png = (field: string, filename: string, bytes = [1, 2, 3]) => ({ field, filename, mimeType: 'image/png', data: new Uint8Array(bytes) });

test('edit validation: required fields, n, and the image rules', () => {
  const noUrls = { urlInputsAllowed: () => false };
  const base = { model: 'gpt-image-1', prompt: 'make it blue' };
  const rows: [ParsedEditForm, string, RegExp][] = [
    [form({ prompt: 'p' }, [png('image', 'a.png')]), 'model', /model is required/],
    [form({ model: 'm' }, [png('image', 'a.png')]), 'prompt', /prompt is required/],
    [form({ ...base, n: '0' }, [png('image', 'a.png')]), 'n', /between 1 and 10/],
    [form({ ...base, n: 'two' }, [png('image', 'a.png')]), 'n', /integer/],
    [form(base), 'image', /image is required: upload at least one image file/],
    [form({ ...base, image: '/home/me/cat.png' }), 'image', /a path or URL string does not upload a file \(model gpt-image-1 does not accept image URLs\)/],
    [form(base, [png('image', 'a.png', [])]), 'image', /image file a.png is empty/],
    [form(base, [png('image', 'a.png'), png('mask', 'm.png'), png('mask', 'n.png')]), 'mask', /only one mask/],
  ];
  for (const [input, param, message] of rows) {
    assert.throws(() => validateImageEdit(input, noUrls), (error: GatewayErrorShape) => {
      assert.equal(error.status, 400);
      assert.equal(error.param, param);
      assert.match(error.message, message);
      return true;
    });
  }
  assert.equal(validateImageEdit(form(base, [png('image', 'a.png')]), noUrls).n, 1);
});

test('edit validation: image[N] ordering and URL strings where the model accepts them', () => {
  const base = { model: 'flux-kontext', prompt: 'fuse them' };
  const indexed = validateImageEdit(form(base, [png('image[1]', 'second.png'), png('image[0]', 'first.png')]), { urlInputsAllowed: () => true });
  assert.deepEqual(indexed.images.map((image) => 'file' in image && image.file.filename), ['first.png', 'second.png']);

  const allowed = (model: string): boolean => model === 'flux-kontext';
  const urls = validateImageEdit(form({ ...base, mask: 'https://example.com/mask.png' }, [], [
    { name: 'model', value: 'flux-kontext' }, { name: 'prompt', value: 'fuse them' },
    { name: 'image[]', value: 'https://example.com/a.png' }, { name: 'image[]', value: 'https://example.com/b.png' },
    { name: 'mask', value: 'https://example.com/mask.png' },
  ]), { urlInputsAllowed: allowed });
  assert.deepEqual(urls.images, [{ url: 'https://example.com/a.png' }, { url: 'https://example.com/b.png' }]);
  assert.deepEqual(urls.mask, { url: 'https://example.com/mask.png' });

  assert.throws(() => validateImageEdit(form({ ...base, image: 'C:\\cat.png' }), { urlInputsAllowed: allowed }),
    /image must be a file part or an http\(s\) URL/);
});

test('encodeMultipart → parseMultipart keeps file bytes identical and applies overrides', async () => {
  const images = [randomBytes(40_000), randomBytes(1), new Uint8Array(0)];
  const original: ParsedEditForm = {
    fields: { model: 'public-name', prompt: 'say "hi"\r\nline two' },
    files: [
      { field: 'image[]', filename: 'a "quoted" name.png', mimeType: 'image/png', data: images[0] },
      { field: 'image[]', filename: 'ünïcode.jpg', mimeType: 'image/jpeg', data: images[1] },
      { field: 'mask', filename: 'empty.png', mimeType: 'image/png', data: images[2] },
    ],
  };
  const encoded = encodeMultipart(original, { model: 'upstream-name', response_format: 'b64_json' });
  assert.match(encoded.contentType, /^multipart\/form-data; boundary=----TollgateFormBoundary[0-9a-f]{32}$/);
  assert.notEqual(encodeMultipart(original, {}).contentType, encoded.contentType, 'a fresh boundary each time');

  const parsed = await parseMultipart(encoded.body, encoded.contentType, { ...LIMITS, totalBytes: encoded.body.length });
  assert.deepEqual(parsed.fields, { model: 'upstream-name', prompt: 'say "hi"\r\nline two', response_format: 'b64_json' });
  assert.deepEqual(parsed.files.map((entry) => sha256(entry.data)), images.map(sha256));
  assert.deepEqual(parsed.files.map((entry) => [entry.field, entry.mimeType]),
    [['image[]', 'image/png'], ['image[]', 'image/jpeg'], ['mask', 'image/png']]);
  assert.equal(parsed.files[1].filename, 'ünïcode.jpg');
  assert.equal(parsed.files[0].filename, 'a %22quoted%22 name.png');
});

test('encodeMultipart keeps repeated URL fields in order', async () => {
  const encoded = encodeMultipart(form({ model: 'a', 'image[]': 'https://x.test/2.png' }, [], [
    { name: 'model', value: 'a' }, { name: 'image[]', value: 'https://x.test/1.png' }, { name: 'image[]', value: 'https://x.test/2.png' },
  ]), { model: 'b' });
  const parsed = await parseMultipart(encoded.body, encoded.contentType, LIMITS);
  assert.deepEqual(parsed.fieldList, [
    { name: 'model', value: 'b' }, { name: 'image[]', value: 'https://x.test/1.png' }, { name: 'image[]', value: 'https://x.test/2.png' },
  ]);
});

test('the piscina worker parses forms and returns GatewayError fields intact', async () => {
  const pool = new Piscina({ filename: path.join(__dirname, '../../workers/multipart.js'), maxThreads: 1, minThreads: 1 });
  try {
    const image = randomBytes(10_000);
    const { body, contentType } = await clientForm((form) => {
      form.append('model', 'gpt-image-1');
      form.append('image', file(image), 'cat.png');
    });
    const parsed: ParsedEditForm = await pool.run({ body, contentType, limits: LIMITS }, { name: 'parseEditForm', transferList: [body.buffer as ArrayBuffer] });
    assert.equal(body.byteLength, 0, 'the body was transferred, not copied');
    assert.deepEqual(parsed.fields, { model: 'gpt-image-1' });
    assert.equal(parsed.files[0].filename, 'cat.png');
    assert.ok(parsed.files[0].data instanceof Uint8Array);
    assert.equal(sha256(parsed.files[0].data), sha256(image));

    const big = await clientForm((form) => form.append('image[]', file(new Uint8Array(LIMITS.fileBytes + 10)), 'big.png'));
    const failure = await pool.run({ body: big.body, contentType: big.contentType, limits: LIMITS }, { name: 'parseEditForm' })
      .then(() => undefined, (error: unknown) => error);
    assert.ok(isGatewayError(failure), 'the rejection carries the error shape');
    assert.deepEqual(JSON.parse(renderError(failure, 'openai').body), {
      error: { message: 'file image[] exceeds the 65536-byte file size limit', type: 'invalid_request_error', param: 'image[]', code: 'payload_too_large' },
    });
    assert.equal(renderError(failure, 'openai').status, 413);

    const json = new TextEncoder().encode('{"model":"m"}');
    const jsonFailure = await pool.run({ body: json, contentType: 'application/json', limits: LIMITS }, { name: 'parseEditForm' })
      .then(() => undefined, (error: unknown) => error) as GatewayErrorShape;
    assert.equal(jsonFailure.status, 400);
    assert.equal(jsonFailure.code, 'invalid_request_error');
  } finally {
    await pool.destroy();
  }
});
