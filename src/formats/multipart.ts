// Multipart bodies of image edits (spec §4.6): parsing with busboy under hard limits, validation of
// the edit form, and re-encoding for the upstream. Pure functions over buffers (no network, no
// files), so the piscina worker in workers/multipart.ts can run them off the event loop.
import { randomBytes } from 'node:crypto';
import busboy from 'busboy';
import { badRequest, tooLarge } from '../errors';
import { imageCount, requiredString } from './images';

export interface MultipartLimits {
  totalBytes: number;
  fileBytes: number;
  files: number;
  fieldBytes: number;
  fields: number;
}

export interface ParsedFile {
  field: string;
  filename: string;
  mimeType: string;
  data: Uint8Array;
}

export interface ParsedEditForm {
  /** Text fields by name; when a name repeats, the last value. */
  fields: Record<string, string>;
  files: ParsedFile[];
  /**
   * Every text field in body order, repeats included (e.g. several `image[]` URL strings), which
   * `fields` cannot hold. Filled by parseMultipart; optional so hand-built forms may omit it.
   */
  fieldList?: { name: string; value: string }[];
}

export function isMultipart(contentType: string | undefined): boolean {
  return contentType !== undefined && /^\s*multipart\/form-data\s*(;|$)/i.test(contentType);
}

/** busboy's fixed limit on the bytes of one part's header lines (Content-Disposition, Content-Type, …) */
export const PART_HEADER_BYTES = 16 * 1024;

// Written into the body in slices so a limit hit early stops the work instead of scanning the rest.
const WRITE_SLICE_BYTES = 64 * 1024;

export function parseMultipart(body: Uint8Array, contentType: string, limits: MultipartLimits): Promise<ParsedEditForm> {
  if (!isMultipart(contentType)) {
    return Promise.reject(badRequest(
      `the request body must be multipart/form-data (got ${contentType ? contentType.split(';')[0].trim() : 'no content type'}); `
      + 'send image files as form parts and let the client set the boundary'));
  }
  if (body.byteLength > limits.totalBytes) {
    return Promise.reject(tooLarge(`request body exceeds the ${limits.totalBytes}-byte multipart size limit`));
  }
  let parser: busboy.Busboy;
  try {
    parser = busboy({
      headers: { 'content-type': contentType },
      // Browsers and curl send UTF-8 file names; busboy's default (latin1) would garble them.
      defParamCharset: 'utf8',
      // Each limit one above ours: busboy flags a file or field that *reaches* its size limit, and an
      // extra part must reach our handlers so the error can name it.
      limits: { fileSize: limits.fileBytes + 1, files: limits.files + 1, fieldSize: limits.fieldBytes + 1, fields: limits.fields + 1 },
    });
  } catch (error) {
    return Promise.reject(badRequest(`malformed multipart content type: ${(error as Error).message}`));
  }
  return new Promise<ParsedEditForm>((resolve, reject) => {
    const fields: Record<string, string> = {};
    const fieldList: { name: string; value: string }[] = [];
    const files: ParsedFile[] = [];
    let fieldCount = 0;
    let fileCount = 0;
    let openFiles = 0;
    let parserFinished = false;
    let failure: unknown;

    // A refusal settles the parse only once busboy has closed: it destroys every file stream still
    // open, each with an error listener, so nothing of this body can throw after the answer (or into
    // the next task on this thread).
    const fail = (error: unknown): void => {
      if (failure !== undefined) return;
      failure = error;
      if (parserFinished) reject(error);
      else setImmediate(() => parser.destroy());
    };
    const settleIfDone = (): void => {
      if (failure === undefined && parserFinished && openFiles === 0) resolve({ fields, files, fieldList });
    };

    parser.on('field', (name, value, info) => {
      if (failure !== undefined) return;
      if (info.nameTruncated) return fail(badRequest('a form field name is too long'));
      if (++fieldCount > limits.fields) return fail(tooLarge(`too many form fields: the limit is ${limits.fields} fields`, name));
      if (info.valueTruncated) return fail(tooLarge(`field ${name} exceeds the ${limits.fieldBytes}-byte field size limit`, name));
      if (name === undefined) return;
      // busboy gives no value for a part whose content-type names a charset it cannot decode
      if (typeof value !== 'string') {
        return fail(badRequest(`form field ${name.slice(0, 64)} could not be decoded: the charset its content-type names is not supported; send it as UTF-8`, name));
      }
      fields[name] = value;
      fieldList.push({ name, value });
    });

    parser.on('file', (name, stream, info) => {
      // every file stream gets an error listener first: busboy destroys an open one with an error
      // when the body turns out cut off or the parse is abandoned
      stream.on('error', (error: Error) => fail(badRequest(`malformed multipart body: ${error.message}`)));
      if (failure !== undefined || ++fileCount > limits.files) {
        stream.resume();
        if (failure === undefined) fail(tooLarge(`too many files: the limit is ${limits.files} files`, name));
        return;
      }
      openFiles++;
      // Slot taken now so files keep body order whatever order their 'end' events arrive in.
      const position = fileCount - 1;
      const field = name ?? '';
      const chunks: Buffer[] = [];
      let size = 0;
      stream.on('data', (chunk: Buffer) => {
        if (failure !== undefined) return;
        chunks.push(chunk);
        size += chunk.length;
      });
      stream.on('limit', () => fail(tooLarge(`file ${name} exceeds the ${limits.fileBytes}-byte file size limit`, name)));
      // A body cut off inside a file part surfaces on the stream first (busboy's "Unexpected end of
      // form"), through the listener above: a client error.
      stream.on('end', () => {
        openFiles--;
        if (failure !== undefined) return;
        // A fresh ArrayBuffer per file: nothing else shares it, so the worker can transfer it
        // (zero-copy) to the main thread.
        const data = new Uint8Array(size);
        let offset = 0;
        for (const chunk of chunks) {
          data.set(chunk, offset);
          offset += chunk.length;
        }
        files[position] = { field, filename: info.filename ?? '', mimeType: info.mimeType, data };
        settleIfDone();
      });
    });

    parser.on('error', (error) => {
      const message = (error as Error).message;
      // busboy reports a part header past its fixed size limit as malformed: the answer names the limit
      fail(badRequest(message === 'Malformed part header'
        ? `malformed multipart body: a part's header is malformed or longer than the ${PART_HEADER_BYTES}-byte part header limit (a long file name counts)`
        : `malformed multipart body: ${message}`));
    });
    parser.on('close', () => {
      parserFinished = true;
      if (failure !== undefined) reject(failure);
      else settleIfDone();
    });

    const bytes = Buffer.from(body.buffer, body.byteOffset, body.byteLength);
    let offset = 0;
    const writeNext = (): void => {
      // Bounded: each round advances offset by a slice until the body is written or parsing failed.
      while (failure === undefined && offset < bytes.length) {
        const slice = bytes.subarray(offset, offset + WRITE_SLICE_BYTES);
        offset += slice.length;
        if (!parser.write(slice)) {
          parser.once('drain', writeNext);
          return;
        }
      }
      if (failure === undefined) parser.end();
      else if (!parser.destroyed) parser.destroy();
    };
    writeNext();
  });
}

