// range.js - the time range picker (last 5 m ... 24 h, or custom from/to), the auto-refresh toggle and the Profile/Compare tabs.
import { h, fill } from './dom.js';
import { duration, instant, parseInstant } from './format.js';
import * as S from './state.js';

const REFRESH_MS = 5000;

export function rangeBar(root) {
  const preset = h('select', { testid: 'range-preset', 'aria-label': 'Time range',
    onchange: () => {
      if (preset.value === 'custom') {
        custom.hidden = false;
        from.focus();
        return;
      }
      S.set({ preset: preset.value, ...S.presetRange(preset.value), wfrom: null, wto: null });
    } },
  Object.keys(S.PRESETS).map((k) => h('option', { value: k }, `Last ${duration(S.PRESETS[k])}`)),
  h('option', { value: 'custom' }, 'Custom…'));
  const from = h('input', { type: 'text', class: 'when', testid: 'range-from', 'aria-label': 'From', placeholder: 'from: -15m, 2024-05-01 10:00' });
  const to = h('input', { type: 'text', class: 'when', testid: 'range-to', 'aria-label': 'To', placeholder: 'to: now' });
  const error = h('span', { class: 'error-text', testid: 'range-error', role: 'alert' });
  const apply = () => {
    const a = parseInstant(from.value), b = parseInstant(to.value || 'now');
    if (Number.isNaN(a) || Number.isNaN(b)) return fill(error, 'Give times as unix seconds, "-10m", "now" or "YYYY-MM-DD HH:MM:SS".');
    if (a >= b) return fill(error, 'From must come before To.');
    fill(error);
    S.set({ preset: 'custom', from: Math.floor(a), to: Math.ceil(b), wfrom: null, wto: null });
  };
  const custom = h('form', { class: 'custom', testid: 'range-custom', hidden: true,
    onsubmit: (e) => {
      e.preventDefault();
      apply();
    } }, from, '–', to, h('button', { type: 'submit', testid: 'range-apply' }, 'Apply'), error);
  const auto = h('input', { type: 'checkbox', testid: 'auto-refresh', onchange: () => S.set({ auto: auto.checked }) });
  const tab = (mode, text) => h('button', { type: 'button', role: 'tab', class: 'tab', testid: `mode-${mode}`,
    onclick: () => S.set({ mode }) }, text);
  const tabs = h('nav', { class: 'tabs', role: 'tablist' }, tab('profile', 'Profile'), tab('compare', 'Compare'));
  root.append(tabs, h('label', { class: 'range' }, 'Range ', preset), custom,
    h('label', { class: 'toggle', title: `Reload every ${REFRESH_MS / 1000} s; ranges keep ending now` }, auto, 'Auto-refresh'));

  let timer = null;
  const sync = (st) => {
    preset.value = st.preset;
    custom.hidden = st.preset !== 'custom';
    if (st.preset === 'custom') {
      from.value = instant(st.from);
      to.value = instant(st.to);
    }
    auto.checked = st.auto;
    for (const b of tabs.children) {
      const on = b.dataset.testid === `mode-${st.mode}`;
      b.classList.toggle('active', on);
      b.setAttribute('aria-selected', on ? 'true' : 'false');
    }
    if (st.auto && !timer) timer = setInterval(refresh, REFRESH_MS);
    if (!st.auto && timer) {
      clearInterval(timer);
      timer = null;
    }
  };
  S.subscribe(['preset', 'from', 'to', 'auto', 'mode'], sync);
  sync(S.get());
}

// Reloads every view; a preset range moves on to end now (a dragged window stays where it is).
export function refresh() {
  const st = S.get();
  const patch = { tick: st.tick + 1 };
  if (st.preset !== 'custom') Object.assign(patch, S.presetRange(st.preset));
  S.set(patch);
}
