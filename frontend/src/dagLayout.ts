// Layered top-to-bottom layout of a DAG (Sugiyama-style, without dummy nodes): each node's
// layer is its longest path from a source (sources then move down next to their consumers);
// nodes within a layer are ordered by the mean position of their neighbours (barycentre),
// which removes most edge crossings.

export interface Layout {
  layer: number[];   // per node: 0 = top
  slot: number[];    // per node: position within its layer, 0-based
  width: number[];   // per layer: how many nodes it holds
  layers: number;
}

/** Kahn's topological order; nodes on a cycle (never in a valid engine) follow in index order. */
function topoOrder(n: number, parents: number[][], children: number[][]): number[] {
  const indeg = parents.map((p) => p.length);
  const queue: number[] = [];
  for (let v = 0; v < n; v++) if (indeg[v] === 0) queue.push(v);
  const order: number[] = [];
  for (let i = 0; i < queue.length; i++) {
    const v = queue[i];
    order.push(v);
    for (const c of children[v]) if (--indeg[c] === 0) queue.push(c);
  }
  if (order.length < n) {
    const seen = new Set(order);
    for (let v = 0; v < n; v++) if (!seen.has(v)) order.push(v);
  }
  return order;
}

/** Order each layer by the barycentre of the neighbours `near(v)` already placed. */
function sweep(rows: number[][], pos: number[], near: number[][], range: number[]) {
  for (const l of range) {
    const bary = (v: number) => {
      const ns = near[v];
      return ns.length ? ns.reduce((s, u) => s + pos[u], 0) / ns.length : pos[v];
    };
    const keyed = rows[l].map((v) => [bary(v), pos[v], v] as const);
    keyed.sort((a, b) => a[0] - b[0] || a[1] - b[1] || a[2] - b[2]);
    rows[l] = keyed.map((k) => k[2]);
    rows[l].forEach((v, i) => { pos[v] = i - (rows[l].length - 1) / 2; });
  }
}

export function layeredLayout(n: number, edges: readonly (readonly [number, number])[]): Layout {
  const parents: number[][] = Array.from({ length: n }, () => []);
  const children: number[][] = Array.from({ length: n }, () => []);
  for (const [a, b] of edges) {
    if (a === b || a < 0 || b < 0 || a >= n || b >= n) continue;
    parents[b].push(a); children[a].push(b);
  }
  const order = topoOrder(n, parents, children);
  const rank = new Array<number>(n).fill(0);
  const done = new Array<boolean>(n).fill(false);
  for (const v of order) {
    for (const p of parents[v]) if (done[p]) rank[v] = Math.max(rank[v], rank[p] + 1);
    done[v] = true;
  }
  // a source (a Constant, a weight) sits just above its first consumer, not at the top with
  // an edge across the whole graph
  for (const v of order) {
    if (parents[v].length === 0 && children[v].length > 0) rank[v] = Math.min(...children[v].map((c) => rank[c])) - 1;
  }
  const layers = n ? Math.max(...rank) + 1 : 0;
  const rows: number[][] = Array.from({ length: layers }, () => []);
  for (const v of order) rows[rank[v]].push(v);
  const pos = new Array<number>(n).fill(0);
  rows.forEach((r) => r.forEach((v, i) => { pos[v] = i - (r.length - 1) / 2; }));
  const down = [...Array(layers).keys()];
  const up = [...down].reverse();
  // down (by parents), up (by children), down again: enough for engine graphs, cheap
  sweep(rows, pos, parents, down.slice(1));
  sweep(rows, pos, children, up.slice(1));
  sweep(rows, pos, parents, down.slice(1));
  const slot = new Array<number>(n).fill(0);
  rows.forEach((r) => r.forEach((v, i) => { slot[v] = i; }));
  return { layer: rank, slot, width: rows.map((r) => r.length), layers };
}
