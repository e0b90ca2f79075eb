import { useMemo, useState } from "preact/hooks";
import type { PageProps } from "../pageProps";
import { color, pct, timeText, timeUnit } from "../format";

type N = Record<string, any>;
const NUMS: [string, string][] = [
  ["calls", "calls"], ["host_total_us", "host total"], ["host_self_us", "host self"],
  ["device_total_us", "device total"], ["device_self_us", "device self"], ["mean_us", "mean per call"], ["max_call_us", "max call"],
];

const TOTALS = ["host_total_us", "host_self_us", "device_total_us", "device_self_us"], PER_CALL = ["mean_us", "max_call_us"];

/** Module total time for the flame view: device time when the trace has it, else host time. */
const total = (n: N, device: boolean) => (device ? n.device_total_us : n.host_total_us) as number;

interface Box { n: N; x: number; w: number; depth: number; }

/** Icicle layout: each child sits inside its parent, widths proportional to total time. */
function layout(nodes: N[], children: Map<number, N[]>, focus: N | null, device: boolean): Box[] {
  const roots = focus ? [focus] : nodes.filter((n) => n.parent === -1);
  const sum = roots.reduce((s, n) => s + total(n, device), 0) || 1;
  const out: Box[] = [];
  const place = (n: N, x: number, w: number, depth: number) => {
    out.push({ n, x, w, depth });
    const own = total(n, device) || 1;
    let cx = x;
    for (const c of children.get(n.id) ?? []) {
      const cw = (w * total(c, device)) / own;
      if (cw >= 0.0005) place(c, cx, Math.min(cw, x + w - cx), depth + 1);
      cx += cw;
    }
  };
  let x = 0;
  for (const r of roots) { const w = total(r, device) / sum; place(r, x, w, 0); x += w; }
  return out;
}

function Flame({ nodes, children, device }: { nodes: N[]; children: Map<number, N[]>; device: boolean }) {
  const [focus, setFocus] = useState<N | null>(null);
  const boxes = useMemo(() => layout(nodes, children, focus, device), [nodes, focus, device]);
  const W = 1000, H = 20, depth = boxes.reduce((m, b) => Math.max(m, b.depth), 0) + 1;
  return (
    <div id="modules-flame">
      <p class="dim">{focus ? <>Showing {focus.path} — <button id="flame-reset" onClick={() => setFocus(null)}>show all</button></> : "Click a module to zoom into it."}
        {" "}Width = {device ? "device" : "host"} total time.</p>
      <div class="flame-wrap">
      <svg viewBox={`0 0 ${W} ${depth * H}`} width="100%" height={depth * H} preserveAspectRatio="none" class="flame">
        {boxes.map((b) => (
          <g key={b.n.id} data-id={b.n.id} onClick={() => setFocus(b.n.parent === -1 && !focus ? null : b.n)}>
            <title>{`${b.n.path}\n${timeText(total(b.n, device))}, ${b.n.calls} calls`}</title>
            <rect x={b.x * W} y={b.depth * H} width={Math.max(0.5, b.w * W - 0.5)} height={H - 1} fill={color(b.n.name.replace(/_\d+$/, ""))} />
          </g>))}
      </svg>
      <div class="flame-labels" style={{ height: `${depth * H}px` }}>
        {boxes.filter((b) => b.w > 0.025).map((b) => (
          <span key={b.n.id} style={{ left: `${b.x * 100}%`, top: `${b.depth * H}px`, width: `${b.w * 100}%` }}>{b.n.name}</span>))}
      </div></div>
    </div>
  );
}

export function Modules({ report }: PageProps) {
  const m = report.modules;
  const nodes: N[] = m.nodes;
  const children = useMemo(() => {
    const c = new Map<number, N[]>();
    for (const n of nodes) if (n.parent !== -1) { const l = c.get(n.parent) ?? []; l.push(n); c.set(n.parent, l); }
    return c;
  }, [nodes]);
  const [open, setOpen] = useState<Set<number>>(() => new Set(nodes.filter((n) => n.depth === 0).map((n) => n.id)));
  const device = m.device_us_in_modules > 0;
  // Depth-first order: a row shows when every ancestor is open.
  const byId = useMemo(() => new Map(nodes.map((n) => [n.id, n])), [nodes]);
  const visible = nodes.filter((n) => { let p = n.parent; while (p !== -1) { if (!open.has(p)) return false; p = byId.get(p)!.parent; } return true; });
  const toggle = (id: number) => { const s = new Set(open); if (s.has(id)) s.delete(id); else s.add(id); setOpen(s); };
  const share = m.device_us_total ? (100 * m.device_us_in_modules) / m.device_us_total : null;
  // one unit per column from every node (expanding rows never changes it), as in Table
  // related columns share one: the four totals, and the two per-call times
  const units = useMemo(() => {
    const of = (keys: string[]) => timeUnit(nodes.flatMap((n) => keys.map((k) => n[k])));
    const totals = of(TOTALS), call = of(PER_CALL);
    return new Map([...TOTALS.map((k) => [k, totals] as const), ...PER_CALL.map((k) => [k, call] as const)]);
  }, [nodes]);
  const inMods = timeUnit([m.device_us_in_modules, m.device_us_total]);
  return (
    <div class="page" id="page-modules">
      <section class="cards">
        <div class="card"><div class="label">module events</div><div class="big" id="module-events">{m.module_events}</div></div>
        <div class="card"><div class="label">device time in modules</div><div class="big" id="device-in-modules">{inMods.fmt(m.device_us_in_modules)}</div><div class="unit">{inMods.label} of {inMods.fmt(m.device_us_total)} ({pct(share)} %)</div></div>
      </section>
      <h2>Flame view</h2>
      <Flame nodes={nodes} children={children} device={device} />
      <h2>Module tree <button id="modules-expand" onClick={() => setOpen(new Set(nodes.map((n) => n.id)))}>expand all</button>{" "}
        <button id="modules-collapse" onClick={() => setOpen(new Set())}>collapse all</button></h2>
      <div class="table-wrap"><table id="modules-table">
        <thead><tr><th scope="col">module</th>{NUMS.map(([k, l]) => <th key={k} scope="col" class="num" data-key={k}>{units.has(k) ? `${l} ${units.get(k)!.label}` : l}</th>)}<th>top operators</th></tr></thead>
        <tbody>{visible.map((n) => {
          const kids = children.get(n.id)?.length ?? 0;
          return (
            <tr key={n.id} data-id={n.id} data-path={n.path}>
              <td data-key="name" style={{ paddingLeft: `${8 + 16 * n.depth}px` }} title={n.path}>
                {kids ? <button class="twisty" onClick={() => toggle(n.id)}>{open.has(n.id) ? "▾" : "▸"}</button> : <span class="twisty" />}
                {n.name}</td>
              {NUMS.map(([k]) => <td key={k} class="num" data-key={k}>{units.get(k)?.fmt(n[k]) ?? n.calls}</td>)}
              <td class="dim ops">{n.operators.slice(0, 3).map((o: N) => o.name).join(", ")}</td>
            </tr>);
        })}</tbody>
      </table></div>
    </div>
  );
}
