// top.js - the functions of the selection and window by self and total samples (or time, off CPU or wall-clock); clicking one highlights it in the flame graph.
import { h, fill } from './dom.js';
import { panel } from './panel.js';
import { latest, isAbort } from './api.js';
import { table, shareBar } from './table.js';
import { isTime, percent, quantity, span } from './format.js';
import { KIND, emptyHint } from './kind.js';
import { filter, who } from './who.js';
import * as S from './state.js';

const LIMIT = 200;

// onPick(name): what clicking a function does (highlight it in the flame graph).
export function topPanel(root, onPick) {
  const p = panel(root, 'top', 'Top functions');
  let total = 1;
  let unit = 'samples'; // of the values shown, as the API says
  let sortedFor = 'cpu'; // the kind the sort was last chosen for
  const what = () => (isTime(unit) ? 'time' : 'samples');
  const t = table([
    { key: 'name', label: 'Function', render: (r) => h('span', { class: 'name fn', title: r.name }, r.name) },
    { key: 'self', label: 'Self', num: true, render: (r) => shareBar(r.self / total, `${percent(r.self / total)}`) },
    { key: 'selfn', label: () => `Self ${what()}`, num: true, value: (r) => r.self, render: (r) => quantity(r.self, unit) },
    { key: 'total', label: 'Total', num: true, render: (r) => shareBar(r.total / total, `${percent(r.total / total)}`) },
    { key: 'totaln', label: () => `Total ${what()}`, num: true, value: (r) => r.total, render: (r) => quantity(r.total, unit) },
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
      unit = r.unit || 'samples';
      // Every off-CPU stack ends in the scheduler, which has all the self time: by total, callers show.
      if (st.kind !== sortedFor) t.sortBy(st.kind === 'offcpu' ? 'total' : 'self', -1);
      sortedFor = st.kind;
      fill(p.title, `Top functions of ${who(st)}`, h('span', { class: 'sub' },
        `${span(from, to)} · ${r.functions.length >= LIMIT ? `first ${LIMIT}` : r.functions.length} functions` +
        (st.kind !== 'cpu' ? ` by ${KIND[st.kind].noun}` : '')));
      t.set(r.functions);
      const key = JSON.stringify([filter(st), from, to]); // filter() holds the kind
      if (key !== shown) scroller.scrollTop = 0; // another selection: from the top again
      shown = key;
      if (!r.functions.length) p.status('empty', `No ${KIND[st.kind].noun} in this window.`, emptyHint(st.kind));
      else p.status('');
    } catch (e) {
      if (isAbort(e)) return;
      p.busy(false);
      t.set([]);
      p.status('error', e.message);
    }
  }

  S.subscribe(['kind', 'unit', 'container', 'cgroup', 'pid', 'children', 'tid', 'from', 'to', 'wfrom', 'wto', 'tick', 'mode'], load);
  // The flame graph's search marks the functions it matches here too.
  return { load, mark: (re) => t.mark(re ? (name) => re.test(name) : null), select: (name) => t.select(name) };
}
