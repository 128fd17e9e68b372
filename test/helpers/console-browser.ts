// Shared by the console's browser tests: a tab (its own context, so its own sessionStorage) that
// records what must never happen on a console page, and sign-in as a person does it.
import type { Browser, BrowserContext, Page } from 'playwright-core';

export interface Tab { context: BrowserContext; page: Page; problems: string[] }

/**
 * A new tab on `baseUrl` that records CSP violations and script errors (Chromium reports both as
 * console errors) and console files that fail to load. API refusals (401, 404 …) belong to the flows.
 */
export async function openTab(browser: Browser, baseUrl: string, options: Parameters<Browser['newContext']>[0] = {}): Promise<Tab> {
  const context = await browser.newContext({ locale: 'en-US', timezoneId: 'Asia/Kolkata', viewport: { width: 1280, height: 900 }, ...options });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: baseUrl });
  const page = await context.newPage();
  page.setDefaultTimeout(20_000);
  const tab: Tab = { context, page, problems: [] };
  page.on('console', (message) => {
    if (message.type() === 'error' && !message.text().startsWith('Failed to load resource')) tab.problems.push(`console: ${message.text()}`);
  });
  page.on('pageerror', (error) => tab.problems.push(`page error: ${error.message}`));
  page.on('response', (response) => {
    if (new URL(response.url()).pathname.startsWith('/console/') && response.status() >= 400) tab.problems.push(`${response.status()} ${response.url()}`);
  });
  return tab;
}

/** Signs in through the form and waits for the first page of that kind of token. */
export async function signIn(page: Page, baseUrl: string, token: string, firstHeading = 'Keys'): Promise<void> {
  await page.goto(`${baseUrl}/console/`);
  await page.getByLabel('Access token or admin token').fill(token);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: firstHeading, level: 1 }).waitFor();
}
