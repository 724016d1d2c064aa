// kind.js - what the views measure (CPU samples, off-CPU time, wall-clock time): the switch in the header, the words the views use for each, and whether this flamed records off-CPU time at all (a hint when it does not).
import { h, fill } from './dom.js';
import { latest, isAbort } from './api.js';
import * as S from './state.js';

// label: the switch's button; noun: what a view of the kind counts ("No off-CPU time of ... in this range");
// flame: the flame graph's title; title: the button's tooltip.
export const KIND = {
  cpu: { label: 'CPU', noun: 'CPU samples', flame: 'Flame graph', share: 'CPU share',
    title: 'On CPU: where threads ran, in CPU samples' },
  offcpu: { label: 'Off-CPU', noun: 'off-CPU time', flame: 'Off-CPU flame graph', share: 'Off-CPU share',
    title: 'Off CPU: where threads waited (blocked, sleeping, in I/O), in time; flamed records it when started with --off-cpu' },
  wall: { label: 'Wall', noun: 'wall-clock time', flame: 'Wall-clock flame graph', share: 'Wall share',
    title: 'Wall clock: running and waiting together, in time (a CPU sample counts as the sampling period)' },
};

// Whether flamed records off-CPU time: /api/v1/status's off_cpu.enabled, or null while unknown (no status
// yet, or a flamed whose status does not say); and when it was started with --off-cpu but the kernel refused
// the off-CPU program, why (off_cpu.refused), else ''.
let recorded = null;
let refused = '';
const listeners = [];

export const offCpuRecorded = () => recorded;

// Takes what /api/v1/status says (called by the header with each status it reads).
export function offCpuStatus(status) {
  const o = status && status.off_cpu;
  const now = o && typeof o.enabled === 'boolean' ? o.enabled : null;
  const why = o && !now && typeof o.refused === 'string' ? o.refused : '';
  if (now === recorded && why === refused) return;
  recorded = now;
  refused = why;
  for (const el of document.querySelectorAll('[data-offcpu-hint]')) el.textContent = hintText(el.dataset.offcpuHint);
  for (const fn of listeners) fn();
}

const START = 'start flamed with --off-cpu';
const REFUSED = 'it was started with --off-cpu, but the kernel refused its off-CPU program';

// What an empty view of kind adds to its "nothing here" text: why off-CPU time may be missing. A span that
// follows the status: a view may say it is empty before the first status has come.
export const emptyHint = (kind) => h('span', { dataset: { offcpuHint: kind } }, hintText(kind));

function hintText(kind) {
  if (kind === 'cpu') return '';
  if (refused) return ` This flamed records no off-CPU time: ${REFUSED} (${refused}).`;
  if (recorded === false) return ` This flamed does not record off-CPU time: ${START}.`;
  if (recorded === true) return '';
  return ` Off-CPU time is recorded only when flamed runs with --off-cpu.`;
}

// The CPU / Off-CPU / Wall switch (returned, for the caller to place) and the hint line hintEl under the
// header, shown when a time kind is picked and this flamed records no off-CPU time: its status says so,
// or (a status that does not say) the range holds none.
export function kindSwitch(hintEl) {
  const button = (kind) => h('button', { type: 'button', role: 'radio', class: 'tab', testid: `kind-${kind}`,
    title: KIND[kind].title, onclick: () => S.set({ kind }) }, KIND[kind].label);
  const el = h('div', { class: 'tabs kinds', role: 'radiogroup', 'aria-label': 'What the views measure', testid: 'kind-switch' },
    S.KINDS.map(button));
  const probe = latest();
  let none = false; // the range holds no off-CPU time (probed while the status does not say)

  const sync = () => {
    const st = S.get();
    for (const b of el.children) {
      const on = b.dataset.testid === `kind-${st.kind}`;
      b.classList.toggle('active', on);
      b.setAttribute('aria-checked', on ? 'true' : 'false');
      b.classList.toggle('unrecorded', recorded === false && b.dataset.testid !== 'kind-cpu');
    }
    const why = st.kind === 'cpu' ? ''
      : refused ? `This flamed records no off-CPU time: ${REFUSED}.`
      : recorded === false ? 'This flamed was started without --off-cpu: it records no off-CPU time.'
      : recorded === null && none ? 'No off-CPU time is recorded in this range: is flamed running with --off-cpu?'
      : '';
    hintEl.hidden = !why;
    hintEl.dataset.kind = st.kind;
    if (why && refused) {
      fill(hintEl, h('strong', {}, why), ' ', h('code', { testid: 'offcpu-refused' }, refused), '. ',
        st.kind === 'wall' ? 'Wall-clock views show CPU time alone (no waiting). ' : '',
        'flamed\'s status (/api/v1/status, bpf.features.off_cpu) holds the verifier\'s last words.');
    } else if (why) {
      fill(hintEl, h('strong', {}, why), st.kind === 'wall'
        ? ' Wall-clock views show CPU time alone (no waiting). To see where threads wait, '
        : ' To see where threads wait, ', h('code', {}, START), '.');
    } else fill(hintEl);
  };

  // Asks for the range's off-CPU time when a time kind is picked and the status has not said.
  async function check() {
    const st = S.get();
    if (st.kind === 'cpu' || recorded !== null) none = false;
    sync(); // the button picked shows at once; the hint, after the probe
    if (st.kind === 'cpu' || recorded !== null) return;
    try {
      const r = await probe('/api/v1/timeline', { kind: 'offcpu', from: st.from, to: st.to, step: Math.min(86400, Math.max(1, st.to - st.from)) });
      none = !(r.points || []).some((p) => p.count > 0);
    } catch (e) {
      if (isAbort(e)) return;
      none = false; // the views show the error themselves
    }
    sync();
  }

  listeners.push(check);
  S.subscribe(['kind', 'from', 'to', 'tick'], check);
  check();
  return el;
}
