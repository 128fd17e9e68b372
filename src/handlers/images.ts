// POST /v1/images/generations (JSON) and POST /v1/images/edits (multipart): the checks of DESIGN §5
// in their order, then the per-image relay. Fields the gateway does not know pass through untouched;
// only `model` is replaced by the upstream's name.
import { authenticateKey } from '../auth/api-key';
import { badRequest } from '../errors';
import { checkImageOptions, validateImageGeneration } from '../formats/images';
import { encodeMultipart, isMultipart, validateImageEdit, type ParsedEditForm } from '../formats/multipart';
import { relayImages, requireImageModel } from '../relay/images';
import { resolveModel } from '../relay/permissions';
import type { RouteHandler } from '../routes';
import type { ParseEditFormInput } from '../../workers/multipart';
import { readJsonObject } from './request-body';

/** form fields per edit request (the edit form has a handful; this only stops abuse) */
const MAX_FORM_FIELDS = 64;

export const imageGenerations: RouteHandler = async (exchange, _params, context) => {
  const caller = await authenticateKey(exchange, context.store);
  const body = await readJsonObject(exchange);
  const info = validateImageGeneration(body);
  const model = resolveModel(context.config, context.models, caller.key, info.model);
  requireImageModel(model);
  checkImageOptions(info, model);
  await relayImages({
    exchange, context, caller, model, endpoint: 'images.generations',
    pricing: { n: info.n, size: info.size, quality: info.quality },
    capable: (provider) => provider.imageGenerations !== undefined,
    send: (attempt, signal) => attempt.provider.imageGenerations!({
      channel: attempt.channel, apiKey: attempt.apiKey, upstreamModel: attempt.upstreamModel, model, stream: false, signal,
      body: { ...body, model: attempt.upstreamModel },
    }),
  });
};

export const imageEdits: RouteHandler = async (exchange, _params, context) => {
  const caller = await authenticateKey(exchange, context.store);
  const contentType = exchange.header('content-type');
  if (!isMultipart(contentType)) {
    throw badRequest(`image edits require a multipart/form-data body (got ${contentType ? contentType.split(';')[0].trim() : 'no content type'}): `
      + 'send the image as a file part and let the client set the boundary; a JSON body cannot carry the image', undefined, 'invalid_content_type');
  }
  const raw = await exchange.body();
  // The pool thread takes the bytes over (transfer, no copy), so it gets an ArrayBuffer nobody else
  // holds: a Buffer from the front may be a slice of a shared pool.
  const owned = new Uint8Array(raw.byteLength);
  owned.set(raw);
  const limits = context.config.limits;
  const input: ParseEditFormInput = {
    body: owned, contentType: contentType!,
    limits: { totalBytes: limits.multipartBytes, fileBytes: limits.multipartFileBytes, files: limits.multipartFiles, fieldBytes: limits.multipartFieldBytes, fields: MAX_FORM_FIELDS },
  };
  const form = await context.pool.run<ParsedEditForm>('multipart', 'parseEditForm', input, { transferList: [owned.buffer], cancel: exchange });
  const info = validateImageEdit(form, { urlInputsAllowed: (id) => context.models.get(id)?.image?.url_inputs === true });
  const model = resolveModel(context.config, context.models, caller.key, info.model);
  requireImageModel(model);
  const quality = form.fields.quality === undefined || form.fields.quality === '' ? undefined : form.fields.quality;
  checkImageOptions({ size: info.size, quality }, model);
  await relayImages({
    exchange, context, caller, model, endpoint: 'images.edits',
    pricing: { n: info.n, size: info.size, quality },
    capable: (provider) => provider.imageEdits !== undefined,
    send: (attempt, signal) => {
      const encoded = encodeMultipart(form, { model: attempt.upstreamModel });
      return attempt.provider.imageEdits!({
        channel: attempt.channel, apiKey: attempt.apiKey, upstreamModel: attempt.upstreamModel, model, stream: false, signal,
        body: encoded.body, contentType: encoded.contentType, n: info.n,
      });
    },
  });
};
