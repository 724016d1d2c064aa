// tree.test.mjs - the processes panel as a tree, and picking a process with its children, in headless Chromium
// (Debian's /usr/bin/chromium) against a flamed that sampled a family: a parent that burned CPU while its two
// children (shorter-lived) did too. The parent shows with its children under it and totals that add up, folds
// and unfolds; picking it takes its children (children=1 in the URL and in every request about it, a root frame
// per process in the flame graph) and zooms to when they ran; picking a child zooms to its lifetime; a link as
// `flamectl record` prints opens exactly that run; "as one tree" (merge=1, a link of `record --merge` too) folds the
// family into one flame graph. Prints "PASS: step" or "FAIL: step: why" per step, saves
// screenshots under --shots, exits 1 on any failure.
//
// node tree.test.mjs --url http://127.0.0.1:PORT --pid PARENT --kids KID,KID --from T --to T --shots DIR
//   from/to: a range (unix seconds) holding the family's run and a good deal more.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { TIMEOUT, assert, collectErrors, launch, stepper } from './harness.mjs';

const { values: arg } = parseArgs({
  options: {
    url: { type: 'string' }, pid: { type: 'string' }, kids: { type: 'string' }, from: { type: 'string' }, to: { type: 'string' },
    shots: { type: 'string' }, chromium: { type: 'string', default: '/usr/bin/chromium' },
  },
});
for (const k of ['url', 'pid', 'kids', 'from', 'to', 'shots']) {
  if (!arg[k]) {
    console.log(`FAIL: arguments: --${k} is missing`);
    process.exit(1);
  }
}
const PID = Number(arg.pid), KIDS = arg.kids.split(',').map(Number), FROM = Number(arg.from), TO = Number(arg.to);
const ORIGIN = new URL(arg.url).origin;
const browser = await launch(arg.chromium, { width: 1440, height: 1000 });
mkdirSync(arg.shots, { recursive: true });
const page = browser.context.pages()[0] || await browser.context.newPage();
page.setDefaultTimeout(TIMEOUT);
const errors = collectErrors(page);
const apiRequests = []; // every /api/v1/ URL the page asked for, in order
page.on('request', (r) => { if (r.url().startsWith(ORIGIN + '/api/v1/')) apiRequests.push(new URL(r.url())); });

// ---- helpers ----
const T = (id) => page.locator(`[data-testid="${id}"]`);
const row = (pid) => page.locator(`[data-testid="process-row"][data-key="${pid}"]`);
const frame = (name) => page.locator(`[data-testid="flamegraph"] g.frame[name="${name}"]`);
const hash = () => new URLSearchParams(new URL(page.url()).hash.slice(1));
const num = (text) => Number(String(text).replace(/[^\d]/g, ''));
const settle = () => page.waitForTimeout(700);

const { step, until, failed } = stepper(page, (shot) => join(arg.shots, `tree-${shot}.png`));
// What the API says, asked by the test itself.
async function api(path, params) {
  const r = await page.request.get(`${arg.url}${path}?${new URLSearchParams(params)}`);
  assert(r.ok(), `${path}: ${r.status()} ${await r.text()}`);
  return r.json();
}
// The requests to /api/v1/PATH since apiRequests[since].
const asked = (since, path) => apiRequests.slice(since).filter((u) => u.pathname === `/api/v1/${path}`);
const shown = (u) => u.pathname + u.search;
// Waits until every path was asked about pid with children=1 (want true) or without children (want false).
async function askedWithChildren(since, paths, pid, want) {
  await until(() => paths.every((p) => asked(since, p).some((u) => u.searchParams.get('pid') === String(pid) &&
    (u.searchParams.get('children') === '1') === want)),
  `every view asks about ${pid} ${want ? 'with' : 'without'} children=1 (${paths.join(', ')}); asked: ` +
    apiRequests.slice(since).map(shown).join(' '));
}

