// proctree.js - the processes of a window as a tree: each under its nearest ancestor in the list (the API's "parent"), with its subtree's totals and lifetime, and the tree flattened into the rows a table draws: each level sorted, collapsed nodes shut, a filter keeping matches and their ancestors.

// rows: the API's processes ({pid, comm, samples, share, first_seen, last_seen, parent}). Returns the roots. Each node is its
// row with kids (the nodes under it), parentNode (null: a root), total and tshare (its value and share with its subtree's),
// tfirst and tlast (the first and last second its subtree was seen), count (its descendants).
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
  const sum = (n) => {
    Object.assign(n, { total: n.samples, tshare: n.share, tfirst: n.first_seen, tlast: n.last_seen, count: 0 });
    for (const k of n.kids) {
      sum(k);
      n.total += k.total;
      n.tshare += k.tshare;
      n.tfirst = Math.min(n.tfirst, k.tfirst);
      n.tlast = Math.max(n.tlast, k.tlast);
      n.count += 1 + k.count;
    }
  };
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
