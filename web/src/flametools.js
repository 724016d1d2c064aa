// flametools.js - the controls above a flame graph: search with its matched share, reset zoom, inverted toggle, minimum frame width, and the hover details line.
import { h, fill } from './dom.js';
import { amount, percent } from './format.js';
import * as S from './state.js';

// Builds the controls for a FlameView into toolsEl (and the details line into detailsEl); p prefixes
// the data-testids ("flame" or "diff"). Returns the callbacks to give the FlameView and search(name).
export function flameTools(toolsEl, detailsEl, p, getView) {
  let exact = false;
  const input = h('input', {
    type: 'search', class: 'search', testid: `${p}-search`, placeholder: 'Search frames (regex)', 'aria-label': 'Search frames',
    oninput: () => {
      exact = false;
      run();
    },
    onkeydown: (e) => {
      if (e.key === 'Escape') {
        input.value = '';
        run();
      }
    },
  });
  const matched = h('span', { class: 'matched', testid: `${p}-matched`, 'aria-live': 'polite' });
  const reset = h('button', { type: 'button', testid: `${p}-reset`, disabled: true, title: 'Show the whole graph again (Esc)',
    onclick: () => getView().resetZoom() }, 'Reset zoom');
  const inverted = h('input', { type: 'checkbox', testid: `${p}-inverted`, checked: S.get().inverted,
    onchange: () => S.set({ inverted: inverted.checked }) });
  const minwidth = h('input', { type: 'number', min: 0, max: 50, step: 0.5, value: String(S.get().minwidth), class: 'num',
    testid: `${p}-minwidth`, title: 'Frames narrower than this many pixels are not drawn',
    onchange: () => {
      const v = Number(minwidth.value);
      if (Number.isFinite(v) && v >= 0 && v <= 50) S.set({ minwidth: v });
    } });
  const zoomed = h('span', { class: 'zoomed', testid: `${p}-zoom` });
  fill(toolsEl, input, matched, reset, zoomed,
    h('label', { class: 'toggle', title: 'Icicle: the hot leaf functions on top, their callers below' }, inverted, 'Inverted'),
    h('label', { class: 'toggle' }, 'Min width ', minwidth, ' px'));
  S.subscribe(['inverted', 'minwidth'], (st) => {
    inverted.checked = st.inverted;
    minwidth.value = String(st.minwidth);
  });

  function run() {
    const term = input.value.trim();
    if (term) getView().search(term, exact);
    else getView().clearSearch();
  }

  return {
    onSearch(info) {
      matched.classList.toggle('none', !!info && info.sum === 0);
      if (!info) fill(matched);
      else if (!info.sum) fill(matched, 'no match');
      else fill(matched, h('b', {}, percent(info.sum / info.total)), ` matched (${amount(info.sum, info.unit)} of ${amount(info.total, info.unit)})`);
    },
    onZoom(path) {
      reset.disabled = path.length === 0;
      fill(zoomed, path.length ? `zoomed into ${path[path.length - 1]}` : '');
    },
    onHover(text) {
      fill(detailsEl, text || '\u00a0');
    },
    // Highlights the frames of exactly this function (from the top table).
    highlight(name) {
      input.value = name;
      exact = true;
      run();
    },
    focus: () => input.focus(),
  };
}
