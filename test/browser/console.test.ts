// The web console in a real headless Chromium against the real gateway (simulated models): every
// step acts through the page as a person would and then checks what the page shows and what the API
// says. No Content-Security-Policy violation and no script error may happen on any page.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { launchChromium } from '../../scripts/chromium';
import { EMBEDDED_CONFIG } from '../../src/config';
import { addAccount, call, startTestGateway, type TestGateway } from '../helpers/gateway';
import { assertMoneyInvariants, moneySnapshot } from '../helpers/money';
import { openTab, signIn as signInAs, type Tab } from '../helpers/console-browser';

const REVEAL_LIMIT = 4;
const en = (value: number) => value.toLocaleString('en-US');

describe('web console in Chromium', () => {
  let gateway: TestGateway;
  let browser: Browser;
  let writeToken: string;
  let readToken: string;
  let accountId: number;
  const tabs: Tab[] = [];

  before(async () => {
    gateway = await startTestGateway({ raw: { ...EMBEDDED_CONFIG, limits: { reveal: { count: REVEAL_LIMIT, window_seconds: 600 } } } });
    const account = await addAccount(gateway, 'shop', 'write');
    accountId = account.id;
    writeToken = account.token;
    readToken = (await addAccount(gateway, 'shop', 'read')).token;
    await gateway.gateway.context.store.accounts.topUp(accountId, 5_000_000);
    browser = await launchChromium();
  });

  after(async () => {
    await browser?.close();
    await gateway?.close();
    for (const tab of tabs) assert.deepEqual(tab.problems, [], 'no CSP violation or script error on any page');
  });

  async function newTab(): Promise<Tab> {
    const tab = await openTab(browser, gateway.url);
    tabs.push(tab);
    return tab;
  }

  const signIn = (page: Page, token: string) => signInAs(page, gateway.url, token);

  const keysApi = async () => (await call(gateway.url, 'GET', '/api/token/?p=0', { token: writeToken })).json.data;

  test('sign in, create a capped key, reveal it, call with it, see the call billed, disable it', async () => {
    const { page } = await newTab();
    await page.goto(`${gateway.url}/console/`);
    await page.getByLabel('Access token or admin token').fill('not-a-token');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByText('access token is invalid').waitFor();
    await signIn(page, writeToken);
    assert.equal(await page.evaluate(() => document.cookie), '', 'no cookie holds the token');
    await page.getByText('No keys yet.').waitFor();

    // create: a name over the limit is refused by the field, as the API words it, and nothing is created
    await page.getByRole('button', { name: 'Create key' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByLabel('Name').fill('x'.repeat(51));
    await dialog.getByLabel('Cap (quota)').fill('1000000');
    assert.equal(await dialog.getByLabel('Cap (USD)').inputValue(), '2');
    await dialog.getByRole('button', { name: 'Create key' }).click();
    await dialog.locator('#key-name-error').getByText('name is too long: at most 50 characters (got 51)').waitFor();
    assert.equal(await dialog.getByLabel('Name').getAttribute('aria-invalid'), 'true');
    assert.equal((await keysApi()).total, 0);

    await dialog.getByLabel('Name').fill('customer-1');
    await dialog.getByRole('button', { name: 'Create key' }).click();
    await dialog.waitFor({ state: 'detached' });
    const created = (await keysApi()).items;
    assert.equal(created.length, 1);
    assert.equal(created[0].name, 'customer-1');
    assert.equal(created[0].remain_quota, 1_000_000);
    assert.equal(created[0].unlimited_quota, false);
    const row = page.locator(`tr[data-key-id="${created[0].id}"]`);
    await row.getByText('1,000,000 ($2.00)').waitFor();
    await row.getByText(created[0].key).waitFor();   // the masked form, as the API lists it

    // reveal: the full key in the dialog, copied to the clipboard, and the same key the API reveals
    await row.getByRole('button', { name: 'Reveal' }).click();
    const revealed = await page.locator('#revealed-key').inputValue();
    assert.match(revealed, /^sk-[0-9A-Za-z]{48}$/);
    await page.getByRole('button', { name: 'Copy' }).click();
    await page.getByText('Copied to the clipboard.').waitFor();
    assert.equal(await page.evaluate(() => navigator.clipboard.readText()), revealed);
    await page.getByRole('dialog').getByRole('button', { name: 'Close', exact: true }).click();
    assert.equal(await page.locator('#revealed-key').count(), 0, 'the full key leaves the page with its dialog');
    assert.equal(await page.getByText(revealed).count(), 0);

    const before = await moneySnapshot(gateway.gateway.context.store);
    const chat = await call(gateway.url, 'POST', '/v1/chat/completions', {
      token: `Bearer ${revealed}`, body: { model: 'sim-gpt-mini', messages: [{ role: 'user', content: 'hello from the console test' }] },
    });
    assert.equal(chat.status, 200, chat.text);
    await gateway.gateway.context.ledger.flush();
    const log = (await call(gateway.url, 'GET', '/api/log/?p=0', { token: writeToken })).json.data;
    assert.equal(log.total, 1);
    const record = log.items[0];
    assert.ok(record.quota > 0);
    await assertMoneyInvariants(gateway.gateway.context.store, before, 'one console-made key call');

    // usage: the call with its quota, and the totals for the range
    await page.getByRole('link', { name: 'Usage' }).click();
    await page.getByRole('heading', { name: 'Usage', level: 1 }).waitFor();
    const usageRow = page.locator(`tr[data-record-id="${record.id}"]`);
    await usageRow.locator('.quota').getByText(`${en(record.quota)} ($`).waitFor();
    assert.match(await usageRow.innerText(), /customer-1/);
    assert.match(await usageRow.innerText(), /sim-gpt-mini/);
    assert.equal(await page.getByTestId('total-quota').innerText(), `${en(record.quota)} quota`);
    assert.equal(await page.getByTestId('total-calls').innerText(), '1');
    await page.locator('.chart canvas').first().waitFor();

    // disable: the page shows it, the API stores it, the key's next call is refused
    await page.getByRole('link', { name: 'Keys' }).click();
    await row.getByRole('button', { name: 'Disable' }).click();
    await row.getByText('disabled', { exact: true }).waitFor();
    assert.equal((await keysApi()).items[0].status, 2);
    const refused = await call(gateway.url, 'POST', '/v1/chat/completions', {
      token: `Bearer ${revealed}`, body: { model: 'sim-gpt-mini', messages: [{ role: 'user', content: 'again' }] },
    });
    assert.equal(refused.status, 401);
    assert.equal(refused.json.error.message, 'Invalid token.');
    await row.getByRole('button', { name: 'Enable' }).waitFor();
  });

  test('a read-only token gets the lists without a single write control', async () => {
    const { page } = await newTab();
    await signIn(page, readToken);
    await page.getByTestId('read-only-badge').waitFor();
    await page.locator('table.keys tbody tr').first().waitFor();
    for (const name of ['Create key', 'Reveal', 'Edit', 'Disable', 'Enable', 'Delete']) {
      assert.equal(await page.getByRole('button', { name, exact: true }).count(), 0, `no "${name}" button`);
    }
    assert.equal(await page.locator('input[type="checkbox"]').count(), 0, 'no selection boxes');
    await page.getByRole('link', { name: 'Balance' }).click();
    await page.getByTestId('balance-quota').waitFor();
    const account = (await gateway.gateway.context.store.accounts.get(accountId))!;
    assert.equal(await page.getByTestId('balance-quota').innerText(), `${en(account.balance)} quota`);
  });

  test('edit, enable and disable many, delete with confirmation', async () => {
    for (const name of ['bulk-a', 'bulk-b']) {
      const answer = await call(gateway.url, 'POST', '/api/token/', { token: writeToken, body: { name, remain_quota: 500_000 } });
      assert.equal(answer.json.success, true, answer.text);
    }
    const { page } = await newTab();
    await signIn(page, writeToken);
    const items = (await keysApi()).items as Array<{ id: number; name: string; status: number }>;
    const bulk = items.filter((key) => key.name.startsWith('bulk-'));
    for (const key of bulk) await page.getByRole('checkbox', { name: `Select ${key.name}` }).check();
    await page.getByRole('group', { name: 'Selected keys' }).getByRole('button', { name: 'Disable' }).click();
    await page.getByText('2 keys disabled.').waitFor();
    for (const key of (await keysApi()).items.filter((key: { name: string }) => key.name.startsWith('bulk-'))) assert.equal(key.status, 2);
    for (const key of bulk) await page.getByRole('checkbox', { name: `Select ${key.name}` }).check();
    await page.getByRole('group', { name: 'Selected keys' }).getByRole('button', { name: 'Enable' }).click();
    await page.getByText('2 keys enabled.').waitFor();
    for (const key of (await keysApi()).items.filter((key: { name: string }) => key.name.startsWith('bulk-'))) assert.equal(key.status, 1);

    // edit keeps what is not changed: the full replace the page sends carries every field
    const first = bulk[0];
    await page.locator(`tr[data-key-id="${first.id}"]`).getByRole('button', { name: 'Edit' }).click();
    const dialog = page.getByRole('dialog');
    assert.equal(await dialog.getByLabel('Cap (quota)').inputValue(), '500000');
    await dialog.getByLabel('Name').fill('bulk-a-renamed');
    await dialog.getByLabel('Remark').fill('for the shop front');
    await dialog.getByRole('button', { name: 'Save' }).click();
    await dialog.waitFor({ state: 'detached' });
    const edited = (await call(gateway.url, 'GET', `/api/token/${first.id}`, { token: writeToken })).json.data;
    assert.equal(edited.name, 'bulk-a-renamed');
    assert.equal(edited.remark, 'for the shop front');
    assert.equal(edited.remain_quota, 500_000);

    // delete asks first; Cancel keeps the key, Delete removes it
    const row = page.locator(`tr[data-key-id="${first.id}"]`);
    await row.getByRole('button', { name: 'Delete' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Cancel' }).click();
    assert.equal((await call(gateway.url, 'GET', `/api/token/${first.id}`, { token: writeToken })).json.success, true);
    await row.getByRole('button', { name: 'Delete' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Delete key' }).click();
    await row.waitFor({ state: 'detached' });
    assert.equal((await call(gateway.url, 'GET', `/api/token/${first.id}`, { token: writeToken })).json.message, 'record not found');
  });

  test('the reveal dialog says so when the reveal rate limit is hit', async () => {
    const { page } = await newTab();
    await signIn(page, writeToken);
    const key = (await keysApi()).items[0];
    const row = page.locator(`tr[data-key-id="${key.id}"]`);
    for (let attempt = 0; attempt <= REVEAL_LIMIT; attempt += 1) {
      await row.getByRole('button', { name: 'Reveal' }).click();
      const limited = page.getByTestId('reveal-rate-limit');
      await page.locator('#revealed-key').or(limited).waitFor();
      const hit = await limited.count() > 0;
      await page.getByRole('dialog').getByRole('button', { name: 'Close', exact: true }).click();
      if (hit) break;
      assert.ok(attempt < REVEAL_LIMIT, `reveal ${attempt + 1} was not limited`);
    }
    await row.getByRole('button', { name: 'Reveal' }).click();
    const message = await page.getByTestId('reveal-rate-limit').innerText();
    assert.match(message, new RegExp(`key reveal is limited to ${REVEAL_LIMIT} calls per 600 seconds; try again in \\d+ s`));
    assert.equal(await page.locator('#revealed-key').count(), 0);
  });
});