// The family as the API lists it over the range: the parent's and the children's rows.
const all = (await api('/api/v1/processes', { from: FROM, to: TO })).processes;
const byPid = new Map(all.map((p) => [p.pid, p]));
const parent = byPid.get(PID), kids = KIDS.map((k) => byPid.get(k));
// Every listed process under the parent (its "parent" chain reaches PID), the parent included.
const under = (pid) => { for (let p = byPid.get(pid), i = 0; p && i < 64; p = byPid.get(p.parent), i++) if (p.pid === PID) return true; return false; };
const family = all.filter((p) => under(p.pid));

await step('the API lists the parent and its two children under it', null, async () => {
  assert(parent, `${PID} is not listed over ${FROM}-${TO}`);
  assert(kids.every((k) => k && k.parent === PID), `the children's rows: ${JSON.stringify(kids)}`);
});

await step('the parent shows with its children nested under it', 'tree', async () => {
  await page.goto(`${arg.url}/#preset=custom&from=${FROM}&to=${TO}`);
  await row(PID).waitFor();
  const depth = Number(await row(PID).getAttribute('data-depth'));
  for (const k of KIDS) {
    await row(k).waitFor();
    assert(Number(await row(k).getAttribute('data-depth')) === depth + 1, `child ${k} is not one level under the parent (depth ${depth})`);
    assert(Number(await row(k).getAttribute('data-parent')) === PID, `child ${k} is not under ${PID}`);
    assert((await row(k).getAttribute('aria-level')) === String(depth + 2), `child ${k}'s aria-level`);
  }
  // The rows come depth first: the children right after the parent (and after each other's subtrees).
  const keys = await page.locator('[data-testid="process-row"]').evaluateAll((rs) => rs.map((r) => [+r.dataset.key, +r.dataset.depth]));
  const at = keys.findIndex(([k]) => k === PID);
  const block = [];
  for (let i = at + 1; i < keys.length && keys[i][1] > depth; i++) block.push(keys[i][0]);
  assert(KIDS.every((k) => block.includes(k)), `the rows after the parent are ${block}, not its children ${KIDS}`);
  assert((await row(PID).getAttribute('aria-expanded')) === 'true', 'the parent is not shown expanded');
  await T('processes').screenshot({ path: join(arg.shots, 'tree-panel.png') });
});

await step('the parent\'s total is its own value and its children\'s, as the API says', null, async () => {
  const own = num(await row(PID).locator('[data-testid="process-self"]').textContent());
  const total = num(await row(PID).locator('[data-testid="process-total"]').textContent());
  const want = family.reduce((s, p) => s + p.samples, 0);
  assert(own === parent.samples, `its own cell reads ${own}, the API says ${parent.samples}`);
  assert(total === want && want === parent.samples + kids.reduce((s, k) => s + k.samples, 0) +
    family.filter((p) => p.pid !== PID && !KIDS.includes(p.pid)).reduce((s, p) => s + p.samples, 0),
  `its total reads ${total}, the API's family (${family.map((p) => `${p.pid}:${p.samples}`).join(' ')}) sums to ${want}`);
  for (const k of kids) {
    const kt = num(await row(k.pid).locator('[data-testid="process-total"]').textContent());
    assert(kt === k.samples, `child ${k.pid}'s total reads ${kt}, not its own ${k.samples}`);
  }
  const pct = await row(PID).locator('[data-testid="process-share"]').textContent();
  assert(/\d%/.test(pct), `its share reads "${pct}"`);
});

await step('collapsing the parent hides its children; expanding shows them again', null, async () => {
  await row(PID).locator('[data-testid="process-toggle"]').click();
  await until(async () => (await row(KIDS[0]).count()) === 0 && (await row(KIDS[1]).count()) === 0, 'the children are still shown');
  assert((await row(PID).getAttribute('aria-expanded')) === 'false', 'the parent does not say it is collapsed');
  assert((await row(PID).locator('[data-testid="process-hidden"]').textContent()).includes(`+${family.length - 1}`),
    'the parent does not say how many processes it hides');
  assert(hash().get('pid') === null, 'folding picked the process');
  await T('processes').screenshot({ path: join(arg.shots, 'tree-panel-folded.png') }).catch(() => {});
  await row(PID).locator('[data-testid="process-toggle"]').click();
  await row(KIDS[0]).waitFor();
  await row(KIDS[1]).waitFor();
});