// ---- image edit form -------------------------------------------------------------------------

export type ImageInput = { file: ParsedFile } | { url: string };

export interface EditRequestInfo {
  model: string;
  prompt: string;
  n: number;
  size?: string;
  images: ImageInput[];
  mask?: ImageInput;
}

/** `image`, `image[]` (the newer family's name, spec §4.6) and `image[N]`; returns N or -1, or undefined for other names. */
function imageFieldIndex(name: string): number | undefined {
  if (name === 'image' || name === 'image[]') return -1;
  const match = /^image\[(\d+)\]$/.exec(name);
  return match ? Number(match[1]) : undefined;
}

const isHttpUrl = (value: string): boolean => /^https?:\/\/[^\s]+$/i.test(value.trim());

function urlInput(field: string, value: string, model: string, urlsAllowed: boolean): ImageInput {
  if (!urlsAllowed) {
    throw badRequest(
      `${field} must be uploaded as a file part of the multipart form; a path or URL string does not upload a file `
      + `(model ${model} does not accept image URLs)`, field);
  }
  if (!isHttpUrl(value)) throw badRequest(`${field} must be a file part or an http(s) URL`, field);
  return { url: value.trim() };
}

export function validateImageEdit(form: ParsedEditForm, options: { urlInputsAllowed: (model: string) => boolean }): EditRequestInfo {
  const model = requiredString(form.fields, 'model');
  const prompt = requiredString(form.fields, 'prompt');
  const n = imageCount(form.fields.n, true);
  const size = form.fields.size === undefined || form.fields.size === '' ? undefined : form.fields.size;
  const urlsAllowed = options.urlInputsAllowed(model);
  const textFields = form.fieldList ?? Object.entries(form.fields).map(([name, value]) => ({ name, value }));

  // Body order; when every image carries an explicit index (image[0], image[1] …), that order.
  const candidates: { index: number; input: ImageInput }[] = [];
  let mask: ImageInput | undefined;
  for (const file of form.files) {
    const index = imageFieldIndex(file.field);
    if (index !== undefined) candidates.push({ index, input: { file } });
    else if (file.field === 'mask') {
      if (mask !== undefined) throw badRequest('only one mask may be sent', 'mask');
      mask = { file };
    }
  }
  for (const { name, value } of textFields) {
    const index = imageFieldIndex(name);
    if (index !== undefined) candidates.push({ index, input: urlInput('image', value, model, urlsAllowed) });
    else if (name === 'mask') {
      if (mask !== undefined) throw badRequest('only one mask may be sent', 'mask');
      mask = urlInput('mask', value, model, urlsAllowed);
    }
  }
  if (candidates.length === 0) {
    throw badRequest('image is required: upload at least one image file as a form part named image (or image[])', 'image');
  }
  if (candidates.every((candidate) => candidate.index >= 0)) candidates.sort((left, right) => left.index - right.index);
  for (const candidate of candidates) {
    if ('file' in candidate.input && candidate.input.file.data.byteLength === 0) {
      throw badRequest(`image file ${candidate.input.file.filename || candidate.input.file.field} is empty`, 'image');
    }
  }
  if (mask !== undefined && 'file' in mask && mask.file.data.byteLength === 0) throw badRequest('mask file is empty', 'mask');

  const info: EditRequestInfo = { model, prompt, n, images: candidates.map((candidate) => candidate.input) };
  if (size !== undefined) info.size = size;
  if (mask !== undefined) info.mask = mask;
  return info;
}

