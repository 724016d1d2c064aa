// proctree.js - the processes of a window as a tree: each under its nearest ancestor in the list (the API's "parent"), or under its service (systemd unit, container, cgroup), with its subtree's totals and lifetime, and the tree flattened into the rows a table draws: each level sorted, collapsed nodes shut, a filter keeping matches and their ancestors.

// rows: the API's processes ({pid, comm, samples, share, first_seen, last_seen, parent}). Returns the roots. Each node is its
// row with kids (the nodes under it), parentNode (null: a root), total and tshare (its value and share with its subtree's),
// tfirst and tlast (the first and last second its subtree was seen), count (its descendants).
// Sums a node's subtree into it: total, tshare, tfirst, tlast, count.
function sum(n) {
  Object.assign(n, { total: n.samples, tshare: n.share, tfirst: n.first_seen, tlast: n.last_seen, count: 0 });
  for (const k of n.kids) {
    sum(k);
    n.total += k.total;
    n.tshare += k.tshare;
    n.tfirst = Math.min(n.tfirst, k.tfirst);
    n.tlast = Math.max(n.tlast, k.tlast);
    n.count += 1 + k.count;
  }
}

// What a process row's service is: { key, label, pick } where pick is the state that selects it (unit, container or
// cgroup), or null for a process whose cgroup is not known.
export function serviceOf(r) {
  if (r.container) return { key: `container:${r.container}`, label: `${r.runtime || 'container'} ${r.container.slice(0, 12)}` +
    (r.pod ? ` (pod ${r.pod.slice(0, 8)})` : ''), pick: { unit: '', container: r.container, cgroup: '' } };
  if (r.unit) return { key: `unit:${r.unit}`, label: r.unit, pick: { unit: r.unit, container: '', cgroup: '' } };
  if (r.cgroup) return { key: `cgroup:${r.cgroup}`, label: r.cgroup, pick: { unit: '', container: '', cgroup: r.cgroup } };
  return { key: 'none', label: 'no cgroup known', pick: null };
}

// rows: the API's processes (with unit, container, cgroup). Returns one root per service, each process under it: a root is
// { pid: its key, comm: its label, group: its pick (null: none), samples 0, share 0, kids } summed as buildTree's.
export function buildServiceTree(rows) {
  const groups = new Map();
  for (const r of rows) {
    const s = serviceOf(r);
    let g = groups.get(s.key);
    if (!g) {
      g = { pid: s.key, comm: s.label, group: s.pick, samples: 0, share: 0, first_seen: Infinity, last_seen: -Infinity,
        kids: [], parentNode: null };
      groups.set(s.key, g);
    }
    g.kids.push({ ...r, kids: [], parentNode: g });
  }
  const roots = [...groups.values()];
  roots.forEach(sum);
  return roots;
}

export function buildTree(rows) {
  const byPid = new Map(rows.map((r) => [r.pid, { ...r, kids: [], parentNode: null }]));
  // A parent chain that comes back to the node (not something the API says) makes the node a root.
  const loops = (n, p) => {
    for (let q = p, i = 0; q && i <= byPid.size; q = byPid.get(q.parent), i++) if (q === n) return true;
    return false;
  };
  const roots = [];
  for (const n of byPid.values()) {
    const p = n.parent ? byPid.get(n.parent) : null;
    if (p && p !== n && !loops(n, p)) {
      n.parentNode = p;
      p.kids.push(n);
    } else roots.push(n);
  }
  roots.forEach(sum);
  return roots;
}

// Whether node has ancestor pid (or is it).
export function within(node, pid) {
  for (let n = node; n; n = n.parentNode) if (n.pid === pid) return true;
  return false;
}

// The rows to draw, depth first: each level sorted by compare, the kids of a node in collapsed (a Set of pids) left out;
// with match(node), only the nodes that match and their ancestors (open whether collapsed or not). Sets on each node drawn
// depth (0: a root), open (its kids are drawn) and matched (it matches, or no filter).
export function flatten(roots, compare, collapsed, match = null) {
  const keep = new Map(); // node -> it or a node under it matches
  const keeps = (n) => {
    let k = keep.get(n);
    if (k === undefined) {
      k = n.kids.reduce((any, c) => keeps(c) || any, match(n));
      keep.set(n, k);
    }
    return k;
  };
  const out = [];
  const walk = (nodes, depth) => {
    for (const n of nodes.slice().sort(compare)) {
      if (match && !keeps(n)) continue;
      n.depth = depth;
      n.matched = !match || match(n);
      n.open = match ? n.kids.some((c) => keeps(c)) : !collapsed.has(n.pid);
      out.push(n);
      if (n.open) walk(n.kids, depth + 1);
    }
  };
  walk(roots, 0);
  return out;
}