await step('the filter keeps matching rows and their ancestors', null, async () => {
  await T('process-filter').fill(String(KIDS[0]));
  await until(async () => (await page.locator('[data-testid="process-row"]').count()) >= 2 && (await row(PID).count()) === 1 &&
    (await row(KIDS[0]).count()) === 1 && (await row(KIDS[1]).count()) === 0, 'the child and its parent alone stay');
  assert(/context/.test(await row(PID).getAttribute('class')), 'the parent (not a match) is not shown as context');
  assert(!/context/.test(await row(KIDS[0]).getAttribute('class')), 'the child (a match) is shown as context');
  await T('process-filter').fill('');
  await row(KIDS[1]).waitFor();
});

let since = 0;
await step('picking the parent takes its children: children=1 in the URL and every request about it', null, async () => {
  since = apiRequests.length;
  await row(PID).click();
  await until(() => hash().get('pid') === String(PID) && hash().get('children') === '1', `the URL reads ${page.url()}`);
  await askedWithChildren(since, ['profile', 'top', 'timeline'], PID, true);
  const threads = asked(since, 'threads');
  assert(threads.length && threads.every((u) => !u.searchParams.has('children') && u.searchParams.get('pid') === String(PID)),
    `threads are asked for as ${threads.map(shown).join(' ')}`);
  assert(await T('with-children').isChecked(), 'the "with its children" box is not checked');
  for (const id of ['download-folded', 'download-svg', 'download-pprof'])
    assert((await T(id).getAttribute('href')).includes('children=1'), `${id} does not download the family`);
  await until(async () => (await T('flame-panel-title').textContent()).includes('and its children'), 'the flame graph title does not say children');
  await until(async () => (await T('threads-alone').count()) === 1, 'the threads panel does not say it lists the parent\'s own');
  const tids = await until(async () => {
    const k = await page.locator('[data-testid="thread-row"]').evaluateAll((rs) => rs.map((r) => +r.dataset.key));
    return k.length && k;
  }, 'the threads panel lists no thread');
  assert(tids.includes(PID) && !tids.some((t) => KIDS.includes(t)), `the threads listed are ${tids}, not the parent's own`);
});

await step('the family\'s flame graph has a root frame per process, "NAME [PID]"', 'picked', async () => {
  for (const p of [parent, ...kids]) await frame(`${p.comm} [${p.pid}]`).first().waitFor();
  assert((await frame(parent.comm).count()) === 0, 'a frame is named after the parent alone');
  await settle();
});

await step('"as one tree": merge=1 in the URL, the flame graph and its downloads, one root under the parent\'s name', 'merged', async () => {
  assert(await T('merge-label').isVisible(), 'no "as one tree" box with the family picked');
  since = apiRequests.length;
  await T('merge').check();
  await until(() => hash().get('merge') === '1', `the URL does not say merge=1: ${page.url()}`);
  await until(() => asked(since, 'profile').some((u) => u.searchParams.get('merge') === '1' && u.searchParams.get('children') === '1'),
    `the flame graph is asked for as ${asked(since, 'profile').map(shown).join(' ')}`);
  await frame(parent.comm).first().waitFor();
  for (const p of [parent, ...kids])
    await until(async () => (await frame(`${p.comm} [${p.pid}]`).count()) === 0, `the root frame of ${p.pid} is still drawn`);
  for (const id of ['download-folded', 'download-svg', 'download-pprof'])
    assert((await T(id).getAttribute('href')).includes('merge=1'), `${id} does not download the merged tree`);
  assert((await T('download-folded').getAttribute('download')).includes('-merged-'), 'the folded download is not named merged');
  assert(!asked(since, 'top').concat(asked(since, 'timeline')).some((u) => u.searchParams.has('merge')),
    'top or the timeline is asked with merge= (it changes only the flame graph)');
  await settle();
  await T('merge').uncheck();
  await until(() => !hash().has('merge'), `the URL still says merge: ${page.url()}`);
  for (const p of [parent, ...kids]) await frame(`${p.comm} [${p.pid}]`).first().waitFor();
});

