// `npm run screenshots`: every console page at desktop (1280 px, light, whole page) and phone
// (360 × 740, dark, the screen) size, account and operator pages, written to docs/screenshots/*.png. Runs a real gateway in this process on a temp data dir
// with the simulated models, makes real calls (their clock moved back a few days, so the usage chart
// has days to show), then drives the console in headless Chromium.
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { generateAccessToken, tokenDigest } from '../src/auth/secrets';
import { loadConfig } from '../src/config';
import { createLogger } from '../src/log';
import { startGateway, type RunningGateway } from '../src/main';
import { launchChromium } from './chromium';

const OUT = join(__dirname, '..', '..', 'docs', 'screenshots');
const DAY_MS = 86_400_000;

async function api(base: string, token: string, method: string, path: string, body?: unknown): Promise<any> {
  const response = await fetch(`${base}${path}`, {
    method, headers: { authorization: token, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = await response.json() as { success?: boolean; message?: string };
  if (json.success === false) throw new Error(`${method} ${path}: ${json.message}`);
  return json;
}

/** An account with keys and a week of real (simulated-model) calls. */
async function seed(gateway: RunningGateway, base: string): Promise<{ write: string; read: string; accountId: number }> {
  const store = gateway.context.store;
  const created = await store.accounts.create('acme-reseller', 'default', 25 * 500_000);
  if (created === 'exists') throw new Error('fresh data dir expected');
  const tokens = { write: generateAccessToken(), read: generateAccessToken() };
  await store.accounts.addAccessToken(tokenDigest(tokens.write).toString('hex'), created.id, 'write');
  await store.accounts.addAccessToken(tokenDigest(tokens.read).toString('hex'), created.id, 'read');
  const keys: Array<{ id: number; key: string }> = [];
  const specs = [
    { name: 'customer-berlin', remain_quota: 2_500_000, models: 'sim-gpt-mini,sim-claude', remark: 'Berlin shop front' },
    { name: 'customer-lisbon', remain_quota: 1_000_000, expired_time: Math.floor(Date.now() / 1000) + 30 * 86_400 },
    { name: 'internal-batch', unlimited_quota: true, remark: 'nightly jobs' },
    { name: 'images-only', remain_quota: 500_000, billing_type: 2 },
    { name: 'trial-7day', remain_quota: 100_000, expired_time: Math.floor(Date.now() / 1000) + 7 * 86_400 },
  ];
  for (const spec of specs) {
    const key = (await api(base, tokens.write, 'POST', '/api/token/', spec)).data;
    const full = (await api(base, tokens.write, 'POST', `/api/token/${key.id}/key`)).data.key;
    keys.push({ id: key.id, key: full });
  }
  const realNow = Date.now;
  try {
    for (let daysAgo = 6; daysAgo >= 0; daysAgo -= 1) {
      Date.now = () => realNow() - daysAgo * DAY_MS;
      const calls = 2 + ((daysAgo * 5) % 4);
      for (let index = 0; index < calls; index += 1) {
        const model = index % 3 === 2 ? 'sim-claude' : 'sim-gpt-mini';
        await fetch(`${base}/v1/chat/completions`, {
          method: 'POST', headers: { authorization: `Bearer ${keys[index % 3 === 1 ? 2 : 0].key}`, 'content-type': 'application/json' },
          body: JSON.stringify({ model, max_tokens: 200, messages: [{ role: 'user', content: `Summarise the order history, day ${daysAgo} call ${index}.`.repeat(1 + index) }] }),
        }).then((response) => response.text());
      }
      if (daysAgo % 2 === 0) {
        await fetch(`${base}/v1/images/generations`, {
          method: 'POST', headers: { authorization: `Bearer ${keys[3].key}`, 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'sim-image', prompt: 'a lighthouse at dusk', n: 1, size: '1024x1024' }),
        }).then((response) => response.text());
      }
      await gateway.context.ledger.flush();
    }
  } finally {
    Date.now = realNow;
  }
  await api(base, tokens.write, 'PUT', '/api/token/?status_only=true', { id: keys[4].id, status: 2 });
  return { ...tokens, accountId: created.id };
}

async function signIn(page: Page, base: string, token: string, firstPage = 'Keys'): Promise<void> {
  await page.goto(`${base}/console/`);
  await page.getByLabel('Access token or admin token').fill(token);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: firstPage, level: 1 }).waitFor();
}

/** The operator's pages, signed in with an admin token. */
async function operatorPages(page: Page, base: string, adminToken: string, suffix: string): Promise<void> {
  await page.evaluate(() => sessionStorage.clear());
  await signIn(page, base, adminToken, 'Accounts');
  await page.locator('table.accounts tbody tr').first().waitFor();
  await shoot(page, `accounts-${suffix}`);
  await page.locator('table.accounts tbody tr').first().getByRole('button', { name: 'Top up' }).click();
  await page.getByRole('dialog').getByLabel('Amount (USD)').fill('10');
  await shoot(page, `account-topup-${suffix}`);
  await page.getByRole('dialog').getByRole('button', { name: 'Cancel' }).click();
  const pages = [['Channels', 'channels', 'table.channels'], ['Usage', 'deployment-usage', '.chart canvas'], ['Audit log', 'audit', 'table.audit']] as const;
  for (const [link, name, ready] of pages) {
    await page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name: link }).click();
    await page.locator(ready).first().waitFor();
    await shoot(page, `${name}-${suffix}`);
  }
}

