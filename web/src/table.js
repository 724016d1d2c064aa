// table.js - a sortable table of rows with share bars, for processes, threads and functions.
import { h, fill } from './dom.js';

// columns: [{ key, label (text, or a function giving it: read at each draw), title (the header's tooltip), num (right-aligned,
// sorts descending first), render(row) -> node|text, value(row) -> what it sorts by, testid (of its cells) }]. opts: testid (of
// each row), rowKey(row) -> string, onPick(row), sort: [key, dir], limit (rows drawn at most), arrange(rows, compare) -> the
// rows in the order drawn (default: sorted by compare; a tree sorts each level and leaves out what is collapsed), rowProps(row)
// -> more properties of its <tr> (class, dataset, aria-*). Returns { el, set(rows), sortBy(key, dir), select(key), mark(pred) }.
export function table(columns, opts) {
  let rows = [];
  let [sortKey, sortDir] = opts.sort;
  let selected = null;
  const head = h('tr');
  const body = h('tbody');
  const el = h('table', { class: 'grid', testid: opts.tableTestid }, h('thead', {}, head), body);

  function header() {
    fill(head, columns.map((c) => h('th', {
      class: (c.num ? 'num ' : '') + 'sortable', scope: 'col', testid: `${opts.tableTestid}-sort-${c.key}`, title: c.title,
      'aria-sort': c.key === sortKey ? (sortDir > 0 ? 'ascending' : 'descending') : 'none',
      onclick: () => {
        if (sortKey === c.key) sortDir = -sortDir;
        else [sortKey, sortDir] = [c.key, c.num ? -1 : 1];
        draw();
      },
    }, typeof c.label === 'function' ? c.label() : c.label, c.key === sortKey ? (sortDir > 0 ? ' ▲' : ' ▼') : '')));
  }

  function draw() {
    header();
    const col = columns.find((c) => c.key === sortKey) || columns[0];
    const val = col.value || ((r) => r[col.key]);
    const compare = (a, b) => {
      const x = val(a), y = val(b);
      return (x < y ? -1 : x > y ? 1 : 0) * sortDir;
    };
    const sorted = opts.arrange ? opts.arrange(rows, compare) : rows.slice().sort(compare);
    const limit = opts.limit || Infinity;
    const more = sorted.length - limit;
    fill(body, sorted.slice(0, limit).map((r) => {
      const key = opts.rowKey(r);
      const extra = opts.rowProps ? opts.rowProps(r) : {};
      return h('tr', {
        ...extra, testid: opts.testid, dataset: { ...extra.dataset, key }, tabindex: 0,
        class: [key === selected ? 'selected' : '', extra.class].filter(Boolean).join(' '),
        'aria-selected': key === selected ? 'true' : 'false',
        onclick: () => opts.onPick(r),
        onkeydown: (e) => { if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); opts.onPick(r); } },
      }, columns.map((c) => h('td', { class: c.num ? 'num' : '', testid: c.testid }, c.render ? c.render(r) : r[c.key])));
    }), more > 0 ? h('tr', { class: 'more' }, h('td', { colspan: columns.length }, `${more} more not shown: filter to find them`)) : null);
  }

  return {
    el,
    set(newRows) {
      rows = newRows;
      draw();
    },
    // Sorts by column key, dir 1 ascending or -1 descending (as a click on its header does).
    sortBy(key, dir) {
      [sortKey, sortDir] = [key, dir];
      draw();
    },
    select(key) {
      selected = key === null || key === undefined ? null : String(key);
      for (const tr of body.children) {
        const on = tr.dataset.key === selected;
        tr.classList.toggle('selected', on);
        tr.setAttribute('aria-selected', on ? 'true' : 'false');
      }
    },
    // Marks the rows for which pred(key) holds (functions matching the flame graph search).
    mark(pred) {
      for (const tr of body.children) tr.classList.toggle('marked', !!pred && pred(tr.dataset.key));
    },
  };
}

const width = (f) => `width:${Math.min(100, Math.max(0, 100 * f)).toFixed(1)}%`;

// A share as a bar and a percentage; with own (a share within f, a process's own within its family's), the bar
// draws f lighter and own over it; title: the tooltip.
export function shareBar(f, text, own = null, title = null) {
  return h('span', { class: 'share', title }, h('span', { class: 'bar' }, own === null ? h('i', { style: width(f) })
    : [h('i', { class: 'family', style: width(f) }), h('i', { class: 'own', style: width(own) })]),
  h('span', { class: 'pct' }, text));
}
