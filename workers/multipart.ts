// Piscina task file: parses image-edit multipart bodies off the event loop. Call it as
//   pool.run({ body, contentType, limits }, { name: 'parseEditForm', transferList: [body.buffer] })
// (transfer only a buffer the caller owns whole; a pooled Buffer's ArrayBuffer is shared).
//
// Errors: a thrown Error loses every own field (status, code, param …) when structured-cloned back
// to the main thread. So a GatewayError is rethrown as its plain shape `{status, type, code,
// message, param, …}`; the pool's promise rejects with that object, which `isGatewayError` /
// `toGatewayError` from src/errors recognise and `renderError` renders as is. Anything else (a bug)
// is rethrown unchanged and ends up as a 500.
import { Piscina } from 'piscina';
import { isGatewayError } from '../src/errors';
import { parseMultipart, type MultipartLimits, type ParsedEditForm } from '../src/formats/multipart';

export interface ParseEditFormInput {
  body: Uint8Array;
  contentType: string;
  limits: MultipartLimits;
}

export async function parseEditForm(input: ParseEditFormInput): Promise<ParsedEditForm> {
  let form: ParsedEditForm;
  try {
    form = await parseMultipart(input.body, input.contentType, input.limits);
  } catch (error) {
    if (isGatewayError(error)) {
      const { status, type, code, message, param } = error;
      throw param === undefined ? { status, type, code, message } : { status, type, code, message, param };
    }
    throw error;
  }
  // Each file owns a fresh ArrayBuffer (see parseMultipart), so the bytes move to the main thread
  // instead of being copied. Piscina unwraps the value; the caller receives a plain ParsedEditForm.
  const movable = {
    [Piscina.transferableSymbol]: [...new Set(form.files.map((file) => file.data.buffer))],
    [Piscina.valueSymbol]: form,
  };
  return Piscina.move(movable as never) as unknown as ParsedEditForm;
}
