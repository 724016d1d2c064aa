// top.js - the functions of the selection and window by self and total samples; clicking one highlights it in the flame graph.
import { h, fill } from './dom.js';
import { panel } from './panel.js';
import { latest, isAbort } from './api.js';
import { table, shareBar } from './table.js';
import { count, percent, span } from './format.js';
import { filter, who } from './who.js';
import * as S from './state.js';

const LIMIT = 200;

// onPick(name): what clicking a function does (highlight it in the flame graph).
export function topPanel(root, onPick) {
  const p = panel(root, 'top', 'Top functions');
  let total = 1;
  const t = table([
    { key: 'name', label: 'Function', render: (r) => h('span', { class: 'name fn', title: r.name }, r.name) },
    { key: 'self', label: 'Self', num: true, render: (r) => shareBar(r.self / total, `${percent(r.self / total)}`) },
    { key: 'selfn', label: 'Self samples', num: true, value: (r) => r.self, render: (r) => count(r.self) },
    { key: 'total', label: 'Total', num: true, render: (r) => shareBar(r.total / total, `${percent(r.total / total)}`) },
    { key: 'totaln', label: 'Total samples', num: true, value: (r) => r.total, render: (r) => count(r.total) },
  ], {
    tableTestid: 'top-table', testid: 'top-row', rowKey: (r) => r.name, sort: ['self', -1],
    onPick: (r) => {
      t.select(r.name);
      onPick(r.name);
    },
  });
  const scroller = h('div', { class: 'scroll tall' }, t.el);
  p.body.append(scroller);
  const request = latest();
  let shown = '';

  async function load(st) {
    p.el.hidden = st.mode !== 'profile';
    if (st.mode !== 'profile') return;
    const { from, to } = S.view();
    p.busy(true);
    try {
      const r = await request('/api/v1/top', { ...filter(st), from, to, limit: LIMIT });
      p.busy(false);
      total = r.total || 1;
      fill(p.title, `Top functions of ${who(st)}`, h('span', { class: 'sub' },
        `${span(from, to)} · ${r.functions.length >= LIMIT ? `first ${LIMIT}` : r.functions.length} functions`));
      t.set(r.functions);
      const key = JSON.stringify([filter(st), from, to]);
      if (key !== shown) scroller.scrollTop = 0; // another selection: from the top again
      shown = key;
      if (!r.functions.length) p.status('empty', 'No samples in this window.');
      else p.status('');
    } catch (e) {
      if (isAbort(e)) return;
      p.busy(false);
      t.set([]);
      p.status('error', e.message);
    }
  }

  S.subscribe(['pid', 'tid', 'from', 'to', 'wfrom', 'wto', 'tick', 'mode'], load);
  // The flame graph's search marks the functions it matches here too.
  return { load, mark: (re) => t.mark(re ? (name) => re.test(name) : null), select: (name) => t.select(name) };
}
