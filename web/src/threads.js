// threads.js - the threads of the selected process by share of what is measured (its CPU samples, off-CPU or wall-clock time); picking one filters every view to it.
import { h, fill } from './dom.js';
import { panel } from './panel.js';
import { latest, isAbort } from './api.js';
import { table, shareBar } from './table.js';
import { isTime, percent, quantity } from './format.js';
import { KIND, emptyHint } from './kind.js';
import { family } from './who.js';
import * as S from './state.js';

export function threadsPanel(root) {
  const p = panel(root, 'threads', 'Threads');
  let unit = 'samples'; // of the values shown, as the API says
  const all = h('button', { type: 'button', testid: 'select-all-threads', onclick: () => S.set({ tid: null, tname: '' }) }, 'All threads');
  const t = table([
    { key: 'tid', label: 'TID', num: true },
    { key: 'name', label: 'Name', render: (r) => h('span', { class: 'name', title: r.name }, r.name) },
    { key: 'share', label: 'Share', num: true, render: (r) => shareBar(r.share, percent(r.share)) },
    { key: 'samples', label: () => (isTime(unit) ? 'Time' : 'Samples'), num: true, render: (r) => quantity(r.samples, unit) },
  ], {
    tableTestid: 'thread-table', testid: 'thread-row', rowKey: (r) => String(r.tid), sort: ['share', -1], limit: 500,
    onPick: (r) => S.set(S.get().tid === r.tid ? { tid: null, tname: '' } : { tid: r.tid, tname: r.name }),
  });
  fill(p.tools, all);
  p.body.append(h('div', { class: 'scroll' }, t.el));
  const request = latest();

  // The process's threads only: /api/v1/threads takes one process, never its children.
  const title = (st) => fill(p.title, `Threads of ${st.pid}${st.comm ? ` (${st.comm})` : ''}`, family({ ...st, tid: null })
    ? h('span', { class: 'sub', testid: 'threads-alone' }, 'its own: its children\'s are not listed') : null);

  async function load(st) {
    p.el.hidden = st.pid === null;
    if (st.pid === null) return;
    const { from, to } = S.view();
    title(st);
    p.busy(true);
    p.status('loading', 'Loading threads…');
    try {
      const r = await request('/api/v1/threads', { kind: st.kind, pid: st.pid, from, to });
      p.busy(false);
      unit = r.unit || 'samples';
      const total = r.threads.reduce((s, x) => s + x.samples, 0);
      t.set(r.threads.map((x) => ({ ...x, share: total ? x.samples / total : 0 })));
      t.select(S.get().tid);
      if (!r.threads.length) p.status('empty', `No ${KIND[st.kind].noun} of this process in this window.`, emptyHint(st.kind));
      else p.status('');
    } catch (e) {
      if (isAbort(e)) return;
      p.busy(false);
      t.set([]);
      p.status('error', e.message);
    }
  }

  S.subscribe(['kind', 'pid', 'from', 'to', 'wfrom', 'wto', 'tick'], load);
  S.subscribe(['tid'], (st) => t.select(st.tid));
  S.subscribe(['comm', 'children'], (st) => st.pid !== null && title(st));
  return { load };
}
