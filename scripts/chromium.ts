// Headless Chromium for the console's browser tests and screenshots, from the @sparticuz/chromium
// npm package (its binary ships inside the package, so `npm ci` is the only step on a fresh
// machine). The package unpacks the binary into os.tmpdir() without a lock; we unpack it into a
// private staging folder and rename that into place, so parallel test files (or two checkouts on one
// machine) never start a half-written binary. Its NSS libraries and fonts come from the package too.
import { createReadStream, existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createBrotliDecompress } from 'node:zlib';
import type { Browser } from 'playwright-core';

/** The flags every launch uses: headless, no sandbox (root in CI), nothing that calls out. */
export const CHROMIUM_FLAGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update',
  '--disable-sync', '--no-first-run',
];

interface SparticuzChromium {
  executablePath(input?: string): Promise<string>;
}

function sparticuz(): { chromium: SparticuzChromium; version: string; binDir: string } {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const loaded = require('@sparticuz/chromium') as SparticuzChromium & { default?: SparticuzChromium };
  // the package's exports hide its package.json: read it beside the entry (build/cjs/index.cjs)
  const root = join(dirname(require.resolve('@sparticuz/chromium')), '..', '..');
  const version = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string }).version;
  return { chromium: loaded.default ?? loaded, version, binDir: join(root, 'bin') };
}

let unpacking: Promise<string> | undefined;

/** Brotli-compressed tar of the package (bin/NAME) unpacked into `target`, with the package's own tar-fs. */
function untar(archive: string, target: string): Promise<void> {
  const packageRequire = createRequire(require.resolve('@sparticuz/chromium'));
  const tar = packageRequire('tar-fs') as { extract(directory: string): NodeJS.WritableStream };
  return new Promise((resolve, reject) => {
    const sink = tar.extract(target);
    sink.on('finish', () => resolve());
    sink.on('error', reject);
    createReadStream(archive).on('error', reject).pipe(createBrotliDecompress()).on('error', reject).pipe(sink);
  });
}

/**
 * Path of the unpacked binary, unpacked once per machine and package version into
 * os.tmpdir()/tollgate-chromium-VERSION-2: the binary, its NSS libraries (the package's al2023
 * bundle; a bare Debian or Ubuntu has no libnss3), its fonts and a fontconfig file.
 */
export function chromiumPath(): Promise<string> {
  unpacking ??= (async () => {
    const { chromium, version, binDir } = sparticuz();
    const home = join(tmpdir(), `tollgate-chromium-${version}-2`);
    const binary = join(home, 'chromium');
    if (existsSync(binary)) return binary;
    mkdirSync(tmpdir(), { recursive: true });
    const staging = mkdtempSync(join(tmpdir(), `tollgate-chromium-${version}-unpack-`));
    const saved = process.env.TMPDIR;
    try {
      // the package unpacks into os.tmpdir(), which follows TMPDIR: point it at the staging folder
      process.env.TMPDIR = staging;
      await chromium.executablePath();
    } finally {
      if (saved === undefined) delete process.env.TMPDIR; else process.env.TMPDIR = saved;
    }
    await untar(join(binDir, 'al2023.tar.br'), join(staging, 'al2023'));
    writeFileSync(join(staging, FONT_CONFIG), `<?xml version="1.0"?>\n<!DOCTYPE fontconfig SYSTEM "fonts.dtd">\n<fontconfig>\n`
      + `  <include ignore_missing="yes">/etc/fonts/fonts.conf</include>\n  <dir>${join(home, 'fonts', 'fonts')}</dir>\n`
      + `  <cachedir>${join(home, 'fonts-cache')}</cachedir>\n</fontconfig>\n`);
    try {
      renameSync(staging, home);
    } catch (error) {
      // another process got there first: use its copy
      rmSync(staging, { recursive: true, force: true });
      if (!existsSync(binary)) throw error;
    }
    return binary;
  })();
  unpacking.catch(() => { unpacking = undefined; });
  return unpacking;
}

/** fontconfig: the system's fonts, then the Open Sans the package ships (a machine without fonts still renders text) */
const FONT_CONFIG = 'tollgate-fonts.conf';

/**
 * A fresh headless browser. Playwright gives every launch a new, empty --user-data-dir of its own
 * (and refuses one in `args`); it removes the folder when the browser closes.
 */
export async function launchChromium(): Promise<Browser> {
  const { chromium } = await import('playwright-core');
  const executablePath = await chromiumPath();
  const home = dirname(executablePath);
  const libraries = [join(home, 'al2023', 'lib'), process.env.LD_LIBRARY_PATH].filter(Boolean).join(':');
  return chromium.launch({
    executablePath, args: CHROMIUM_FLAGS, headless: true, timeout: 60_000,
    env: { ...process.env, FONTCONFIG_FILE: join(home, FONT_CONFIG), LD_LIBRARY_PATH: libraries },
  });
}
