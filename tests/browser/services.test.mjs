// services.test.mjs - the processes panel grouped by service, in headless Chromium (Debian's /usr/bin/chromium) against a
// flamed that sampled a workload in a systemd unit's cgroup (web.service, in a cgroup v2 hierarchy the test mounted) beside
// other processes. Grouped by service, web.service is a row with its processes under it and their total; picking it makes
// every view ask for unit=web.service (the URL keeps it), its flame graph holds the workload's frames and none of the
// others'; picking it again, or the selection line's ×, shows the host again. Prints "PASS: step" or "FAIL: step: why" per
// step, saves screenshots under --shots, exits 1 on any failure.
//
// node services.test.mjs --url http://127.0.0.1:PORT --pid WORKLOAD --other PID --from T --to T --shots DIR
//   pid: the workload in web.service (tests/workloads/branches.c: main -> run -> alpha|beta -> leaf_spin);
//   other: a process of the same window in no such unit.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { TIMEOUT, assert, collectErrors, launch, stepper } from './harness.mjs';

const { values: arg } = parseArgs({
  options: {
    url: { type: 'string' }, pid: { type: 'string' }, other: { type: 'string' }, from: { type: 'string' }, to: { type: 'string' },
    shots: { type: 'string' }, chromium: { type: 'string', default: '/usr/bin/chromium' },
  },
});
for (const k of ['url', 'pid', 'other', 'from', 'to', 'shots']) {
  if (!arg[k]) {
    console.log(`FAIL: arguments: --${k} is missing`);
    process.exit(1);
  }
}
const PID = Number(arg.pid), OTHER = Number(arg.other), FROM = Number(arg.from), TO = Number(arg.to);
const UNIT = 'web.service', KEY = `unit:${UNIT}`;
const ORIGIN = new URL(arg.url).origin;
const browser = await launch(arg.chromium, { width: 1440, height: 1000 });
mkdirSync(arg.shots, { recursive: true });
const page = browser.context.pages()[0] || await browser.context.newPage();
page.setDefaultTimeout(TIMEOUT);
const errors = collectErrors(page);
const apiRequests = [];
page.on('request', (r) => { if (r.url().startsWith(ORIGIN + '/api/v1/')) apiRequests.push(new URL(r.url())); });

const T = (id) => page.locator(`[data-testid="${id}"]`);
const row = (key) => page.locator(`[data-testid="process-row"][data-key="${key}"]`);
const hash = () => new URLSearchParams(new URL(page.url()).hash.slice(1));
const num = (text) => Number(String(text).replace(/[^\d]/g, ''));
const asked = (since, path) => apiRequests.slice(since).filter((u) => u.pathname === `/api/v1/${path}`);
const { step, until, failed } = stepper(page, (shot) => join(arg.shots, `services-${shot}.png`));
async function api(path, params) {
  const r = await page.request.get(`${arg.url}${path}?${new URLSearchParams(params)}`);
  assert(r.ok(), `${path}: ${r.status()} ${await r.text()}`);
  return r.json();
}

const inUnit = (await api('/api/v1/processes', { from: FROM, to: TO, unit: UNIT })).processes;
const want = inUnit.reduce((s, p) => s + p.samples, 0);

await step('the API lists the workload in web.service', null, async () => {
  assert(inUnit.some((p) => p.pid === PID && p.unit === UNIT), `web.service's processes: ${JSON.stringify(inUnit)}`);
  assert(!inUnit.some((p) => p.pid === OTHER), `${OTHER} is listed in web.service`);
});

await step('grouped by service, web.service is a row with its processes under it and their total', 'grouped', async () => {
  await page.goto(`${arg.url}/#preset=custom&from=${FROM}&to=${TO}`);
  await T('group-service').click();
  await row(KEY).waitFor();
  assert((await T('group-service').getAttribute('aria-pressed')) === 'true', 'the "By service" button is not pressed');
  const depth = Number(await row(KEY).getAttribute('data-depth'));
  assert(depth === 0, `the service row is at depth ${depth}`);
  await row(PID).waitFor();
  assert((await row(PID).getAttribute('data-parent')) === KEY, `the workload's row is under ${await row(PID).getAttribute('data-parent')}`);
  const total = num(await row(KEY).locator('[data-testid="process-total"]').textContent());
  assert(total === want, `web.service's total reads ${total}, its processes' samples sum to ${want}`);
  assert((await row(OTHER).getAttribute('data-parent')) !== KEY, `${OTHER} is under web.service`);
  await T('processes').screenshot({ path: join(arg.shots, 'services-panel.png') });
});

let since = 0;
await step('picking web.service: unit=web.service in the URL and in every view\'s request', 'picked', async () => {
  since = apiRequests.length;
  await row(KEY).click();
  await until(() => hash().get('unit') === UNIT, `the URL is ${page.url()}`);
  await until(() => ['profile', 'top', 'timeline'].every((p) => asked(since, p).some((u) => u.searchParams.get('unit') === UNIT)),
    `every view asks with unit=${UNIT}; asked: ${apiRequests.slice(since).map((u) => u.pathname + u.search).join(' ')}`);
  await until(async () => (await T('selection').textContent()).includes(UNIT), 'the selection line does not name the service');
});

await step('its flame graph holds the workload (leaf_spin under run), web.service\'s samples alone', 'flame', async () => {
  const frame = (name) => page.locator(`[data-testid="flamegraph"] g.frame[name="${name}"]`);
  await frame('leaf_spin').first().waitFor();
  assert((await frame('run').count()) >= 1, 'no frame "run"');
  // What the page drew, asked again: its whole is web.service's samples, not the other process's too.
  const u = asked(since, 'profile').filter((x) => x.searchParams.get('unit') === UNIT).pop();
  const r = await page.request.get(u.href);
  const tree = await r.json();
  const other = (await api('/api/v1/processes', { from: FROM, to: TO })).processes.find((p) => p.pid === OTHER);
  assert(tree.value === want && other && other.samples > 0,
    `the flame graph's whole is ${tree.value}, web.service has ${want} (the other process ${other ? other.samples : 'none'})`);
});

await step('picking it again shows the host', null, async () => {
  since = apiRequests.length;
  await row(KEY).click();
  await until(() => !hash().has('unit'), `the URL still has the unit: ${page.url()}`);
  await until(() => asked(since, 'profile').some((u) => !u.searchParams.has('unit')), 'the flame graph is not asked for again');
});

await step('the selection line\'s × takes the service away', null, async () => {
  await row(KEY).click();
  await until(() => hash().get('unit') === UNIT, 'not picked again');
  await T('clear-service').click();
  await until(() => !hash().has('unit'), `the URL still has the unit: ${page.url()}`);
});

await step('no script error, no console error', null, async () => {
  assert(!errors.page.length && !errors.console.length, [...errors.page, ...errors.console].join(' | '));
});

await browser.close();
process.exit(failed() ? 1 : 0);