/** Desktop shots show the whole page; phone shots what the phone's screen shows (the page's top). */
async function shoot(page: Page, name: string): Promise<void> {
  await page.waitForLoadState('networkidle');
  await page.waitForTimeout(150);
  await page.screenshot({ path: join(OUT, `${name}.png`), fullPage: !name.endsWith('-phone') });
  process.stdout.write(`wrote docs/screenshots/${name}.png\n`);
}

/** An admin token, when the admin API (issue 18) is in this build. */
async function operatorToken(gateway: RunningGateway): Promise<string | undefined> {
  const module = join(__dirname, '..', 'src', 'auth', 'admin-token.js');
  if (!existsSync(module)) return undefined;
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { issueAdminToken } = require(module) as { issueAdminToken: (store: unknown, label: string) => Promise<string> };
  return issueAdminToken(gateway.context.store, 'screenshots');
}

async function main(): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'tollgate-screenshots-'));
  const config = loadConfig({ env: { TOLLGATE_DATA_DIR: dataDir, HOST: '127.0.0.1', PORT: '0' } });
  const gateway = await startGateway(config, { log: createLogger('error') });
  const base = `http://127.0.0.1:${gateway.port}`;
  const browser = await launchChromium();
  try {
    mkdirSync(OUT, { recursive: true });
    const tokens = await seed(gateway, base);
    const adminToken = await operatorToken(gateway);
    if (adminToken) {
      await api(base, adminToken, 'POST', `/api/admin/accounts/${tokens.accountId}/topup`, { usd: 25, note: 'monthly prepayment' });
      await api(base, adminToken, 'POST', '/api/admin/accounts', { name: 'northwind', balance: 5_000_000 });
    }
    const layouts = [
      { suffix: 'desktop', viewport: { width: 1280, height: 800 }, colorScheme: 'light' as const },
      { suffix: 'phone', viewport: { width: 360, height: 740 }, colorScheme: 'dark' as const },
    ];
    for (const layout of layouts) {
      const context = await browser.newContext({
        viewport: layout.viewport, colorScheme: layout.colorScheme, locale: 'en-US', timezoneId: 'Europe/Berlin',
        deviceScaleFactor: 1, isMobile: layout.suffix === 'phone', hasTouch: layout.suffix === 'phone',
      });
      const page = await context.newPage();
      await page.goto(`${base}/console/`);
      await page.getByLabel('Access token or admin token').waitFor();
      await shoot(page, `sign-in-${layout.suffix}`);
      await signIn(page, base, tokens.write);
      await page.locator('table.keys tbody tr').first().waitFor();
      await shoot(page, `keys-${layout.suffix}`);

      await page.getByRole('button', { name: 'Create key' }).click();
      const dialog = page.getByRole('dialog');
      await dialog.getByLabel('Name').fill('customer-with-a-name-that-is-far-too-long-for-the-api');
      await dialog.getByLabel('Cap (USD)').fill('5');
      await dialog.getByRole('button', { name: 'Create key' }).click();
      await dialog.locator('.field-error').first().waitFor();
      await shoot(page, `key-create-${layout.suffix}`);
      await dialog.getByRole('button', { name: 'Cancel' }).click();

      await page.locator('table.keys tbody tr').first().getByRole('button', { name: 'Reveal' }).click();
      await page.locator('#revealed-key').waitFor();
      await shoot(page, `key-reveal-${layout.suffix}`);
      await page.getByRole('dialog').getByRole('button', { name: 'Close', exact: true }).click();

      for (const [link, name, ready] of [['Usage', 'usage', '.chart canvas'], ['Models', 'models', 'table.models'], ['Balance', 'balance', '[data-testid="balance-usd"]']] as const) {
        await page.getByRole('link', { name: link }).click();
        await page.locator(ready).first().waitFor();
        await shoot(page, `${name}-${layout.suffix}`);
      }
      if (adminToken) await operatorPages(page, base, adminToken, layout.suffix);
      await context.close();
    }
    const readOnly = await browser.newContext({ viewport: { width: 1280, height: 800 }, locale: 'en-US', timezoneId: 'Europe/Berlin' });
    const page = await readOnly.newPage();
    await signIn(page, base, tokens.read);
    await page.locator('table.keys tbody tr').first().waitFor();
    await shoot(page, 'keys-read-only-desktop');
    await readOnly.close();
  } finally {
    await browser.close();
    await gateway.shutdown(1000);
    rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`screenshots failed: ${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
