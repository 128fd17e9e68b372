// Builds the web console (console/) into dist/console/: one bundled, minified script and style
// sheet with content-hashed names, index.html pointing at them, and a .gz and .br copy of each file
// so the gateway sends compressed bytes without compressing per request. Fails when the whole
// console passes its size budget (gzipped), so it cannot grow past it unnoticed.
import { build } from 'esbuild';
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';

/** The budget for everything the console loads, gzipped. */
export const CONSOLE_BUDGET_GZIP_BYTES = 150 * 1024;

const ROOT = join(__dirname, '..', '..');
const SOURCE = join(ROOT, 'console');
const OUT = join(ROOT, 'dist', 'console');

function hashed(name: string, content: Buffer): string {
  const digest = createHash('sha256').update(content).digest('base64url').slice(0, 10);
  const dot = name.lastIndexOf('.');
  return `${name.slice(0, dot)}-${digest}${name.slice(dot)}`;
}

export async function buildConsole(): Promise<{ files: string[]; gzipBytes: number }> {
  rmSync(OUT, { recursive: true, force: true });
  mkdirSync(OUT, { recursive: true });
  const result = await build({
    entryPoints: [join(SOURCE, 'src', 'main.tsx')],
    bundle: true,
    minify: true,
    format: 'esm',
    target: ['chrome109', 'firefox115', 'safari16'],
    jsx: 'automatic',
    jsxImportSource: 'preact',
    outdir: OUT,
    entryNames: 'app-[hash]',
    assetNames: '[name]-[hash]',
    legalComments: 'none',
    logLevel: 'warning',
    metafile: true,
    absWorkingDir: ROOT,
  });
  const outputs = Object.keys(result.metafile.outputs).map((path) => path.split('/').pop()!);
  const script = outputs.find((name) => name.endsWith('.js'));
  const style = outputs.find((name) => name.endsWith('.css'));
  if (!script || !style) throw new Error(`console build produced no script or style sheet (${outputs.join(', ')})`);

  const icon = readFileSync(join(SOURCE, 'icon.svg'));
  const iconName = hashed('icon.svg', icon);
  writeFileSync(join(OUT, iconName), icon);

  const html = readFileSync(join(SOURCE, 'index.html'), 'utf8')
    .replace('{{script}}', script).replace('{{style}}', style).replace('{{icon}}', iconName);
  if (html.includes('{{')) throw new Error('console/index.html has a placeholder the build does not fill');
  writeFileSync(join(OUT, 'index.html'), html);

  let gzipBytes = 0;
  const files = readdirSync(OUT);
  for (const name of files) {
    const content = readFileSync(join(OUT, name));
    const gzip = gzipSync(content, { level: 9 });
    gzipBytes += gzip.length;
    writeFileSync(join(OUT, `${name}.gz`), gzip);
    writeFileSync(join(OUT, `${name}.br`), brotliCompressSync(content, { params: { [constants.BROTLI_PARAM_QUALITY]: 11 } }));
  }
  if (gzipBytes > CONSOLE_BUDGET_GZIP_BYTES) {
    throw new Error(`the console is ${gzipBytes} bytes gzipped, over its budget of ${CONSOLE_BUDGET_GZIP_BYTES}`);
  }
  return { files, gzipBytes };
}

if (require.main === module) {
  buildConsole().then(({ files, gzipBytes }) => {
    process.stdout.write(`console: ${files.length} files, ${(gzipBytes / 1024).toFixed(1)} KiB gzipped (budget ${CONSOLE_BUDGET_GZIP_BYTES / 1024} KiB)\n`);
  }, (error: unknown) => {
    process.stderr.write(`console build failed: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  });
}
