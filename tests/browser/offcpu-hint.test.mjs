// offcpu-hint.test.mjs - the dashboard of a flamed started without --off-cpu (a fresh database): picking
// Off-CPU or Wall says that off-CPU time is not recorded and how to record it, instead of an empty graph.
// With --refused PROGRAM: a flamed started with --off-cpu whose off-CPU program the kernel refused says so,
// with the program and the kernel's error.
// Prints "PASS: step" or "FAIL: step: why" per step, exits 1 on any failure.
// node offcpu-hint.test.mjs --url http://127.0.0.1:PORT --shots DIR [--refused PROGRAM] [--chromium PATH]
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { TIMEOUT, assert, collectErrors, launch, stepper } from './harness.mjs';

const { values: arg } = parseArgs({
  options: { url: { type: 'string' }, shots: { type: 'string' }, refused: { type: 'string' },
    chromium: { type: 'string', default: '/usr/bin/chromium' } },
});
for (const k of ['url', 'shots']) {
  if (!arg[k]) {
    console.log(`FAIL: arguments: --${k} is missing`);
    process.exit(1);
  }
}
const browser = await launch(arg.chromium, { width: 1440, height: 900 });
mkdirSync(arg.shots, { recursive: true });
const page = browser.context.pages()[0] || await browser.context.newPage();
page.setDefaultTimeout(TIMEOUT);
const errors = collectErrors(page);
const T = (id) => page.locator(`[data-testid="${id}"]`);

const { step, until, failed } = stepper(page, (shot) => join(arg.shots, `dashboard-${shot}.png`));
const hint = () => T('kind-hint').evaluate((e) => (e.hidden ? '' : e.textContent));

if (arg.refused) {
  await step(`with --off-cpu refused by the kernel, Off-CPU says so and names ${arg.refused}`, 'offcpu-refused', async () => {
    // The first status is held back until the flame graph has said it is empty: the views' texts follow it.
    let empty = null;
    await page.route('**/api/v1/status', async (route) => {
      await (empty ||= until(async () => (await T('flame-panel-status').getAttribute('data-kind')) === 'empty',
        'the flame graph does not say it is empty before the status comes'));
      await route.continue();
    });
    await page.goto(`${arg.url}/#kind=offcpu`);
    const text = await until(async () => (await hint()).includes('refused') && (await hint()), 'no hint says the kernel refused');
    assert(/started with --off-cpu, but the kernel refused its off-CPU program/.test(text), `the hint reads "${text}"`);
    const why = await T('offcpu-refused').textContent();
    assert(why.includes(arg.refused) && /: \S/.test(why), `the reason reads "${why}"`);
    const why2 = await T('flame-panel-status').textContent();
    assert(why2.includes('refused'), `the empty flame graph does not say why: "${why2}"`);
    assert((await T('daemon-status').textContent()).includes('off-CPU refused by the kernel'), 'the header does not say off-CPU was refused');
    await page.unroute('**/api/v1/status');
    assert(/unrecorded/.test(await T('kind-wall').getAttribute('class')), 'Wall is not marked as lacking off-CPU time');
  });
  await step('CPU still shows the samples, without the hint', null, async () => {
    await T('kind-cpu').click();
    await until(async () => (await hint()) === '', 'the hint stays with CPU picked');
    await page.locator('[data-testid="process-row"]').first().waitFor();
  });
  await step('no script error, no console error', null, async () => {
    assert(!errors.page.length && !errors.console.length, [...errors.page, ...errors.console].join(' | '));
  });
  await browser.close();
  process.exit(failed() ? 1 : 0);
}

await step('without --off-cpu, Off-CPU says it is not recorded and how to record it', 'offcpu-hint', async () => {
  await page.goto(`${arg.url}/#kind=offcpu`);
  const text = await until(async () => (await hint()).includes('--off-cpu') && (await hint()), 'no hint about --off-cpu shows');
  assert(/start flamed with --off-cpu/.test(text), `the hint reads "${text}"`);
  await until(async () => (await T('flame-panel-status').getAttribute('data-kind')) === 'empty', 'the flame graph does not say it is empty');
  const empty = await T('flame-panel-status').textContent();
  assert(empty.includes('--off-cpu'), `the empty flame graph does not say why: "${empty}"`);
});

await step('CPU shows the samples, without the hint', null, async () => {
  await T('kind-cpu').click();
  await until(async () => (await hint()) === '', 'the hint stays with CPU picked');
  await page.locator('[data-testid="process-row"]').first().waitFor();
});

await step('Wall says it is CPU time alone here, and shows it in time', 'wall-hint', async () => {
  await T('kind-wall').click();
  const text = await until(async () => (await hint()).includes('--off-cpu') && (await hint()), 'no hint about --off-cpu shows');
  assert(/CPU time alone/.test(text), `the hint reads "${text}"`);
  const v = await until(async () => {
    const t = (await page.locator('[data-testid="process-row"] td').last().textContent()).trim();
    return /^\d[\d,]*(\.\d+)? (us|ms|s)$/.test(t) && t;
  }, 'the process list does not show wall-clock time');
  assert(v, 'no value');
});

await step('a status saying off_cpu.enabled false: the hint says flamed was started without --off-cpu', null, async () => {
  // A flamed whose status does not say yet gets it added; one that says is taken as it is.
  await page.route('**/api/v1/status', async (route) => {
    const res = await route.fetch();
    const body = await res.json();
    if (!body.off_cpu) body.off_cpu = { enabled: false };
    await route.fulfill({ response: res, json: body });
  });
  await page.goto('about:blank');
  await page.goto(`${arg.url}/#kind=offcpu`);
  const text = await until(async () => (await hint()).includes('started without --off-cpu') && (await hint()),
    'the hint does not say flamed was started without --off-cpu');
  assert(text.includes('start flamed with --off-cpu'), `the hint reads "${text}"`);
  assert(/unrecorded/.test(await T('kind-wall').getAttribute('class')), 'Wall is not marked as lacking off-CPU time');
  assert((await T('daemon-status').textContent()).includes('off-CPU off'), 'the header does not say off-CPU is off');
  await page.unroute('**/api/v1/status');
});

await step('no script error, no console error', null, async () => {
  assert(!errors.page.length && !errors.console.length, [...errors.page, ...errors.console].join(' | '));
});

await browser.close();
process.exit(failed() ? 1 : 0);
