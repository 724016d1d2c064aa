// dashboard.test.mjs - drives flamed's dashboard in headless Chromium (Debian's /usr/bin/chromium)
// through what a person does: find the process, read its flame graph, search, zoom, invert, pick a
// thread, drag a window on the timeline, compare two windows, download, switch to off-CPU and wall-clock
// time (flamed runs with --off-cpu: the worker's idle phase is time off CPU). Prints "PASS: step" or
// "FAIL: step: why" per step, saves a screenshot of each under --shots, exits 1 on any failure.
//
// node dashboard.test.mjs --url http://127.0.0.1:PORT --pid PID --start T --from T --to T --shots DIR
//   pid: the tests/workloads/phases.c process; start: when it started (unix seconds, fractional);
//   from/to: a range holding its whole run (unix seconds).
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { TIMEOUT, assert, collectErrors, launch, stepper } from './harness.mjs';

const { values: arg } = parseArgs({
  options: {
    url: { type: 'string' }, pid: { type: 'string' }, start: { type: 'string' }, from: { type: 'string' },
    to: { type: 'string' }, shots: { type: 'string' }, chromium: { type: 'string', default: '/usr/bin/chromium' },
    pypid: { type: 'string' },
  },
});
for (const k of ['url', 'pid', 'start', 'from', 'to', 'shots']) {
  if (!arg[k]) {
    console.log(`FAIL: arguments: --${k} is missing`);
    process.exit(1);
  }
}
const PID = Number(arg.pid), START = Number(arg.start), FROM = Number(arg.from), TO = Number(arg.to);
const ORIGIN = new URL(arg.url).origin;
let shot = 0;

// ---- the browser ----
const browser = await launch(arg.chromium, { width: 1440, height: 1000 });
const page = browser.context.pages()[0] || await browser.context.newPage();
page.setDefaultTimeout(TIMEOUT);
const errors = collectErrors(page), foreign = [];
const apiRequests = []; // every /api/v1/ URL the page asked for, in order
page.on('request', (r) => {
  const u = r.url();
  if (u.startsWith(ORIGIN + '/api/v1/')) apiRequests.push(new URL(u));
  if (!u.startsWith(ORIGIN) && !u.startsWith('data:') && !u.startsWith('blob:') && u !== 'about:blank') foreign.push(u);
});
mkdirSync(arg.shots, { recursive: true });

// ---- helpers ----
const T = (id) => page.locator(`[data-testid="${id}"]`);
const frame = (graph, name) => page.locator(`[data-testid="${graph}"] g.frame[name="${name}"]`);
const totalOf = async (graph) => Number(await T(graph).getAttribute('data-total'));

// The file of screenshot NAME: numbered in the order taken.
const shotFile = (name) => join(arg.shots, `dashboard-${String(++shot).padStart(2, '0')}-${name}.png`);
const screenshot = async (name) => page.screenshot({ path: shotFile(name), fullPage: true });
// Runs one step: PASS, or FAIL with the reason; a screenshot when it names one.
const { step, until, failed } = stepper(page, shotFile);

// The x on the page of instant t (unix seconds) on the timeline, and its middle y.
async function timelineX(t) {
  await T('timeline').scrollIntoViewIfNeeded();
  const box = await page.locator('[data-testid="timeline"] .brush .overlay').boundingBox();
  assert(box, 'the timeline has no brush to drag on');
  return { x: box.x + (box.width * (t - FROM)) / (TO - FROM), y: box.y + box.height / 2 };
}

async function drag(t0, t1) {
  const a = await timelineX(t0), b = await timelineX(t1);
  await page.mouse.move(a.x, a.y);
  await page.mouse.down();
  await page.mouse.move(b.x, b.y, { steps: 12 });
  await page.mouse.up();
}

