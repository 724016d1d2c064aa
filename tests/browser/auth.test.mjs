// auth.test.mjs - the dashboard of a flamed started with --auth-token-file: the page asks for the token
// once, sends it with its requests, and shows the API's refusal when it is wrong.
// node auth.test.mjs --url http://127.0.0.1:PORT --token TOKEN --shots DIR [--chromium PATH]
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { launch } from './harness.mjs';

const { values: arg } = parseArgs({
  options: { url: { type: 'string' }, token: { type: 'string' }, shots: { type: 'string' },
    chromium: { type: 'string', default: '/usr/bin/chromium' } },
});
let failed = 0;
const check = (ok, name, why) => {
  console.log(ok ? `PASS: ${name}` : `FAIL: ${name}: ${why}`);
  if (!ok) failed++;
};

const chromium = await launch(arg.chromium, { width: 1280, height: 800 }, null);
const browser = chromium.context;
mkdirSync(arg.shots, { recursive: true });
const T = (page, id) => page.locator(`[data-testid="${id}"]`);

// A wrong token first: the page asks, sends it, and shows the 401 the API answers.
let page = await browser.newPage();
let prompts = 0;
page.on('dialog', (d) => { prompts++; d.accept(prompts === 1 ? 'not-the-token' : arg.token); });
await page.goto(arg.url + '/');
try {
  await T(page, 'process-row').first().waitFor({ timeout: 15000 });
  check(prompts >= 1, 'the dashboard asks for the token on a 401, then lists processes with it', `${prompts} prompts`);
} catch (e) {
  check(false, 'the dashboard asks for the token on a 401, then lists processes with it', e.message);
}
await page.screenshot({ path: join(arg.shots, 'dashboard-auth.png') });

// The token is kept for the tab: a reload asks no more.
const before = prompts;
await page.reload();
try {
  await T(page, 'process-row').first().waitFor({ timeout: 15000 });
  check(prompts === before, 'the token is kept for the tab: a reload asks again no more', `${prompts - before} more prompts`);
} catch (e) {
  check(false, 'the token is kept for the tab', e.message);
}

// A download link carries the token too.
const link = T(page, 'download-folded');
let ok = false;
try {
  await link.waitFor({ timeout: 5000 });
  const [dl] = await Promise.all([page.waitForEvent('download', { timeout: 10000 }), link.click()]);
  ok = !!(await dl.path());
} catch (e) {
  ok = false;
}
check(ok, 'a download with the token in use', 'no file downloaded');
await chromium.close();
process.exit(failed ? 1 : 0);