// ---- re-encoding for the upstream -------------------------------------------------------------

// The upstream gets a freshly encoded body instead of the client's bytes: rebuilding is cheap
// (one concat), always well-formed, lets us replace `model` by the upstream's name, and keeps every
// file's bytes exactly as uploaded.

// WHATWG form encoding: quotes and line breaks in names are percent-escaped, the rest stays UTF-8.
const escapeDispositionValue = (value: string): string =>
  value.replace(/"/g, '%22').replace(/\r/g, '%0D').replace(/\n/g, '%0A');

// A part header must not be able to smuggle in a line break or another header.
const safeMimeType = (mimeType: string): string =>
  /^[\w.+-]+\/[\w.+-]+$/.test(mimeType) ? mimeType : 'application/octet-stream';

const MAX_BOUNDARY_ATTEMPTS = 8;

export function encodeMultipart(form: ParsedEditForm, overrides: Record<string, string>): { body: Buffer; contentType: string } {
  const textFields: { name: string; value: string }[] = [];
  const overridden = new Set<string>();
  for (const { name, value } of form.fieldList ?? Object.entries(form.fields).map(([name, value]) => ({ name, value }))) {
    if (Object.hasOwn(overrides, name)) {
      if (overridden.has(name)) continue;
      overridden.add(name);
      textFields.push({ name, value: overrides[name] });
    } else textFields.push({ name, value });
  }
  for (const [name, value] of Object.entries(overrides)) if (!overridden.has(name)) textFields.push({ name, value });

  const fileBuffers = form.files.map((file) => Buffer.from(file.data.buffer, file.data.byteOffset, file.data.byteLength));
  let boundary = '';
  // A random 128-bit boundary practically never occurs in the content; check anyway so the body is always correct.
  for (let attempt = 0; attempt < MAX_BOUNDARY_ATTEMPTS; attempt++) {
    boundary = `----TollgateFormBoundary${randomBytes(16).toString('hex')}`;
    const candidate = boundary;
    const collides = fileBuffers.some((buffer) => buffer.includes(candidate))
      || textFields.some((field) => field.value.includes(candidate));
    if (!collides) break;
    if (attempt === MAX_BOUNDARY_ATTEMPTS - 1) throw new Error('could not choose a multipart boundary absent from the content');
  }

  const pieces: Buffer[] = [];
  for (const { name, value } of textFields) {
    pieces.push(Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="${escapeDispositionValue(name)}"\r\n\r\n${value}\r\n`, 'utf8'));
  }
  form.files.forEach((file, index) => {
    pieces.push(Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="${escapeDispositionValue(file.field)}"; `
      + `filename="${escapeDispositionValue(file.filename || file.field)}"\r\nContent-Type: ${safeMimeType(file.mimeType)}\r\n\r\n`, 'utf8'));
    pieces.push(fileBuffers[index]);
    pieces.push(Buffer.from('\r\n'));
  });
  pieces.push(Buffer.from(`--${boundary}--\r\n`));
  return { body: Buffer.concat(pieces), contentType: `multipart/form-data; boundary=${boundary}` };
}