// Frame geometry: [x, y, width] of a flame graph frame, from its transform and rect.
const geometry = (loc) => loc.first().evaluate((g) => {
  const m = /translate\(([-\d.e]+),\s*([-\d.e]+)\)/.exec(g.getAttribute('transform') || '');
  return [m ? +m[1] : NaN, m ? +m[2] : NaN, +g.querySelector('rect').getAttribute('width')];
});
const svgWidth = (graph) => page.locator(`[data-testid="${graph}"] svg`).first().evaluate((s) => +s.getAttribute('width'));
// A number the page keeps in its URL's #fragment.
const hashNumber = (k) => Number(new URLSearchParams(new URL(page.url()).hash.slice(1)).get(k));
const settle = () => page.waitForTimeout(700); // d3 transitions (250 ms) and their delayed labels
// A time as the page writes it: "850 us", "12.5 ms", "3.20 s", "1,234 s".
const TIME = /^\d[\d,]*(\.\d+)? (us|ms|s)$/;
// The last cell of a table row.
const lastCell = (row) => row.locator('td').last().textContent().then((t) => t.trim());
// Waits until each API path has been asked for since apiRequests[since] with kind=kind (and, with
// extra, those parameters), and none of them with another kind; returns those requests.
async function askedFor(since, kind, paths, extra = {}) {
  const fits = (u) => Object.entries(extra).every(([k, v]) => u.searchParams.get(k) === String(v));
  await until(async () => paths.every((p) => apiRequests.slice(since).some((u) =>
    u.pathname === `/api/v1/${p}` && u.searchParams.get('kind') === kind && fits(u))),
  `every view asks for kind=${kind} (${paths.join(', ')}); asked: ${apiRequests.slice(since).map((u) => u.pathname + u.search).join(' ')}`);
  const other = apiRequests.slice(since).filter((u) => paths.some((p) => u.pathname === `/api/v1/${p}`) &&
    u.searchParams.get('kind') !== kind && u.pathname !== '/api/v1/timeline');
  assert(!other.length, `asked with another kind: ${other.map((u) => u.pathname + u.search).join(' ')}`);
}

// ---- the steps ----
await step('the dashboard loads from flamed, self-contained', 'loaded', async () => {
  const res = await page.goto(arg.url + '/');
  assert(res && res.ok(), `GET / answered ${res && res.status()}`);
  const csp = res.headers()['content-security-policy'] || '';
  assert(csp.includes("connect-src 'self'"), `no strict Content-Security-Policy: "${csp}"`);
  await T('process-table').waitFor();
  await until(async () => (await T('daemon-status').textContent()).includes('CPUs'), 'the header shows the daemon status');
});

await step('the process table lists the workload with its CPU share', null, async () => {
  const row = page.locator(`[data-testid="process-row"][data-key="${PID}"]`);
  await row.waitFor();
  const text = await row.textContent();
  assert(text.includes('phases'), `its row reads "${text}"`);
  assert(/\d+(\.\d+)?%/.test(text), `its row shows no share: "${text}"`);
});

await step('the process filter keeps matching rows only (and their ancestors, shown as context)', null, async () => {
  await T('process-filter').fill('phas');
  await until(async () => {
    const names = await page.locator('[data-testid="process-row"]:not(.context)').allTextContents();
    return names.length > 0 && names.every((n) => n.includes('phas')) && names;
  }, 'only rows matching "phas" are left');
  await T('process-filter').fill('no-such-process-name');
  await until(async () => (await page.locator('[data-testid="process-row"]').count()) === 0, 'no row matches a bogus name');
  await T('process-filter').fill('');
});

await step('the process table sorts by a clicked column', null, async () => {
  await T('process-table-sort-pid').click();
  await until(async () => (await T('process-table-sort-pid').getAttribute('aria-sort')) !== 'none', 'the PID column is the sort key');
  // A tree: the roots in PID order, and the children of each process under it in PID order.
  const rows = await page.locator('[data-testid="process-row"]').evaluateAll((rs) => rs.map((r) => [+r.dataset.parent, +r.dataset.key]));
  const levels = new Map();
  for (const [parent, pid] of rows) levels.set(parent, [...(levels.get(parent) || []), pid]);
  const up = (l) => l.every((x, i) => !i || l[i - 1] < x), down = (l) => l.every((x, i) => !i || l[i - 1] > x);
  assert([...levels.values()].every(up) || [...levels.values()].every(down), `rows are not in PID order: ${JSON.stringify([...levels])}`);
  await T('process-table-sort-share').click();
});

