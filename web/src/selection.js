// selection.js - the line that says what every view shows (host, service, process with or without its children, thread, window), with a way back from each, and the daemon's own state.
import { h, fill } from './dom.js';
import { getJSON } from './api.js';
import { count, duration, span } from './format.js';
import { offCpuStatus } from './kind.js';
import { zoomedTo, unpick } from './pick.js';
import { family, service } from './who.js';
import * as S from './state.js';

export function selectionBar(el) {
  const crumb = (text, testid, clear, title) => h('span', { class: 'crumb' }, text,
    clear ? h('button', { type: 'button', class: 'x', testid, title, 'aria-label': title, onclick: clear }, '×') : null);
  const who = h('span'), where = h('span');
  // The picked process with its children or alone: made once, so it keeps the focus while the line is drawn again.
  const kids = h('input', { type: 'checkbox', testid: 'with-children', onchange: () => S.set({ children: kids.checked, ...(kids.checked ? {} : { merge: false }) }) });
  const withKids = h('label', { class: 'with-children', testid: 'with-children-label' }, kids, 'with its children');
  const one = h('input', { type: 'checkbox', testid: 'merge', onchange: () => S.set({ merge: one.checked }) });
  const asOne = h('label', { class: 'with-children', testid: 'merge-label',
    title: 'The flame graph folds the family into one tree under the process picked, without a root frame per process (the API\'s merge=1)' },
  one, 'as one tree');
  el.append(h('span', { class: 'muted' }, 'Showing '), who, withKids, asOne, where);
  const draw = (st) => {
    const parts = [crumb('Host', null)];
    if (service(st)) parts.push(' › ', crumb(service(st), 'clear-service', () => S.set({ unit: '', container: '', cgroup: '' }),
      'Show every service'));
    if (st.pid !== null) parts.push(' › ', crumb(`${st.comm || 'process'} (${st.pid})`, 'clear-pid', unpick, 'Show the whole host'));
    if (st.pid !== null && st.tid !== null) parts.push(' › ', crumb(`thread ${st.tname || ''} (${st.tid})`, 'clear-tid',
      () => S.set({ tid: null, tname: '' }), 'Show every thread'));
    fill(who, parts);
    withKids.hidden = st.pid === null;
    kids.checked = st.children;
    kids.disabled = st.tid !== null;
    asOne.hidden = !family(st);
    one.checked = st.merge;
    withKids.title = st.tid !== null ? 'A thread is picked: the views show that thread alone'
      : 'Every view takes the process with its descendants (the API\'s children=1); the flame graph has a root frame per process';
    const { from, to } = S.view();
    const z = zoomedTo(st);
    fill(where, h('span', { class: 'muted' }, ' · '), st.mode === 'compare' ? crumb('comparing a base and a new window', null)
      : st.wfrom !== null
      ? crumb(`window ${span(from, to)}${z ? ` (${z})` : ''}`,
        'clear-window', () => S.set({ wfrom: null, wto: null }), 'Show the whole range')
      : crumb(`range ${span(from, to)}`, null));
  };
  S.subscribe(['unit', 'container', 'cgroup', 'pid', 'tid', 'comm', 'tname', 'children', 'merge', 'from', 'to', 'wfrom', 'wto', 'mode'], draw);
  draw(S.get());
}

// The daemon's state in the header; a failure shows in the banner.
export function daemonStatus(el, banner) {
  const load = async () => {
    try {
      const s = await getJSON('/api/v1/status');
      banner.hidden = true;
      const flushed = s.last_flush_time ? `last stored ${duration(Math.max(0, Date.now() / 1000 - s.last_flush_time))} ago` : 'nothing stored yet';
      offCpuStatus(s);
      const off = s.off_cpu && typeof s.off_cpu.enabled === 'boolean'
        ? ` · off-CPU ${s.off_cpu.enabled ? 'on' : s.off_cpu.refused ? 'refused by the kernel' : 'off'}` : '';
      fill(el, `flamed ${s.version} · ${s.cpus} CPUs at ${s.frequency} Hz${off} · ${count(s.samples)} samples · ${flushed}`);
      el.title = `uptime ${duration(s.uptime_seconds)}, database ${count(s.db_bytes / 1024)} KiB, samples stored every ${s.flush_interval} s`;
    } catch (e) {
      fill(el, 'flamed: no status');
      banner.hidden = false;
      fill(banner, h('strong', {}, 'The daemon does not answer as it should: '), e.message);
    }
  };
  S.subscribe(['tick'], load);
  load();
}
