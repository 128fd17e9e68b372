// The console's quality bar in Chromium: a 360 px phone without sideways scrolling, light and dark,
// the keyboard alone, a label on every field, loading notices for slow answers, API errors shown
// next to their cause, a session ended by a revoked token, and the usage CSV export.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { launchChromium } from '../../scripts/chromium';
import { EMBEDDED_CONFIG } from '../../src/config';
import { openTab, signIn, type Tab } from '../helpers/console-browser';
import { addAccount, call, startTestGateway, type TestGateway } from '../helpers/gateway';

const MAX_KEYS = 3;
const PAGES = ['Keys', 'Usage', 'Models', 'Balance'];

describe('web console quality in Chromium', () => {
  let gateway: TestGateway;
  let browser: Browser;
  let token: string;
  const tabs: Tab[] = [];

  before(async () => {
    gateway = await startTestGateway({ raw: { ...EMBEDDED_CONFIG, limits: { max_keys_per_account: MAX_KEYS } } });
    const account = await addAccount(gateway, 'quality');
    token = account.token;
    await gateway.gateway.context.store.accounts.topUp(account.id, 5_000_000);
    for (const name of ['alpha', 'beta']) {
      const created = await call(gateway.url, 'POST', '/api/token/', { token, body: { name, remain_quota: 1_000_000 } });
      const key = (await call(gateway.url, 'POST', `/api/token/${created.json.data.id}/key`, { token })).json.data.key;
      for (const model of ['sim-gpt-mini', 'sim-claude']) {
        const chat = await call(gateway.url, 'POST', '/v1/chat/completions', {
          token: `Bearer ${key}`, body: { model, messages: [{ role: 'user', content: `a "quoted", comma text for ${name}` }] },
        });
        assert.equal(chat.status, 200, chat.text);
      }
    }
    await gateway.gateway.context.ledger.flush();
    browser = await launchChromium();
  });

  after(async () => {
    await browser?.close();
    await gateway?.close();
    for (const tab of tabs) assert.deepEqual(tab.problems, [], 'no CSP violation or script error on any page');
  });

  async function newTab(options: Parameters<typeof openTab>[2] = {}): Promise<Page> {
    const tab = await openTab(browser, gateway.url, options);
    tabs.push(tab);
    return tab.page;
  }

  async function visit(page: Page, name: string): Promise<void> {
    await page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name }).click();
    await page.getByRole('heading', { name, level: 1 }).waitFor();
    await page.locator('.loading').waitFor({ state: 'detached' });
  }

  test('at 360 px no page scrolls sideways, and the key dialog fits the screen', async () => {
    const page = await newTab({ viewport: { width: 360, height: 740 }, isMobile: true, hasTouch: true });
    await signIn(page, gateway.url, token);
    for (const name of PAGES) {
      await visit(page, name);
      await page.locator('main table, main dl').first().waitFor();
      const width = await page.evaluate(() => document.documentElement.scrollWidth);
      assert.ok(width <= 360, `${name}: the page is ${width} px wide`);
    }
    await visit(page, 'Keys');
    await page.getByRole('button', { name: 'Create key' }).click();
    const box = await page.getByRole('dialog').boundingBox();
    assert.ok(box && box.x >= 0 && box.x + box.width <= 360, `the dialog spans ${JSON.stringify(box)}`);
    assert.ok(await page.evaluate(() => document.documentElement.scrollWidth) <= 360);
  });

  test('dark follows the system until light or dark is chosen, and the choice stays', async () => {
    const page = await newTab({ colorScheme: 'dark' });
    const background = () => page.evaluate(() => {
      const [r, g, b] = getComputedStyle(document.body).backgroundColor.match(/\d+/g)!.map(Number);
      return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255;
    });
    await signIn(page, gateway.url, token);
    assert.ok(await background() < 0.2, 'dark by the system');
    await page.getByLabel('Theme').selectOption('light');
    assert.ok(await background() > 0.8, 'light when chosen');
    await page.reload();
    await page.getByRole('heading', { name: 'Keys', level: 1 }).waitFor();
    assert.ok(await background() > 0.8, 'the choice survives a reload');
    await page.getByLabel('Theme').selectOption('dark');
    assert.ok(await background() < 0.2);
  });

  test('the keyboard alone signs in, opens and closes a dialog, and focus comes back', async () => {
    const page = await newTab();
    await page.goto(`${gateway.url}/console/`);
    await page.getByLabel('Access token or admin token').waitFor();
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'token', 'the token field has the focus');
    await page.keyboard.type(token);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Keys', level: 1 }).waitFor();
    await page.locator('table.keys tbody tr').first().waitFor();
    const create = page.getByRole('button', { name: 'Create key' });
    for (let presses = 0; presses < 40 && !(await create.evaluate((element) => element === document.activeElement)); presses += 1) {
      await page.keyboard.press('Tab');
    }
    assert.ok(await create.evaluate((element) => element === document.activeElement), 'Create key is reachable with Tab');
    await page.keyboard.press('Enter');
    await page.getByRole('dialog').waitFor();
    assert.ok(await page.evaluate(() => document.activeElement?.closest('dialog') !== null), 'the focus moves into the dialog');
    await page.keyboard.press('Escape');
    await page.getByRole('dialog').waitFor({ state: 'detached' });
    // the focus comes back once the dialog has closed (Chromium restores it on close, the page again on unmount)
    await page.waitForFunction(() => document.activeElement?.textContent === 'Create key' && document.activeElement.closest('dialog') === null,
      undefined, { timeout: 5000 }).catch(() => undefined);
    assert.ok(await create.evaluate((element) => element === document.activeElement),
      `the focus returns to the button (it is on ${await page.evaluate(() => document.activeElement?.outerHTML.slice(0, 80))})`);
  });

  test('every field on every page has a label', async () => {
    const page = await newTab();
    await signIn(page, gateway.url, token);
    const unlabelled = () => page.evaluate(() => [...document.querySelectorAll('input, select, textarea')]
      .filter((element) => {
        const control = element as HTMLInputElement;
        return (control.labels?.length ?? 0) === 0 && !control.getAttribute('aria-label') && !control.getAttribute('aria-labelledby');
      }).map((element) => element.outerHTML.slice(0, 120)));
    for (const name of PAGES) {
      await visit(page, name);
      assert.deepEqual(await unlabelled(), [], name);
    }
    await visit(page, 'Keys');
    await page.getByRole('button', { name: 'Create key' }).click();
    assert.deepEqual(await unlabelled(), [], 'the key form');
  });

  test('a slow answer shows a loading notice; an API refusal is shown in the form that caused it', async () => {
    const page = await newTab();
    await signIn(page, gateway.url, token);
    await page.route('**/api/token/?p=*', async (route) => { await new Promise((resolve) => setTimeout(resolve, 1200)); await route.continue(); });
    await page.reload();
    await page.getByRole('status').filter({ hasText: 'Loading keys…' }).waitFor();
    await page.locator('table.keys tbody tr').first().waitFor();
    assert.equal(await page.getByText('Loading keys…').count(), 0, 'the notice goes once the keys are there');
    await page.unroute('**/api/token/?p=*');

    // the account may hold MAX_KEYS keys: the third is made, the fourth is refused by the API
    for (const name of ['gamma', 'delta']) {
      await page.getByRole('button', { name: 'Create key' }).click();
      const dialog = page.getByRole('dialog');
      await dialog.getByLabel('Name').fill(name);
      await dialog.getByRole('button', { name: 'Create key' }).click();
      if (name === 'gamma') { await dialog.waitFor({ state: 'detached' }); continue; }
      await dialog.getByRole('alert').filter({ hasText: `this account already has the maximum of ${MAX_KEYS} keys` }).waitFor();
      await dialog.getByRole('button', { name: 'Cancel' }).click();
    }
    assert.equal((await call(gateway.url, 'GET', '/api/token/?p=0', { token })).json.data.total, MAX_KEYS);
  });

  test('usage filters, totals and the CSV export agree with the API', async () => {
    const page = await newTab();
    await signIn(page, gateway.url, token);
    await visit(page, 'Usage');
    const all = (await call(gateway.url, 'GET', '/api/log/?page_size=100', { token })).json.data.items as any[];
    assert.equal(all.length, 4);
    await page.getByLabel('Model', { exact: true }).selectOption('sim-claude');
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.getByTestId('total-calls').filter({ hasText: /^2$/ }).waitFor();
    const claude = all.filter((record) => record.model === 'sim-claude');
    const quota = claude.reduce((sum, record) => sum + record.quota, 0);
    assert.equal(await page.getByTestId('total-quota').innerText(), `${quota.toLocaleString('en-US')} quota`);
    // the totals and the rows come from two answers: the rows may show a moment after the totals
    await page.waitForFunction(() => document.querySelectorAll('table.usage tbody tr').length === 2, undefined, { timeout: 10_000 }).catch(() => undefined);
    assert.equal(await page.locator('table.usage tbody tr').count(), 2);

    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Export CSV' }).click()]);
    const text = readFileSync((await download.path())!, 'utf8');
    const lines = text.trimEnd().split('\r\n');
    assert.equal(lines[0], 'id,time,time_iso,key_id,key_name,model,channel,endpoint,prompt_tokens,completion_tokens,cache_read_tokens,cache_creation_tokens,quota,usd,latency_ms,first_byte_ms,status,end_reason,usage_source,stream');
    assert.equal(lines.length, 3);
    const rows = lines.slice(1).map((line) => line.split(','));
    assert.deepEqual(rows.map((row) => Number(row[0])).sort(), claude.map((record) => record.id).sort());
    assert.equal(rows.reduce((sum, row) => sum + Number(row[12]), 0), quota);
    for (const row of rows) assert.equal(row[5], 'sim-claude');
    await page.getByText('Exported 2 records.').waitFor();
  });

  test('a revoked token ends the session with the reason, and sign-in comes back', async () => {
    const reader = await addAccount(gateway, 'revoked-shop');
    const page = await newTab();
    await signIn(page, gateway.url, reader.token);
    await gateway.gateway.context.store.accounts.revokeAccessTokens(reader.id);
    await visit(page, 'Balance').catch(() => undefined);
    await page.getByText('Signed out: access token is invalid').waitFor();
    await page.getByLabel('Access token or admin token').waitFor();
    assert.equal(await page.evaluate(() => sessionStorage.length), 0, 'nothing of the session is kept');
  });
});
