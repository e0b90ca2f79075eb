import { useEffect, useRef, useState } from "preact/hooks";
import type { PageProps } from "../pageProps";
import type { Chunk, EventInfo, TimelineMeta } from "../types";
import { color, dur, sourceLink, tickLabel } from "../format";

const GUTTER = 200, RULER = 30, COUNTER_H = 28, GROUP_H = 18, LANE_H = 14, MAX_LANES = 24;

interface Lane { kind: "counter" | "group" | "row"; y: number; h: number; row?: number; group?: string; device?: number; }
interface View { start: number; end: number; }

/** Canvas timeline: data comes per window from the source (server-side level of detail). */
export function Timeline({ source, trace, config }: PageProps) {
  const canvas = useRef<HTMLCanvasElement>(null);
  const tip = useRef<HTMLDivElement>(null);
  const [meta, setMeta] = useState<TimelineMeta | null>(null);
  const [selected, setSelected] = useState<EventInfo | null>(null);
  const [search, setSearch] = useState("");
  const [hits, setHits] = useState<number | null>(null);
  const st = useRef({
    view: { start: 0, end: 1 } as View, chunk: null as Chunk | null, collapsed: new Set<string>(), lanes: [] as Lane[],
    selectedId: -1, searchNames: null as Set<number> | null, drag: null as null | { x: number; y: number; view: View; box: boolean; moved: boolean },
    box: null as null | [number, number], pending: 0, firstDrawn: false, meta: null as TimelineMeta | null, scrollY: 0,
  });

  useEffect(() => {
    let alive = true;
    source.timelineMeta(trace).then((m) => {
      if (!alive) return;
      st.current.meta = m; st.current.view = { start: m.start, end: Math.max(m.end, m.start + 1) };
      performance.mark("stepscope:timeline-meta");
      setMeta(m);
    });
    return () => { alive = false; };
  }, [trace]);

  const layout = () => {
    const s = st.current, m = s.meta!, lanes: Lane[] = [];
    let y = RULER - s.scrollY;
    for (const c of s.chunk?.counters ?? m.devices.map((d) => ({ device: d }))) { lanes.push({ kind: "counter", y, h: COUNTER_H, device: c.device }); y += COUNTER_H; }
    let group = "";
    for (const r of m.rows) {
      if (r.group !== group) { group = r.group; lanes.push({ kind: "group", y, h: GROUP_H, group }); y += GROUP_H; }
      if (s.collapsed.has(group)) continue;
      const h = Math.min(Math.max(r.depths, 1), MAX_LANES) * LANE_H + 4;
      lanes.push({ kind: "row", y, h, row: r.id }); y += h;
    }
    s.lanes = lanes;
    // lane geometry for tests and tools: [kind, row/device/group, y, height]
    if (canvas.current) canvas.current.dataset.lanes = JSON.stringify(lanes.map((l) => [l.kind === "row" ? m.rows[l.row!].kind : l.kind, l.row ?? l.device ?? l.group, Math.round(l.y), l.h]));
    return y + s.scrollY;
  };

  const draw = () => {
    const s = st.current, cv = canvas.current, m = s.meta;
    if (!cv || !m) return;
    const t0 = performance.now();
    const dpr = window.devicePixelRatio || 1, W = cv.clientWidth, H = cv.clientHeight;
    if (cv.width !== W * dpr || cv.height !== H * dpr) { cv.width = W * dpr; cv.height = H * dpr; }
    const g = cv.getContext("2d")!;
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.fillStyle = "#fff"; g.fillRect(0, 0, W, H);
    layout();
    const { start, end } = s.view, span = end - start, pw = W - GUTTER;
    const X = (t: number) => GUTTER + ((t - start) / span) * pw;
    const rowLane = new Map<number, Lane>();
    for (const l of s.lanes) if (l.kind === "row") rowLane.set(l.row!, l);
    const c = s.chunk;
    g.save(); g.beginPath(); g.rect(GUTTER, RULER, pw, H - RULER); g.clip();
    if (c) {
      // counters
      for (const k of c.counters) {
        const lane = s.lanes.find((l) => l.kind === "counter" && l.device === k.device);
        if (!lane) continue;
        const n = k.values.length, cs = c.start, ce = c.end;
        g.fillStyle = "#3a7bd5";
        for (let i = 0; i < n; i++) {
          const v = k.values[i]; if (v <= 0) continue;
          const x0 = X(cs + (i * (ce - cs)) / n), x1 = X(cs + ((i + 1) * (ce - cs)) / n);
          const h = v * (lane.h - 4);
          g.fillRect(x0, lane.y + lane.h - 2 - h, Math.max(1, x1 - x0), h);
        }
      }
      // aggregates: one pixel-wide box per (row, depth, pixel) of narrow events
      const a = c.aggregates;
      g.fillStyle = "#8a8f98";
      for (let i = 0; i < a.row.length; i++) {
        const lane = rowLane.get(a.row[i]); if (!lane || a.depth[i] >= MAX_LANES) continue;
        const y = lane.y + 2 + a.depth[i] * LANE_H;
        if (y > H || y + LANE_H < RULER) continue;
        g.fillRect(X(a.ts[i]), y, Math.max(1, (a.dur / span) * pw), LANE_H - 1);
      }
      const e = c.events, sn = s.searchNames;
      g.font = "11px sans-serif"; g.textBaseline = "middle";
      for (let i = 0; i < e.id.length; i++) {
        const lane = rowLane.get(e.row[i]); if (!lane || e.depth[i] >= MAX_LANES) continue;
        const y = lane.y + 2 + e.depth[i] * LANE_H;
        if (y > H || y + LANE_H < RULER) continue;
        const x0 = Math.max(GUTTER - 2, X(e.ts[i])), x1 = Math.min(W + 2, X(e.ts[i] + e.dur[i]));
        const w = Math.max(1, x1 - x0), name = c.names[e.name[i]] ?? "";
        const dim = sn !== null && !sn.has(e.name[i]);
        g.fillStyle = dim ? "#e4e6ea" : color(name);
        g.fillRect(x0, y, w, LANE_H - 1);
        if (sn !== null && !dim) { g.strokeStyle = "#d4a000"; g.lineWidth = 2; g.strokeRect(x0, y, w, LANE_H - 1); }
        if (e.id[i] === s.selectedId) { g.strokeStyle = "#000"; g.lineWidth = 2; g.strokeRect(x0, y, w, LANE_H - 1); }
        if (w > 40) { g.fillStyle = "#111"; g.fillText(fit(g, name, w - 4), x0 + 2, y + LANE_H / 2); }
      }
      // flow arrows launch -> kernel: all when few, otherwise those of the selected event
      const f = c.flows, many = f.from.length > 300;
      g.strokeStyle = "rgba(200,40,40,0.8)"; g.fillStyle = "rgba(200,40,40,0.8)"; g.lineWidth = 1;
      for (let i = 0; i < f.from.length; i++) {
        const mine = f.from[i] === s.selectedId || f.to[i] === s.selectedId;
        const inView = f.from_ts[i] >= start && f.from_ts[i] <= end && f.to_ts[i] >= start && f.to_ts[i] <= end;
        if (!mine && (many || !inView)) continue;
        const la = rowLane.get(f.from_row[i]), lb = rowLane.get(f.to_row[i]); if (!la || !lb) continue;
        const xa = X(f.from_ts[i]), ya = la.y + 2 + Math.min(f.from_depth[i], MAX_LANES - 1) * LANE_H + LANE_H / 2;
        const xb = X(f.to_ts[i]), yb = lb.y + 2 + Math.min(f.to_depth[i], MAX_LANES - 1) * LANE_H + LANE_H / 2;
        arrow(g, xa, ya, xb, yb);
      }
    }
    // step boundaries
    g.strokeStyle = "rgba(0,120,0,0.6)"; g.setLineDash([4, 3]); g.lineWidth = 1;
    let lastLine = -1e9;
    for (const stp of m.steps) for (const t of [stp.start, stp.start + stp.dur]) {
      const x = X(t); if (x < GUTTER || x > W || x - lastLine < 4) continue;
      lastLine = x;
      g.beginPath(); g.moveTo(x, RULER); g.lineTo(x, H); g.stroke();
    }
    g.setLineDash([]);
    if (s.box) { g.fillStyle = "rgba(58,123,213,0.15)"; const [a, b] = s.box; g.fillRect(Math.min(a, b), RULER, Math.abs(b - a), H - RULER); }
    g.restore();
    // gutter labels and group headers
    g.fillStyle = "#f4f5f7"; g.fillRect(0, RULER, GUTTER, H - RULER);
    g.font = "11px sans-serif"; g.textBaseline = "middle";
    for (const l of s.lanes) {
      if (l.y > H || l.y + l.h < RULER) continue;
      if (l.kind === "group") {
        g.fillStyle = "#dde1e7"; g.fillRect(0, l.y, W, l.h);
        g.fillStyle = "#111"; g.fillText(`${s.collapsed.has(l.group!) ? "▸" : "▾"} ${l.group}`, 4, l.y + l.h / 2);
      } else {
        const label = l.kind === "counter" ? `GPU ${l.device} utilization` : m.rows[l.row!].label;
        g.fillStyle = "#333"; g.fillText(fit(g, label, GUTTER - 10), 10, l.y + Math.min(l.h, 16) / 2 + 1);
        g.strokeStyle = "#eceef1"; g.beginPath(); g.moveTo(0, l.y + l.h); g.lineTo(W, l.y + l.h); g.stroke();
      }
    }
    // ruler + step labels
    g.fillStyle = "#fafafa"; g.fillRect(0, 0, W, RULER);
    g.fillStyle = "#333"; g.fillText(`${dur(span)} window`, 4, RULER / 2);
    const tick = niceStep(span / 8);
    for (let t = Math.ceil(start / tick) * tick; t < end; t += tick) {
      const x = X(t); g.fillStyle = "#999"; g.fillRect(x, RULER - 6, 1, 6); g.fillStyle = "#333"; g.fillText(tickLabel(t, tick), x + 2, RULER / 2 - 3);
    }
    g.fillStyle = "rgba(0,120,0,0.9)";
    let lastLabel = -1e9;
    for (const stp of m.steps) {
      const x = X(stp.start), label = stp.name.replace("ProfilerStep#", "step ");
      if (x < GUTTER || x >= W || x < lastLabel) continue;
      g.fillText(label, x + 2, RULER - 5); lastLabel = x + g.measureText(label).width + 8;
    }
    const ms = performance.now() - t0;
    const w = window as any; (w.__stepscopeFrames ??= []).push(ms);
    if (c && !s.firstDrawn) { s.firstDrawn = true; performance.mark("stepscope:timeline-first-render"); cv.dataset.ready = "1"; }
  };

  const fetchChunk = () => {
    const s = st.current, cv = canvas.current; if (!cv || !s.meta) return;
    const id = ++s.pending, v = { ...s.view };
    const pw = Math.max(1, cv.clientWidth - GUTTER);
    source.timeline(trace, v.start, v.end, pw).then((c) => {
      if (id !== s.pending) return;
      s.chunk = c; cv.dataset.events = String(c.events.id.length); cv.dataset.aggregates = String(c.aggregates.row.length);
      cv.dataset.flows = String(c.flows.from.length); requestAnimationFrame(draw);
    });
  };
  const setView = (v: View) => {
    const s = st.current, m = s.meta!; const full = m.end - m.start;
    let span = Math.min(full * 1.05, Math.max(1000, v.end - v.start));
    let a = v.start; if (v.end - v.start !== span) a = (v.start + v.end) / 2 - span / 2;
    a = Math.max(m.start - full * 0.025, Math.min(a, m.end + full * 0.025 - span));
    s.view = { start: a, end: a + span };
    canvas.current!.dataset.start = String(Math.round(a)); canvas.current!.dataset.end = String(Math.round(a + span));
    draw();
    clearTimeout((s as any).timer); (s as any).timer = setTimeout(fetchChunk, 40);
  };
  const zoomAt = (x: number, factor: number) => {
    const { start, end } = st.current.view, W = canvas.current!.clientWidth;
    const t = start + ((x - GUTTER) / (W - GUTTER)) * (end - start);
    setView({ start: t - (t - start) * factor, end: t + (end - t) * factor });
  };
  const pick = (x: number, y: number): number => {
    const s = st.current, c = s.chunk; if (!c) return -1;
    const W = canvas.current!.clientWidth, { start, end } = s.view;
    const t = start + ((x - GUTTER) / (W - GUTTER)) * (end - start), tol = (3 / (W - GUTTER)) * (end - start);
    const lane = s.lanes.find((l) => l.kind === "row" && y >= l.y && y < l.y + l.h); if (!lane) return -1;
    const depth = Math.floor((y - lane.y - 2) / LANE_H), e = c.events;
    let best = -1, bestDur = Infinity;
    for (let i = 0; i < e.id.length; i++) {
      if (e.row[i] !== lane.row || e.depth[i] !== depth) continue;
      if (t >= e.ts[i] - tol && t <= e.ts[i] + e.dur[i] + tol && e.dur[i] < bestDur) { best = e.id[i]; bestDur = e.dur[i]; }
    }
    return best;
  };
  const select = (id: number, center = false) => {
    st.current.selectedId = id; canvas.current!.dataset.selected = String(id);
    if (id < 0) { setSelected(null); draw(); return; }
    source.event(trace, id).then((ev) => {
      setSelected(ev);
      if (center) {
        const s = st.current, span = Math.max(s.view.end - s.view.start, ev.dur * 4);
        const mid = ev.ts + ev.dur / 2; setView({ start: mid - span / 2, end: mid + span / 2 });
      } else draw();
    });
  };

  useEffect(() => {
    const cv = canvas.current; if (!cv || !meta) return;
    const s = st.current;
    setView(s.view);
    const rel = (e: MouseEvent) => { const r = cv.getBoundingClientRect(); return [e.clientX - r.left, e.clientY - r.top]; };
    const onWheel = (e: WheelEvent) => {
      e.preventDefault();
      const [x] = rel(e);
      if (e.shiftKey || Math.abs(e.deltaX) > Math.abs(e.deltaY)) {
        const d = (e.shiftKey ? e.deltaY : e.deltaX) / (cv.clientWidth - GUTTER) * (s.view.end - s.view.start);
        setView({ start: s.view.start + d, end: s.view.end + d });
      } else if (e.altKey) {
        s.scrollY = Math.max(0, s.scrollY + e.deltaY); draw();
      } else zoomAt(Math.max(GUTTER, x), Math.exp(e.deltaY * 0.002));
    };
    const onDown = (e: MouseEvent) => { const [x, y] = rel(e); s.drag = { x, y, view: { ...s.view }, box: e.shiftKey, moved: false }; };
    const onMove = (e: MouseEvent) => {
      const d = s.drag;
      if (!d) { hover(e); return; }
      const [x] = rel(e);
      if (Math.abs(x - d.x) > 3) d.moved = true;
      if (d.box) { s.box = [Math.max(GUTTER, d.x), Math.max(GUTTER, x)]; draw(); return; }
      const dt = ((x - d.x) / (cv.clientWidth - GUTTER)) * (d.view.end - d.view.start);
      setView({ start: d.view.start - dt, end: d.view.end - dt });
    };
    // Tooltip: the event under the cursor, or the count of a folded (sub-pixel) box.
    const hover = (e: MouseEvent) => {
      const t = tip.current; if (!t) return;
      const [x, y] = rel(e);
      if (x < GUTTER || y < RULER || x > cv.clientWidth || y > cv.clientHeight || !s.chunk) { t.style.display = "none"; return; }
      const id = pick(x, y);
      let text = "";
      if (id >= 0) {
        const e2 = s.chunk.events, i = e2.id.indexOf(id);
        text = `${s.chunk.names[e2.name[i]] ?? ""} · ${dur(e2.dur[i])}`;
      } else {
        const lane = s.lanes.find((l) => l.kind === "row" && y >= l.y && y < l.y + l.h);
        if (lane) {
          const a = s.chunk.aggregates, depth = Math.floor((y - lane.y - 2) / LANE_H);
          const W = cv.clientWidth, t0 = s.view.start + ((x - GUTTER) / (W - GUTTER)) * (s.view.end - s.view.start);
          const tol = (2 / (W - GUTTER)) * (s.view.end - s.view.start);
          for (let i = 0; i < a.row.length; i++) {
            if (a.row[i] === lane.row && a.depth[i] === depth && t0 >= a.ts[i] - tol && t0 <= a.ts[i] + a.dur + tol) {
              text = `${a.count[i]} short events folded (${dur(a.busy[i])} busy) — zoom in`; break;
            }
          }
        }
      }
      if (!text) { t.style.display = "none"; return; }
      t.textContent = text;
      t.style.display = "block";
      t.style.left = `${Math.min(x + 12, cv.clientWidth - 320)}px`; t.style.top = `${y + 14}px`;
    };
    const onLeave = () => { if (tip.current) tip.current.style.display = "none"; };
    const onUp = (e: MouseEvent) => {
      const d = s.drag; s.drag = null; if (!d) return;
      const [x, y] = rel(e);
      if (d.box && s.box && Math.abs(s.box[1] - s.box[0]) > 3) {
        const W = cv.clientWidth, { start, end } = s.view, T = (px: number) => start + ((px - GUTTER) / (W - GUTTER)) * (end - start);
        const [a, b] = s.box; s.box = null; setView({ start: T(Math.min(a, b)), end: T(Math.max(a, b)) }); return;
      }
      s.box = null;
      if (d.moved) return;
      if (x < GUTTER) {
        const lane = s.lanes.find((l) => l.kind === "group" && y >= l.y && y < l.y + l.h);
        if (lane) { const gname = lane.group!; s.collapsed.has(gname) ? s.collapsed.delete(gname) : s.collapsed.add(gname); draw(); }
        return;
      }
      select(pick(x, y));
    };
    const onKey = (e: KeyboardEvent) => {
      if ((e.target as HTMLElement).tagName === "INPUT") return;
      const span = s.view.end - s.view.start, W = cv.clientWidth, mid = GUTTER + (W - GUTTER) / 2;
      if (e.key === "w") zoomAt(mid, 0.7); else if (e.key === "s") zoomAt(mid, 1 / 0.7);
      else if (e.key === "a") setView({ start: s.view.start - span * 0.2, end: s.view.end - span * 0.2 });
      else if (e.key === "d") setView({ start: s.view.start + span * 0.2, end: s.view.end + span * 0.2 });
      else if (e.key === "0") setView({ start: s.meta!.start, end: s.meta!.end });
      else if (e.key === "ArrowDown") { s.scrollY += 40; draw(); } else if (e.key === "ArrowUp") { s.scrollY = Math.max(0, s.scrollY - 40); draw(); }
    };
    const onResize = () => { draw(); fetchChunk(); };
    cv.addEventListener("wheel", onWheel, { passive: false });
    cv.addEventListener("mousedown", onDown); cv.addEventListener("mouseleave", onLeave); window.addEventListener("mousemove", onMove); window.addEventListener("mouseup", onUp);
    window.addEventListener("keydown", onKey); window.addEventListener("resize", onResize);
    return () => {
      cv.removeEventListener("wheel", onWheel); cv.removeEventListener("mousedown", onDown); cv.removeEventListener("mouseleave", onLeave);
      window.removeEventListener("mousemove", onMove); window.removeEventListener("mouseup", onUp);
      window.removeEventListener("keydown", onKey); window.removeEventListener("resize", onResize);
    };
  }, [meta]);

  const runSearch = (text: string) => {
    setSearch(text);
    if (!text) { st.current.searchNames = null; setHits(null); draw(); return; }
    source.search(trace, text).then((r) => { st.current.searchNames = new Set(r.names); setHits(r.count); draw(); });
  };

  if (!meta) return <div class="page" id="page-timeline"><p>Loading timeline…</p></div>;
  const kept = meta.cap === undefined ? null : meta.kept! < meta.events
    ? <span class="dim" id="timeline-cap">· this report keeps the {meta.kept} longest of {meta.events} events (cap {meta.cap}); <code>stepscope view</code> shows all of them</span>
    : <span class="dim" id="timeline-cap">· all {meta.events} events (this report keeps at most {meta.cap})</span>;
  return (
    <div class="page" id="page-timeline">
      <div class="toolbar">
        <input class="search" id="timeline-search" placeholder="search events…" value={search}
          onInput={(e) => runSearch((e.target as HTMLInputElement).value)} />
        {hits !== null && <span id="search-hits">{hits} matches</span>}
        <button id="zoom-in" onClick={() => zoomAt(GUTTER + (canvas.current!.clientWidth - GUTTER) / 2, 0.5)}>zoom in</button>
        <button id="zoom-out" onClick={() => zoomAt(GUTTER + (canvas.current!.clientWidth - GUTTER) / 2, 2)}>zoom out</button>
        <button id="zoom-reset" onClick={() => setView({ start: meta.start, end: meta.end })}>reset</button>
        <button id="export" onClick={() => source.exportWindow(trace, st.current.view.start, st.current.view.end)}>export window (Chrome trace)</button>
        <span class="dim">{meta.events} events · wheel: zoom · drag: pan · shift+drag: box zoom · W/S/A/D keys · click group to collapse</span>{kept}
      </div>
      <div class="timeline-wrap">
        <canvas ref={canvas} id="timeline-canvas" class="timeline" />
        <div ref={tip} class="tip" id="timeline-tip" />
      </div>
      <div class="details" id="event-details">
        {selected ? <EventPanel ev={selected} meta={meta} config={config} onFollow={(id) => select(id, true)} /> : <p class="dim">Click an event to see its details.</p>}
      </div>
    </div>
  );
}

