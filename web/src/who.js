// who.js - the query parameters of what the views show (what is measured, the process, the thread) and the human name of what the views show: the host, a process or one of its threads.
import * as S from './state.js';

// kind, pid and tid parameters of the current selection (pid, tid absent: any).
export function filter(st = S.get()) {
  return { kind: st.kind, pid: st.pid, tid: st.pid !== null ? st.tid : null };
}

// "the host", "process 123 (nginx)", "thread 124 (worker) of 123 (nginx)".
export function who(st = S.get()) {
  if (st.pid === null) return 'the host';
  const proc = `${st.pid}${st.comm ? ` (${st.comm})` : ''}`;
  if (st.tid === null) return `process ${proc}`;
  return `thread ${st.tid}${st.tname ? ` (${st.tname})` : ''} of ${proc}`;
}