await step('"as one tree" is offered only with the family: gone with "with its children" off, and off after it', null, async () => {
  await T('merge').check();
  await until(() => hash().get('merge') === '1', `the URL does not say merge=1: ${page.url()}`);
  await T('with-children').uncheck();
  await until(async () => !(await T('merge-label').isVisible()), 'the "as one tree" box shows without children');
  await until(() => !hash().has('merge'), `the URL still says merge without children: ${page.url()}`);
  await T('with-children').check();
  await until(async () => T('merge-label').isVisible(), 'the "as one tree" box is not back with children');
  assert(!(await T('merge').isChecked()), 'the "as one tree" box comes back checked');
});

await step('Compare takes the family too: the diff and its downloads ask with children=1', null, async () => {
  since = apiRequests.length;
  await T('mode-compare').click();
  await until(() => asked(since, 'diff').some((u) => u.searchParams.get('pid') === String(PID) && u.searchParams.get('children') === '1'),
    `the diff is asked for as ${asked(since, 'diff').map(shown).join(' ')}`);
  await until(async () => (await T('download-diff-folded').getAttribute('href') || '').includes('children=1'),
    'the differential download is not the family\'s');
  assert((await T('compare-title').textContent()).includes('and its children'), 'the Compare title does not say children');
  await T('mode-profile').click();
  await T('flame-panel').waitFor({ state: 'visible' });
});

await step('picking the parent zooms the window to when its family ran', null, async () => {
  const first = Math.min(...family.map((p) => p.first_seen)), last = Math.max(...family.map((p) => p.last_seen));
  const wfrom = Number(hash().get('wfrom')), wto = Number(hash().get('wto'));
  const pad = Math.max(1, Math.round(0.05 * (last + 1 - first))) + 1;
  assert(wfrom >= first - pad && wfrom <= first && wto >= last + 1 && wto <= last + 1 + pad,
    `the window ${wfrom}-${wto} is not its family's lifetime ${first}-${last + 1} padded`);
  await until(async () => (await T('selection').textContent()).includes('and its children ran'), 'the selection line does not say whose lifetime the window is');
  assert((await T('processes-window').textContent()).includes('ran'), 'the processes panel does not say whose lifetime it shows');
  await until(() => row(PID).evaluate((tr) => {
    const box = tr.closest('.scroll').getBoundingClientRect(), r = tr.getBoundingClientRect();
    return tr.classList.contains('selected') && r.top >= box.top && r.bottom <= box.bottom;
  }), 'the picked row is not in sight in the list of the window');
  await settle();
});

await step('"with its children" off: the parent alone, every request without children', 'alone', async () => {
  since = apiRequests.length;
  await T('with-children').uncheck();
  await until(() => !hash().has('children'), `the URL still has children: ${page.url()}`);
  await askedWithChildren(since, ['profile', 'top', 'timeline'], PID, false);
  await frame(parent.comm).first().waitFor();
  assert((await frame(`${kids[0].comm} [${kids[0].pid}]`).count()) === 0, 'a child\'s root frame is still drawn');
  await T('with-children').check();
  await until(() => hash().get('children') === '1', 'checking the box again does not put children=1 back');
});

await step('un-picking the parent goes back to the whole host and range', null, async () => {
  await row(PID).click();
  await until(() => !hash().has('pid') && !hash().has('wfrom') && !hash().has('children'), `the URL still reads ${page.url()}`);
});

await step('picking a short-lived child zooms the window to its lifetime, alone', 'child', async () => {
  const k = kids[0];
  since = apiRequests.length;
  await row(k.pid).click();
  await until(() => hash().get('pid') === String(k.pid) && hash().has('wfrom'), `the URL reads ${page.url()}`);
  assert(!hash().has('children'), 'a process without children is picked with children=1');
  const wfrom = Number(hash().get('wfrom')), wto = Number(hash().get('wto'));
  const pad = Math.max(1, Math.round(0.05 * (k.last_seen + 1 - k.first_seen))) + 1;
  assert(wfrom >= k.first_seen - pad && wfrom <= k.first_seen && wto >= k.last_seen + 1 && wto <= k.last_seen + 1 + pad,
    `the window ${wfrom}-${wto} is not its lifetime ${k.first_seen}-${k.last_seen + 1} padded`);
  await askedWithChildren(since, ['profile', 'top'], k.pid, false);
  assert(asked(since, 'profile').some((u) => u.searchParams.get('from') === String(wfrom) && u.searchParams.get('to') === String(wto)),
    'the flame graph is not asked for the window');
  await until(async () => (await T('timeline-band-window').count()) === 1, 'the timeline does not show the window');
  await settle();
});