function EventPanel({ ev, meta, config, onFollow }: { ev: EventInfo; meta: TimelineMeta; config: PageProps["config"]; onFollow: (id: number) => void }) {
  const stack = typeof ev.args.call_stack === "string" ? (ev.args.call_stack as string).split(";").filter(Boolean) : [];
  return (
    <div>
      <h3 id="event-name">{ev.name}</h3>
      <table class="kv"><tbody>
        <tr><td>row</td><td>{meta.rows[ev.row]?.group} / {meta.rows[ev.row]?.label}</td></tr>
        <tr><td>start</td><td>{dur(ev.ts)}</td></tr>
        <tr><td>duration</td><td id="event-dur">{dur(ev.dur)}</td></tr>
        {Object.entries(ev.args).filter(([k]) => k !== "call_stack").map(([k, v]) => <tr key={k}><td>{k}</td><td>{String(v)}</td></tr>)}
      </tbody></table>
      {ev.flow && <p>flow: <button id="follow-flow" onClick={() => onFollow(ev.flow!.id)}>
        {ev.table === "device" ? "← go to launch" : "→ go to kernel"}: {ev.flow.name}</button></p>}
      {stack.length > 0 && <div><b>call stack</b><ul class="stack">{stack.map((f, i) => {
        const link = sourceLink(f, config.source_link, config.path_map);
        return <li key={i}>{link ? <a href={link}>{f}</a> : f}</li>;
      })}</ul></div>}
    </div>
  );
}

function fit(g: CanvasRenderingContext2D, s: string, w: number): string {
  if (g.measureText(s).width <= w) return s;
  const n = Math.max(0, Math.floor((w / g.measureText("m").width) * 1.6) - 1);
  return n > 2 ? s.slice(0, n) + "…" : "";
}
function arrow(g: CanvasRenderingContext2D, xa: number, ya: number, xb: number, yb: number) {
  g.beginPath(); g.moveTo(xa, ya); g.bezierCurveTo(xa, (ya + yb) / 2, xb, (ya + yb) / 2, xb, yb); g.stroke();
  const d = yb > ya ? -1 : 1;
  g.beginPath(); g.moveTo(xb, yb); g.lineTo(xb - 4, yb + 7 * d); g.lineTo(xb + 4, yb + 7 * d); g.closePath(); g.fill();
}
function niceStep(x: number): number {
  const p = Math.pow(10, Math.floor(Math.log10(Math.max(x, 1)))), m = x / p;
  return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
}
