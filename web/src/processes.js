// processes.js - the processes of the window as a tree (each under its parent, or under its service; with its own and its family's share of what is measured: CPU samples, off-CPU or wall-clock time), sortable, collapsible, with a filter box; picking one filters every view to it (and its children) and zooms to when it ran.
import { h, fill } from './dom.js';
import { panel } from './panel.js';
import { latest, isAbort } from './api.js';
import { table, shareBar } from './table.js';
import { amount, isTime, percent, quantity, span } from './format.js';
import { KIND, emptyHint } from './kind.js';
import { buildServiceTree, buildTree, flatten, serviceOf, within } from './proctree.js';
import { pickProcess, unpick, zoomedTo } from './pick.js';
import { family } from './who.js';
import * as S from './state.js';

const INDENT = 12, MAX_INDENT = 6; // pixels per level of the tree, levels indented at most

export function processesPanel(root) {
  const p = panel(root, 'processes', 'Processes');
  let all = [], roots = [];
  let unit = 'samples'; // of the values shown, as the API says
  let query = ''; // the filter, lower case
  const collapsed = new Set(); // pids whose children are hidden, while the page lives
  let reveal = S.get().pid; // a link's process, or one picked with a zoom: scrolled to when the list of the window comes
  let bySvc = false; // grouped by service (systemd unit, container, cgroup) instead of by parent
  const filterBox = h('input', { type: 'search', class: 'filter', testid: 'process-filter', placeholder: 'Filter by name or pid',
    'aria-label': 'Filter processes', oninput: () => show() });
  const host = h('button', { type: 'button', testid: 'select-host', title: 'Show every process of the host',
    onclick: () => { S.set({ unit: '', container: '', cgroup: '' }); unpick(); } }, 'Whole host');
  const groupBtn = (svc) => h('button', { type: 'button', testid: svc ? 'group-service' : 'group-parent',
    'aria-pressed': String(bySvc === svc),
    title: svc ? 'Each process under its service: its systemd unit, its container, else its cgroup'
      : 'Each process under the process that started it',
    onclick: () => { bySvc = svc; collapsed.clear(); regroup(); } }, svc ? 'By service' : 'By parent');
  const groups = h('span', { class: 'group-by', role: 'group', 'aria-label': 'Group processes' });
  const expand = (open) => h('button', { type: 'button', testid: open ? 'process-expand-all' : 'process-collapse-all',
    title: open ? 'Show every process under its parent' : 'Show only the processes no other listed process started',
    onclick: () => {
      collapsed.clear();
      if (!open) for (const r of roots) if (r.kids.length) collapsed.add(r.pid);
      show();
    } }, open ? 'Expand all' : 'Collapse all');
  const summary = h('div', { class: 'muted small', testid: 'process-summary' });
  const what = () => (isTime(unit) ? 'Time' : 'Samples');
  const t = table([
    { key: 'pid', label: 'PID', num: true, render: (r) => (r.group !== undefined ? '' : r.pid) },
    { key: 'comm', label: 'Name', render: nameCell },
    { key: 'share', label: () => KIND[S.get().kind].share, num: true, value: (r) => r.tshare, testid: 'process-share',
      title: 'Its share with its children\'s (the darker part: its own)',
      render: (r) => shareBar(r.tshare, percent(r.tshare), r.kids.length ? r.share : null,
        r.kids.length ? `${percent(r.tshare)} with its children, ${percent(r.share)} its own` : null) },
    { key: 'samples', label: what, num: true, testid: 'process-self', title: 'Its own, without its children\'s',
      render: (r) => quantity(r.samples, unit) },
    { key: 'total', label: 'Total', num: true, testid: 'process-total', title: 'Its own and its children\'s (and theirs)',
      render: (r) => h('span', { class: r.kids.length ? '' : 'muted' }, quantity(r.total, unit)) },
  ], {
    tableTestid: 'process-table', testid: 'process-row', rowKey: (r) => String(r.pid), sort: ['share', -1], limit: 300,
    arrange: (rows, compare) => flatten(rows, compare, collapsed, query ? matches : null),
    rowProps: (r) => ({
      class: [r.matched ? '' : 'context', family(S.get()) && r.pid !== S.get().pid && within(r, S.get().pid) ? 'family' : '']
        .filter(Boolean).join(' '),
      dataset: { depth: r.depth, parent: r.parentNode ? r.parentNode.pid : 0, kids: r.kids.length },
      'aria-level': r.depth + 1, 'aria-expanded': r.kids.length ? String(r.open) : null,
    }),
    onPick: (r) => (r.group !== undefined ? pickService(r) : S.get().pid === r.pid ? unpick() : pickProcess(r)),
  });
  // A service's row: every view takes its processes (unit=, container= or cgroup=); again: every service.
  function pickService(r) {
    if (!r.group) return; // no cgroup known: nothing to ask for
    const st = S.get(), same = Object.keys(r.group).every((k) => st[k] === r.group[k]);
    S.set({ unit: '', container: '', cgroup: '', ...(same ? {} : r.group), pid: null, comm: '', children: false, merge: false,
      tid: null, tname: '' });
  }
  // The key of the row the selection is: the process picked, else in service groups the service picked.
  const selectedKey = (st) => (st.pid !== null ? st.pid : bySvc && (st.unit || st.container || st.cgroup)
    ? serviceOf({ unit: st.unit, container: st.container, cgroup: st.cgroup }).key : null);
  function regroup() {
    fill(groups, groupBtn(false), groupBtn(true));
    roots = bySvc ? buildServiceTree(all) : buildTree(all);
    show();
  }
  t.el.setAttribute('role', 'treegrid');
  fill(groups, groupBtn(false), groupBtn(true));
  fill(p.tools, groups, expand(true), expand(false), host);
  const scroller = h('div', { class: 'scroll' }, t.el);
  p.body.append(filterBox, summary, scroller);
  const request = latest();

  // The name cell: indented by depth, the toggle of its children (when it has any) before the name.
  function nameCell(r) {
    const pad = `padding-left:${Math.min(r.depth, MAX_INDENT) * INDENT}px`;
    if (!r.kids.length) return h('span', { class: 'tree', style: pad }, h('span', { class: 'toggle-space' }), name(r));
    const toggle = h('button', { type: 'button', class: 'toggle-kids', testid: 'process-toggle', disabled: !!query,
      'aria-expanded': String(r.open), 'aria-label': `${r.open ? 'Hide' : 'Show'} the ${r.count} processes under ${r.comm} (${r.pid})`,
      title: query ? 'Clear the filter to fold the tree' : `${r.open ? 'Hide' : 'Show'} the ${r.count} processes under it`,
      onclick: (e) => {
        e.stopPropagation();
        if (collapsed.has(r.pid)) collapsed.delete(r.pid);
        else collapsed.add(r.pid);
        show();
      },
      onkeydown: (e) => e.stopPropagation(), // Enter on the toggle folds, it does not pick the row
    }, r.open ? '▾' : '▸');
    return h('span', { class: 'tree', style: pad }, toggle, name(r),
      r.open ? null : h('span', { class: 'kids-count muted', testid: 'process-hidden' }, ` +${r.count}`));
  }
  const name = (r) => h('span', { class: 'name', title: r.comm }, r.comm);
  const matches = (r) => r.comm.toLowerCase().includes(query) || String(r.pid).startsWith(query);

  function show(loaded = false) {
    query = filterBox.value.trim().toLowerCase();
    t.set(roots);
    t.select(selectedKey(S.get()));
    const total = all.reduce((s, r) => s + r.samples, 0);
    const n = query ? all.filter(matches).length : 0;
    const pids = new Set(all.map((r) => r.pid));
    const parents = new Set(all.map((r) => r.parent).filter((x) => x && pids.has(x))).size;
    fill(summary, query ? `${n} of ${all.length} processes match` : `${all.length} processes, ${amount(total, unit)}` +
      (bySvc ? ` · ${roots.length} services` : parents ? ` · ${parents} with children` : ''));
    const tr = loaded && reveal !== null && t.el.querySelector(`tr[data-key="${reveal}"]`);
    if (tr) { // the list moved under it: the picked row in sight, in the list's own scroll
      const r = tr.getBoundingClientRect(), box = scroller.getBoundingClientRect(), head = t.el.tHead.offsetHeight;
      if (r.top < box.top + head || r.bottom > box.bottom) scroller.scrollTop += r.top - box.top - head - box.height / 3;
      reveal = null;
    }
  }

  async function load() {
    const st = S.get();
    const { from, to } = S.view();
    const z = zoomedTo(st);
    fill(p.title, 'Processes', h('span', { class: 'sub', testid: 'processes-window' }, span(from, to), z ? ` · ${z}` : ''));
    p.busy(true);
    if (!all.length) p.status('loading', 'Loading processes…');
    try {
      const r = await request('/api/v1/processes', { kind: st.kind, from, to });
      p.busy(false);
      unit = r.unit || 'samples';
      all = r.processes.map((x) => ({ ...x, share: typeof x.share === 'number' ? x.share : (r.total ? x.samples / r.total : 0) }));
      roots = bySvc ? buildServiceTree(all) : buildTree(all);
      show(true);
      const picked = st.pid !== null && !st.comm && all.find((x) => x.pid === st.pid);
      if (picked) S.set({ comm: picked.comm }); // a link that gave the pid alone: its name
      if (!all.length) {
        p.status('empty', st.kind === 'cpu'
          ? 'No samples in this window: is flamed sampling? Samples are stored at each flush; try a longer range.'
          : `No ${KIND[st.kind].noun} in this window; it is stored at each flush, try a longer range.`, emptyHint(st.kind));
      }
      else p.status('');
    } catch (e) {
      if (isAbort(e)) return;
      p.busy(false);
      all = [];
      roots = [];
      show();
      p.status('error', e.message);
    }
  }

  S.subscribe(['kind', 'from', 'to', 'wfrom', 'wto', 'tick'], load);
  S.subscribe(['pid'], (st, changed) => { reveal = changed.has('wfrom') || changed.has('wto') ? st.pid : null; });
  S.subscribe(['pid', 'children', 'tid', 'unit', 'container', 'cgroup'], () => show());
  return { load };
}