await step('a custom time range spans the workload on the timeline', 'range', async () => {
  await T('range-preset').selectOption('custom');
  await T('range-from').fill(String(FROM));
  await T('range-to').fill(String(TO));
  await T('range-apply').click();
  await until(async () => page.url().includes(`from=${FROM}`), 'the range is in the URL');
  await until(async () => Number(await page.locator('[data-testid="timeline"] svg').getAttribute('data-total')) > 0,
    'the timeline shows samples');
});

await step('selecting the process shows its leaf function in the flame graph', 'process', async () => {
  await page.locator(`[data-testid="process-row"][data-key="${PID}"]`).click();
  await frame('flamegraph', 'crunch_leaf').first().waitFor();
  await frame('flamegraph', 'write_loop').first().waitFor();
  assert((await T('flame-panel-title').textContent()).includes(`${PID}`), 'the flame graph title does not name the process');
  await page.locator('[data-testid="thread-row"]').first().waitFor();
  const threads = await page.locator('[data-testid="thread-row"]').allTextContents();
  assert(threads.some((t) => t.includes('worker')), `the threads table lacks the worker: ${threads}`);
  await page.locator('[data-testid="top-row"][data-key="crunch_leaf"]').waitFor();
  await settle();
});

await step('search highlights the leaf and says how much of the graph it matches', 'search', async () => {
  await T('flame-search').fill('crunch_le');
  const text = await until(async () => {
    const t = await T('flame-matched').textContent();
    return /\d% matched/.test(t) && t;
  }, 'the matched share shows');
  const pct = parseFloat(text);
  assert(pct > 20 && pct < 100, `crunch_leaf holds ${pct}% of the process, not a plausible share`);
  const fill = await frame('flamegraph', 'crunch_leaf').first().locator('rect').getAttribute('fill');
  assert(/^#e600e6$/i.test(fill), `crunch_leaf is not highlighted (fill ${fill})`);
  const other = await frame('flamegraph', 'write_loop').first().locator('rect').getAttribute('fill');
  assert(!/^#e600e6$/i.test(other), 'write_loop is highlighted too');
});

await step('clicking a top function highlights it in the flame graph', null, async () => {
  await page.locator('[data-testid="top-row"][data-key="write_loop"]').click();
  await until(async () => (await T('flame-search').inputValue()) === 'write_loop', 'the search box holds the function');
  await until(async () => /^#e600e6$/i.test(await frame('flamegraph', 'write_loop').first().locator('rect').getAttribute('fill')),
    'write_loop is highlighted');
  assert(!/^#e600e6$/i.test(await frame('flamegraph', 'crunch_leaf').first().locator('rect').getAttribute('fill')),
    'crunch_leaf is still highlighted');
  await T('flame-search').fill('');
  await until(async () => (await T('flame-matched').textContent()) === '', 'clearing the search clears the matched share');
});

await step('clicking a frame zooms into it; reset shows everything again', 'zoom', async () => {
  const full = await svgWidth('flamegraph');
  await frame('flamegraph', 'crunch').first().click();
  await until(async () => (await geometry(frame('flamegraph', 'crunch')))[2] > 0.98 * full, 'crunch takes the whole width');
  await until(async () => !(await T('flame-reset').isDisabled()), 'Reset zoom is enabled');
  assert((await T('flame-zoom').textContent()).includes('crunch'), 'the zoom is not named');
  await settle();
  await screenshot('zoomed');
  await T('flame-reset').click();
  await until(async () => (await geometry(frame('flamegraph', 'crunch')))[2] < 0.95 * full, 'reset gives crunch its share back');
  await settle();
});

await step('the inverted toggle draws the icicle: hot leaves on top', 'inverted', async () => {
  const before = await geometry(frame('flamegraph', 'crunch_leaf'));
  await T('flame-inverted').check();
  await until(async () => (await T('flamegraph').getAttribute('data-inverted')) === '1', 'the graph is inverted');
  await frame('flamegraph', 'crunch_leaf').first().waitFor();
  const after = await geometry(frame('flamegraph', 'crunch_leaf'));
  assert(after[1] < 40, `crunch_leaf is not in the first rows (y ${after[1]}, before ${before[1]})`);
  assert(page.url().includes('inverted=1'), 'the URL does not carry the inverted view');
  await settle();
});

await step('toggling back draws the flame graph again', null, async () => {
  await T('flame-inverted').uncheck();
  await until(async () => (await T('flamegraph').getAttribute('data-inverted')) === '0', 'the graph is upright');
  await frame('flamegraph', 'crunch_leaf').first().waitFor();
});

await step('selecting the worker thread filters every view to it', 'thread', async () => {
  await frame('flamegraph', 'housekeeping').first().waitFor();
  const procTotal = await totalOf('flamegraph');
  await page.locator('[data-testid="thread-row"]', { hasText: 'worker' }).click();
  await until(async () => (await frame('flamegraph', 'housekeeping').count()) === 0 && (await frame('flamegraph', 'crunch_leaf').count()) > 0,
    'the main thread\'s housekeeping leaves the flame graph, the worker\'s crunch_leaf stays');
  assert((await totalOf('flamegraph')) < procTotal, 'the thread has as many samples as the process');
  await until(async () => (await T('timeline-panel-title').textContent()).includes('thread'), 'the timeline is the thread\'s');
  await until(async () => (await page.locator('[data-testid="top-row"][data-key="housekeeping_leaf"]').count()) === 0,
    'top functions still list the main thread\'s function');
  await settle();
  await screenshot('thread');
  await T('select-all-threads').click();
  await frame('flamegraph', 'housekeeping').first().waitFor();
  await settle();
});

let before = 0;
await step('dragging across the timeline shows that window in the flame graph', 'window', async () => {
  before = await totalOf('flamegraph');
  assert((await frame('flamegraph', 'write_loop').count()) > 0, 'write_loop is not in the whole range');
  await drag(START - 0.5, START + 3.5); // the worker's crunch phase only
  await until(async () => hashNumber('wto') && hashNumber('wto') <= Math.ceil(START + 3.5) + 1, 'the window dragged is in the URL');
  await until(async () => {
    const total = await totalOf('flamegraph');
    return total > 0 && total < before && (await frame('flamegraph', 'write_loop').count()) === 0 && total;
  }, `the flame graph keeps write_loop or its ${before} samples`);
  await frame('flamegraph', 'crunch_leaf').first().waitFor();
  assert(await T('clear-window').isVisible(), 'the selection line does not offer to leave the window');
  const procText = await page.locator(`[data-testid="process-row"][data-key="${PID}"]`).textContent();
  assert(procText.includes('phases'), 'the process left the table of the window');
  await settle();
});

await step('compare mode shows the differential flame graph of two windows', 'compare', async () => {
  await T('mode-compare').click();
  await T('compare').waitFor({ state: 'visible' });
  assert(await T('flame-panel').isHidden(), 'the profile panel is still shown');
  await T('compare-pick-base').click();
  await drag(START - 0.5, START + 3.5);
  await until(async () => hashNumber('bto') && hashNumber('bto') <= Math.ceil(START + 3.5) + 1, 'the base window is the drag\'s');
  await T('compare-pick-new').click();
  await drag(START + 6.5, START + 9);
  await until(async () => hashNumber('nfrom') >= Math.floor(START + 6.5) - 1, 'the new window is the drag\'s');
  await frame('diff-flamegraph', 'write_loop').first().waitFor();
  const color = async (name) => {
    const f = await frame('diff-flamegraph', name).first().locator('rect').getAttribute('fill');
    const m = /rgb\((\d+),\s*(\d+),\s*(\d+)\)/.exec(f);
    assert(m, `${name}: fill ${f}`);
    return m.slice(1).map(Number);
  };
  const grew = await until(async () => {
    const [r, , b] = await color('write_loop');
    return r > b + 20 && [r, b];
  }, 'write_loop (only in the new window) is not drawn as grown');
  assert(grew, 'write_loop grew');
  assert((await frame('diff-flamegraph', 'crunch_leaf').count()) === 0 || (await color('crunch_leaf'))[2] >= (await color('crunch_leaf'))[0],
    'crunch_leaf (gone in the new window) is drawn as grown');
  const base = await T('compare-base-window').textContent(), nw = await T('compare-new-window').textContent();
  assert(base !== nw && base.includes('–'), `the windows read "${base}" and "${nw}"`);
  await settle();
});

await step('the download links give folded, SVG and pprof of the view', null, async () => {
  await T('mode-profile').click();
  await T('flame-panel').waitFor({ state: 'visible' });
  const get = async (id) => {
    const href = await T(id).getAttribute('href');
    const r = await page.request.get(new URL(href, arg.url).href);
    assert(r.ok(), `${id}: ${href} answered ${r.status()}`);
    assert(href.includes(`pid=${PID}`), `${id}: ${href} is not the process's`);
    return r.body();
  };
  const folded = (await get('download-folded')).toString();
  assert(folded.includes('crunch_leaf') && !folded.includes('write_loop'), 'the folded download is not the window\'s');
  const svg = (await get('download-svg')).toString();
  assert(svg.includes('<svg') && svg.includes('crunch_leaf'), 'the SVG download has no flame graph');
  const pprof = await get('download-pprof');
  assert(pprof[0] === 0x1f && pprof[1] === 0x8b, 'the pprof download is not gzip');
});

await step('auto-refresh reloads the views by itself', null, async () => {
  const reloaded = page.waitForRequest((r) => r.url().includes('/api/v1/timeline'), { timeout: 12000 });
  await T('auto-refresh').check();
  await reloaded;
  await T('auto-refresh').uncheck();
});

await step('the CPU / Off-CPU / Wall switch: every view asks for the kind picked, the URL keeps it', 'offcpu', async () => {
  await page.goto('about:blank');
  let since = apiRequests.length;
  await page.goto(`${arg.url}/#pid=${PID}&comm=phases&preset=custom&from=${FROM}&to=${TO}`);
  await frame('flamegraph', 'crunch_leaf').first().waitFor();
  await askedFor(since, 'cpu', ['profile', 'top', 'timeline', 'processes', 'threads']);
  assert((await T('kind-cpu').getAttribute('aria-checked')) === 'true', 'CPU is not the kind picked at first');
  since = apiRequests.length;
  await T('kind-offcpu').click();
  await askedFor(since, 'offcpu', ['profile', 'top', 'timeline', 'processes', 'threads']);
  await until(async () => new URLSearchParams(new URL(page.url()).hash.slice(1)).get('kind') === 'offcpu', 'the URL keeps kind=offcpu');
  assert((await T('kind-offcpu').getAttribute('aria-checked')) === 'true', 'Off-CPU is not shown as picked');
  await until(async () => (await T('flamegraph').getAttribute('data-unit')) === 'microseconds', 'the flame graph is not in microseconds');
  for (const id of ['download-folded', 'download-svg', 'download-pprof'])
    assert((await T(id).getAttribute('href')).includes('kind=offcpu'), `${id} does not download the off-CPU profile`);
  assert(await T('kind-hint').isHidden(), `a flamed with --off-cpu gets the hint "${await T('kind-hint').textContent()}"`);
  await frame('flamegraph', 'worker_main').first().waitFor();
  await settle();
});

await step('off-CPU values read as times: process and thread lists, top table, flame graph, timeline', null, async () => {
  const total = await totalOf('flamegraph');
  assert(total >= 1.5e6, `the process waited ${total} us, not the worker's 2 s idle phase and the main thread's sleeps`);
  const proc = await lastCell(page.locator(`[data-testid="process-row"][data-key="${PID}"]`));
  assert(TIME.test(proc), `the process row's value reads "${proc}"`);
  assert((await T('process-table').locator('thead').textContent()).includes('Time'), 'the process table has no Time column');
  const worker = page.locator('[data-testid="thread-row"]', { hasText: 'worker' });
  const thread = await until(async () => (await worker.count()) && TIME.test(await lastCell(worker)) && await lastCell(worker),
    'the worker thread\'s value is not a time');
  assert(thread, 'no worker thread');
  const head = await T('top-table').locator('thead').textContent();
  assert(head.includes('Self time') && head.includes('Total time'), `the top table's columns read "${head}"`);
  const fn = await lastCell(page.locator('[data-testid="top-row"][data-key="worker_main"]'));
  assert(TIME.test(fn), `worker_main's total reads "${fn}"`);
  const tip = await frame('flamegraph', 'worker_main').first().locator('title').textContent();
  assert(/^worker_main — \d[\d,.]* (us|ms|s), [\d.]+%$/.test(tip), `the frame's tooltip reads "${tip}"`);
  assert((await T('flame-panel-title').textContent()).startsWith('Off-CPU flame graph'), 'the flame graph title does not say off-CPU');
  const svg = page.locator('[data-testid="timeline"] svg');
  await until(async () => (await svg.getAttribute('data-unit')) === 'microseconds', 'the timeline is not in time');
  assert((await page.locator('[data-testid="timeline"] .axis-label').textContent()) === 'time/s', 'the timeline axis is not labelled time/s');
  assert((await T('timeline-panel-title').textContent()).startsWith('Off-CPU time per second'), 'the timeline title does not say off-CPU');
});

await step('Wall: the timeline of the worker thread shows waiting (its idle phase) beside running', 'wall-thread', async () => {
  let since = apiRequests.length;
  await T('kind-wall').click();
  await askedFor(since, 'wall', ['profile', 'top', 'timeline', 'processes', 'threads']);
  since = apiRequests.length;
  await page.locator('[data-testid="thread-row"]', { hasText: 'worker' }).click();
  const tid = await until(async () => hashNumber('tid'), 'the worker thread is not picked');
  await askedFor(since, 'wall', ['profile', 'top', 'timeline'], { tid });
  assert(apiRequests.slice(since).some((u) => u.pathname === '/api/v1/timeline' && u.searchParams.get('kind') === 'offcpu' &&
    u.searchParams.get('tid') === String(tid)), 'the timeline does not ask for the waiting part (kind=offcpu)');
  const svg = page.locator('[data-testid="timeline"] svg');
  const [run, wait] = await until(async () => {
    if ((await svg.getAttribute('data-kind')) !== 'wall' || (await svg.getAttribute('data-tid')) !== String(tid)) return false;
    const r = Number(await svg.getAttribute('data-running')), w = Number(await svg.getAttribute('data-waiting'));
    return r > 0 && w > 0 && [r, w];
  }, 'the wall timeline does not show running and waiting apart');
  assert(run >= 1e6, `the worker ran ${run} us, not its 4 s crunch and 3 s write phases`);
  assert(wait >= 1e6 && wait < 6e6, `the worker waited ${wait} us, not its 2 s idle phase`);
  // Its biggest wait is after the crunch phase (the idle one, stored at the next flush).
  const bars = await page.locator('[data-testid="timeline-bars-waiting"] rect').evaluateAll((rs) =>
    rs.map((r) => [+r.dataset.t, +r.dataset.value]));
  const [t] = bars.reduce((a, b) => (b[1] > a[1] ? b : a), [0, -1]);
  assert(t >= START + 3 && t <= START + 9, `the most waiting is at ${t - START} s of the run, not in the idle phase (bars ${JSON.stringify(bars)})`);
  const tipText = await page.locator('[data-testid="timeline-bars-waiting"] rect title').first().textContent();
  assert(/: \d[\d,.]* (us|ms|s) running, \d[\d,.]* (us|ms|s) waiting$/.test(tipText), `a bar's tooltip reads "${tipText}"`);
  assert((await T('timeline-legend').textContent()).includes('waiting'), 'the timeline has no legend of its parts');
  assert((await T('timeline-panel-title').textContent()).startsWith('Running and waiting per second of thread'),
    `the timeline title reads "${await T('timeline-panel-title').textContent()}"`);
  await settle();
});

await step('a link reopens the kind; Compare and its downloads ask for it too', null, async () => {
  await page.goto('about:blank');
  await page.goto(`${arg.url}/#kind=wall&pid=${PID}&preset=custom&from=${FROM}&to=${TO}`);
  await until(async () => (await T('kind-wall').getAttribute('aria-checked')) === 'true', 'Wall is not picked from the link');
  await until(async () => (await T('flamegraph').getAttribute('data-unit')) === 'microseconds', 'the flame graph is not in time');
  const since = apiRequests.length;
  await T('mode-compare').click();
  await askedFor(since, 'wall', ['diff']);
  await until(async () => (await T('download-diff-folded').getAttribute('href') || '').includes('kind=wall'),
    'the differential download is not the wall-clock one');
  await T('mode-profile').click();
});

await step('back to CPU: samples again, counted, not timed', null, async () => {
  const since = apiRequests.length;
  await T('kind-cpu').click();
  await askedFor(since, 'cpu', ['profile', 'top', 'timeline', 'processes']);
  await until(async () => (await T('flamegraph').getAttribute('data-unit')) === 'samples', 'the flame graph is not in samples');
  await frame('flamegraph', 'crunch_leaf').first().waitFor();
  const proc = await until(async () => {
    const v = await lastCell(page.locator(`[data-testid="process-row"][data-key="${PID}"]`));
    return /^\d[\d,]*$/.test(v) && v;
  }, 'the process row\'s value is not a count of samples');
  assert(proc, 'no value');
  const head = await T('top-table').locator('thead').textContent();
  assert(head.includes('Self samples'), `the top table's columns read "${head}"`);
  assert(!page.url().includes('kind='), 'the URL still names a kind (cpu is the default)');
});

await step('a Python process: its functions in the Python colour, named in the legend', 'python', async () => {
  assert(arg.pypid, 'no --pypid given');
  await page.goto('about:blank');
  await page.goto(`${arg.url}/#pid=${arg.pypid}&preset=custom&from=${FROM}&to=${TO}`);
  await frame('flamegraph', 'tooth (pyspin.py)').first().waitFor();
  const fill = await frame('flamegraph', 'tooth (pyspin.py)').first().locator('rect').getAttribute('fill');
  const hue = /^hsl\((\d+)/.exec(fill || '');
  assert(hue && +hue[1] >= 262 && +hue[1] <= 285, `tooth (pyspin.py) is not in the Python colour (fill ${fill})`);
  const native = await frame('flamegraph', 'Py_RunMain').first().locator('rect').getAttribute('fill');
  assert(native !== fill && !/^hsl\(2[6-8]\d /.test(native || ''), `Py_RunMain is drawn like Python (fill ${native})`);
  const legend = await T('flame-panel').locator('.legend').first().textContent();
  assert(legend.includes('Python') && legend.includes('native'), `the legend reads "${legend}"`);
});

await step('no script error, no console error, nothing fetched from elsewhere', null, async () => {
  assert(!errors.page.length, `script errors: ${errors.page.join(' | ')}`);
  assert(!errors.console.length, `console errors: ${errors.console.join(' | ')}`);
  assert(!foreign.length, `requests outside flamed: ${foreign.join(' ')}`);
});

await step('an API error shows its text', 'error', async () => {
  await page.goto('about:blank');
  await page.goto(`${arg.url}/#pid=4194399`);
  await until(async () => (await T('flame-panel-status').getAttribute('data-kind')) === 'error', 'the flame panel shows no error');
  const text = await T('flame-panel-status').textContent();
  assert(/pid/.test(text) && /4194304/.test(text), `the error does not say what is wrong: "${text}"`);
});

await step('a window without samples says so', 'empty', async () => {
  await page.goto('about:blank');
  await page.goto(`${arg.url}/#preset=custom&from=1000000000&to=1000000600`);
  await until(async () => (await T('processes-status').getAttribute('data-kind')) === 'empty', 'the process table shows no empty state');
  await until(async () => (await T('flame-panel-status').getAttribute('data-kind')) === 'empty', 'the flame graph shows no empty state');
});

await browser.close();
console.log(`# screenshots in ${arg.shots}`);
process.exit(failed() ? 1 : 0);
