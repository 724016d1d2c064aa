// compare.js - compare mode: a base window and a new window picked on the timeline, and the differential flame graph between them (red grew, blue shrank).
import { h, fill } from './dom.js';
import { panel } from './panel.js';
import { latest, isAbort } from './api.js';
import { FlameView } from './flamegraph.js';
import { flameTools } from './flametools.js';
import { diffDownloads } from './downloads.js';
import { legend } from './profile.js';
import { amount, span } from './format.js';
import { KIND, emptyHint } from './kind.js';
import { family } from './who.js';
import * as S from './state.js';

// Windows to start comparing with: the new one is the window shown, the base the same length before it.
export function defaultWindows() {
  const { from, to } = S.view();
  return { nfrom: from, nto: to, bfrom: Math.max(0, 2 * from - to), bto: from };
}

export function comparePanel(root) {
  const p = panel(root, 'compare', 'Compare two windows');
  const details = h('div', { class: 'details', testid: 'diff-details' }, '\u00a0');
  const graph = h('div', { class: 'flamegraph', testid: 'diff-flamegraph' });
  const downloads = h('div', { class: 'downloads' });
  const note = h('div', { class: 'note', testid: 'compare-note' });
  const pick = (target, label) => h('label', { class: `pick ${target}`, testid: `compare-pick-${target}` },
    h('input', { type: 'radio', name: 'compare-target', value: target, checked: S.get().target === target,
      onchange: () => S.set({ target }) }),
    h('b', {}, label), ' ', h('span', { class: 'when', testid: `compare-${target}-window` }));
  const picks = h('div', { class: 'picks' }, pick('base', 'Base'), pick('new', 'New'),
    h('button', { type: 'button', testid: 'compare-swap', title: 'Swap the base and the new window',
      onclick: () => { const s = S.get(); S.set({ bfrom: s.nfrom, bto: s.nto, nfrom: s.bfrom, nto: s.bto }); } }, 'Swap'),
    h('span', { class: 'muted small' }, 'Pick which window a drag on the timeline sets. ' +
      'Frames only in the base do not show: Swap to see what went away.'));
  const tools = flameTools(p.tools, details, 'diff', () => view);
  const view = new FlameView(graph, { ...tools, diff: true });
  p.body.append(picks, note, details, graph, h('div', { class: 'panel-foot' }, legend([
    ['rgb(220,60,60)', 'grew (more than the base, scaled)'], ['rgb(60,60,220)', 'shrank'],
    ['rgb(255,190,90)', 'new (not in the base)'], ['rgb(220,220,220)', 'unchanged'],
  ]), downloads));
  diffDownloads(downloads);
  const request = latest();

  function windows(st) {
    for (const t of ['base', 'new']) {
      const [a, b] = t === 'base' ? [st.bfrom, st.bto] : [st.nfrom, st.nto];
      fill(p.el.querySelector(`[data-testid=compare-${t}-window]`), a === null ? 'not set' : span(a, b));
    }
    for (const r of p.el.querySelectorAll('input[name=compare-target]')) r.checked = r.value === st.target;
  }

  async function load(st) {
    p.el.hidden = st.mode !== 'compare';
    if (st.mode !== 'compare') return;
    if (st.bfrom === null || st.nfrom === null) {
      S.set(defaultWindows()); // comes back here
      return;
    }
    windows(st);
    const kids = family({ ...st, tid: null }); // a diff takes no thread: the whole process, with its children when on
    const title = `Compare two windows of ${st.pid === null ? 'the host' : `process ${st.pid}${st.comm ? ` (${st.comm})` : ''}`}` +
      (kids ? ' and its children' : '') +
      (st.kind !== 'cpu' ? `: ${KIND[st.kind].noun}` : '');
    fill(p.title, title);
    fill(note, st.tid !== null ? `Comparing the whole process${kids ? ' and its children' : ''}: differential profiles do not filter by thread.` : '');
    p.busy(true);
    p.status('loading', 'Loading the differential profile…');
    try {
      const tree = await request('/api/v1/diff', { format: 'json', kind: st.kind, pid: st.pid, children: kids, base_from: st.bfrom, base_to: st.bto,
        from: st.nfrom, to: st.nto, reverse: st.inverted });
      p.busy(false);
      if (!tree.value) {
        view.destroy();
        p.status('empty', `The new window has no ${KIND[st.kind].noun}: pick another one on the timeline.`, emptyHint(st.kind));
        return;
      }
      p.status('');
      if (tree.delta === tree.value) fill(note, `The base window has no ${KIND[st.kind].noun}: every frame shows as new. Pick a base window on the timeline.`);
      view.render(tree, { inverted: st.inverted, minWidth: st.minwidth });
      fill(p.title, title, h('span', { class: 'sub' }, `${amount(tree.value, tree.unit)} in the new window; the base is scaled to the same total`));
    } catch (e) {
      if (isAbort(e)) return;
      p.busy(false);
      view.destroy();
      p.status('error', e.message);
    }
  }

  S.subscribe(['kind', 'mode', 'pid', 'children', 'tid', 'bfrom', 'bto', 'nfrom', 'nto', 'inverted', 'tick'], load);
  S.subscribe(['target'], windows);
  S.subscribe(['minwidth'], (st) => view.setMinWidth(st.minwidth));
  p.el.hidden = S.get().mode !== 'compare';
  return { load, redraw: () => view.redraw() };
}
