// Headless Chromium for the console's browser tests and screenshots, from the @sparticuz/chromium
// npm package (its binary ships inside the package, so `npm ci` is the only step on a fresh
// machine). The package unpacks the binary into os.tmpdir() without a lock; we unpack it into a
// private staging folder and rename that into place, so parallel test files (or two checkouts on one
// machine) never start a half-written binary.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { Browser } from 'playwright-core';

/** The flags every launch uses: headless, no sandbox (root in CI), nothing that calls out. */
export const CHROMIUM_FLAGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update',
  '--disable-sync', '--no-first-run',
];

interface SparticuzChromium {
  executablePath(input?: string): Promise<string>;
  setGraphicsMode: boolean;
}

function sparticuz(): { chromium: SparticuzChromium; version: string } {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const loaded = require('@sparticuz/chromium') as SparticuzChromium & { default?: SparticuzChromium };
  // the package's exports hide its package.json: read it beside the entry (build/cjs/index.cjs)
  const root = join(dirname(require.resolve('@sparticuz/chromium')), '..', '..');
  const version = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string }).version;
  return { chromium: loaded.default ?? loaded, version };
}

let unpacking: Promise<string> | undefined;

/** Path of the unpacked binary, unpacking it once per machine and version. */
export function chromiumPath(): Promise<string> {
  unpacking ??= (async () => {
    const { chromium, version } = sparticuz();
    const home = join(tmpdir(), `tollgate-chromium-${version}`);
    const binary = join(home, 'chromium');
    if (existsSync(binary)) return binary;
    mkdirSync(tmpdir(), { recursive: true });
    const staging = mkdtempSync(join(tmpdir(), `tollgate-chromium-${version}-unpack-`));
    const saved = process.env.TMPDIR;
    try {
      // the package unpacks into os.tmpdir(), which follows TMPDIR: point it at the staging folder
      process.env.TMPDIR = staging;
      chromium.setGraphicsMode = false;   // --disable-gpu: the SwiftShader libraries are not needed
      await chromium.executablePath();
    } finally {
      if (saved === undefined) delete process.env.TMPDIR; else process.env.TMPDIR = saved;
    }
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

/**
 * A fresh headless browser. Playwright gives every launch a new, empty --user-data-dir of its own
 * (and refuses one in `args`); it removes the folder when the browser closes.
 */
export async function launchChromium(): Promise<Browser> {
  const { chromium } = await import('playwright-core');
  return chromium.launch({ executablePath: await chromiumPath(), args: CHROMIUM_FLAGS, headless: true, timeout: 60_000 });
}
