// who.js - the query parameters of what the views show (what is measured, the service, the process with or without its children, the thread) and the human name of what the views show: the host, a service, a process (and its children) or one of its threads.
import * as S from './state.js';

// Whether the views take the process picked with its descendants: children on, a process picked and no
// thread of it (the API takes children= with a pid, never with a tid).
export const family = (st = S.get()) => st.children && st.pid !== null && st.tid === null;

// Whether the flame graph folds the family into one tree (the API's merge=1, which needs children=1).
export const merged = (st = S.get()) => family(st) && st.merge;

// kind, unit, container, pid, tid and children parameters of the current selection (each absent: any).
export function filter(st = S.get()) {
  return { kind: st.kind, unit: st.unit, container: st.container, cgroup: st.cgroup, pid: st.pid,
    tid: st.pid !== null ? st.tid : null, children: family(st) };
}

// "web.service", "container 0123456789ab", "/some/cgroup": the service picked, or ''.
export function service(st = S.get()) {
  return st.unit || (st.container ? `container ${st.container.slice(0, 12)}` : st.cgroup);
}

// "the host", "process 123 (nginx)", "process 123 (nginx) and its children", "thread 124 (worker) of 123 (nginx)".
export function who(st = S.get()) {
  if (st.pid === null) return service(st) || 'the host';
  const proc = `${st.pid}${st.comm ? ` (${st.comm})` : ''}`;
  if (st.tid === null) return `process ${proc}${family(st) ? ' and its children' : ''}`;
  return `thread ${st.tid}${st.tname ? ` (${st.tname})` : ''} of ${proc}`;
}
