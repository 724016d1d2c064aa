// processes.js - the processes of the window by share of what is measured (CPU samples, off-CPU or wall-clock time), sortable, with a filter box; picking one filters every view to it.
import { h, fill } from './dom.js';
import { panel } from './panel.js';
import { latest, isAbort } from './api.js';
import { table, shareBar } from './table.js';
import { amount, isTime, percent, quantity, span } from './format.js';
import { KIND, emptyHint } from './kind.js';
import * as S from './state.js';

export function processesPanel(root) {
  const p = panel(root, 'processes', 'Processes');
  let all = [];
  let unit = 'samples'; // of the values shown, as the API says
  const filterBox = h('input', { type: 'search', class: 'filter', testid: 'process-filter', placeholder: 'Filter by name or pid',
    'aria-label': 'Filter processes', oninput: () => show() });
  const host = h('button', { type: 'button', testid: 'select-host', title: 'Show every process of the host',
    onclick: () => S.set({ pid: null, comm: '', tid: null, tname: '' }) }, 'Whole host');
  const summary = h('div', { class: 'muted small', testid: 'process-summary' });
  const t = table([
    { key: 'pid', label: 'PID', num: true },
    { key: 'comm', label: 'Name', render: (r) => h('span', { class: 'name', title: r.comm }, r.comm) },
    { key: 'share', label: () => KIND[S.get().kind].share, num: true, render: (r) => shareBar(r.share, percent(r.share)) },
    { key: 'samples', label: () => (isTime(unit) ? 'Time' : 'Samples'), num: true, render: (r) => quantity(r.samples, unit) },
  ], {
    tableTestid: 'process-table', testid: 'process-row', rowKey: (r) => String(r.pid), sort: ['share', -1], limit: 300,
    onPick: (r) => S.set(S.get().pid === r.pid ? { pid: null, comm: '', tid: null, tname: '' }
      : { pid: r.pid, comm: r.comm, tid: null, tname: '' }),
  });
  fill(p.tools, host);
  p.body.append(filterBox, summary, h('div', { class: 'scroll' }, t.el));
  const request = latest();

  function show() {
    const q = filterBox.value.trim().toLowerCase();
    const rows = q ? all.filter((r) => r.comm.toLowerCase().includes(q) || String(r.pid).startsWith(q)) : all;
    t.set(rows);
    t.select(S.get().pid);
    const total = all.reduce((s, r) => s + r.samples, 0);
    fill(summary, q ? `${rows.length} of ${all.length} processes match` : `${all.length} processes, ${amount(total, unit)}`);
  }

  async function load() {
    const st = S.get();
    const { from, to } = S.view();
    fill(p.title, 'Processes', h('span', { class: 'sub' }, span(from, to)));
    p.busy(true);
    if (!all.length) p.status('loading', 'Loading processes…');
    try {
      const r = await request('/api/v1/processes', { kind: st.kind, from, to });
      p.busy(false);
      unit = r.unit || 'samples';
      all = r.processes.map((x) => ({ ...x, share: typeof x.share === 'number' ? x.share : (r.total ? x.samples / r.total : 0) }));
      show();
      if (!all.length) {
        p.status('empty', st.kind === 'cpu'
          ? 'No samples in this window: is flamed sampling? Samples are stored at each flush; try a longer range.'
          : `No ${KIND[st.kind].noun} in this window; it is stored at each flush, try a longer range.${emptyHint(st.kind)}`);
      }
      else p.status('');
    } catch (e) {
      if (isAbort(e)) return;
      p.busy(false);
      all = [];
      show();
      p.status('error', e.message);
    }
  }

  S.subscribe(['kind', 'from', 'to', 'wfrom', 'wto', 'tick'], load);
  S.subscribe(['pid'], (st) => t.select(st.pid));
  return { load };
}
