// A multipart/form-data body built here from a FormData, the way browsers, undici and the openai SDK
// encode one (WHATWG "multipart/form-data encoding algorithm"): CRLF lines, `"`, CR and LF in names and
// filenames escaped as %22, %0D, %0A, a file's type or application/octet-stream. Written out rather
// than taken from `new Response(form)`: Bun's Response sends no content-type (so no boundary) for a
// FormData body. Independent of src/formats/multipart.ts, which the tests check against it.
import { randomBytes } from 'node:crypto';

const escapeName = (name: string): string => name.replace(/"/g, '%22').replace(/\r/g, '%0D').replace(/\n/g, '%0A');

export async function formBody(form: FormData): Promise<{ body: Uint8Array; contentType: string }> {
  const boundary = `----tollgate-test-${randomBytes(12).toString('hex')}`;
  const parts: Uint8Array[] = [];
  const text = (value: string): void => { parts.push(new TextEncoder().encode(value)); };
  for (const [name, value] of form) {
    text(`--${boundary}\r\nContent-Disposition: form-data; name="${escapeName(name)}"`);
    if (typeof value === 'string') {
      text(`\r\n\r\n${value.replace(/\r(?!\n)|(?<!\r)\n/g, '\r\n')}\r\n`);
      continue;
    }
    text(`; filename="${escapeName(value.name)}"\r\nContent-Type: ${value.type || 'application/octet-stream'}\r\n\r\n`);
    parts.push(new Uint8Array(await value.arrayBuffer()));
    text('\r\n');
  }
  text(`--${boundary}--\r\n`);
  return { body: Buffer.concat(parts), contentType: `multipart/form-data; boundary=${boundary}` };
}