await step('picking the parent from the zoomed list zooms to its family; Whole host goes back', null, async () => {
  await row(PID).click();
  await until(() => hash().get('pid') === String(PID) && hash().get('children') === '1', `the URL reads ${page.url()}`);
  const first = Math.min(...family.map((p) => p.first_seen)), last = Math.max(...family.map((p) => p.last_seen));
  await until(() => Number(hash().get('wfrom')) <= first && Number(hash().get('wto')) >= last + 1,
    `the window does not hold the family's lifetime ${first}-${last + 1}: ${page.url()}`);
  await T('select-host').click();
  await until(() => !hash().has('pid') && !hash().has('wfrom'), `the URL still reads ${page.url()}`);
});

await step('a link as flamectl record prints opens exactly that run: its window, the parent with its children', 'link', async () => {
  const S = Math.min(...family.map((p) => p.first_seen)), E = Math.max(...family.map((p) => p.last_seen)) + 1;
  await page.goto('about:blank');
  since = apiRequests.length;
  await page.goto(`${arg.url}/#preset=custom&from=${S}&to=${E}&pid=${PID}&children=1`);
  for (const p of [parent, ...kids]) await frame(`${p.comm} [${p.pid}]`).first().waitFor();
  await askedWithChildren(since, ['profile', 'top', 'timeline'], PID, true);
  for (const p of ['processes', 'profile', 'top', 'timeline']) {
    const u = asked(since, p);
    assert(u.length && u.every((x) => x.searchParams.get('from') === String(S) && x.searchParams.get('to') === String(E)),
      `${p} is asked for another window: ${u.map(shown).join(' ')}`);
  }
  await row(PID).waitFor();
  assert((await row(PID).getAttribute('aria-selected')) === 'true', 'the parent is not the row picked');
  assert(await T('with-children').isChecked(), 'the "with its children" box is not checked');
  assert(await T('range-from').inputValue() && (await T('range-preset').inputValue()) === 'custom', 'the range is not the custom one');
  await page.waitForTimeout(1500); // nothing moves it afterwards
  const h = hash();
  assert(h.get('from') === String(S) && h.get('to') === String(E) && h.get('pid') === String(PID) && h.get('children') === '1' &&
    !h.has('wfrom') && h.get('preset') === 'custom', `the URL became ${page.url()}`);
  await until(async () => (await T('selection').textContent()).includes(parent.comm), 'the picked process is not named');
  await settle();
});

await step('a link as `flamectl record --merge` prints opens that run as one tree', 'link-merged', async () => {
  const S = Math.min(...family.map((p) => p.first_seen)), E = Math.max(...family.map((p) => p.last_seen)) + 1;
  await page.goto('about:blank');
  since = apiRequests.length;
  await page.goto(`${arg.url}/#preset=custom&from=${S}&to=${E}&pid=${PID}&children=1&merge=1`);
  await frame(parent.comm).first().waitFor();
  assert(asked(since, 'profile').every((u) => u.searchParams.get('merge') === '1'),
    `the flame graph is asked for as ${asked(since, 'profile').map(shown).join(' ')}`);
  for (const p of [parent, ...kids]) assert((await frame(`${p.comm} [${p.pid}]`).count()) === 0, `the root frame of ${p.pid} is drawn`);
  assert(await T('merge').isChecked(), 'the "as one tree" box is not checked');
  await until(async () => (await T('flame-panel-title').textContent()).includes('as one tree'), 'the flame graph title does not say one tree');
  await settle();
});

await step('no script error, no console error', null, async () => {
  assert(!errors.page.length && !errors.console.length, [...errors.page, ...errors.console].join(' | '));
});

await browser.close();
process.exit(failed() ? 1 : 0);
