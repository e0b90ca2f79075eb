import { useEffect, useRef, useState } from "preact/hooks";
import type { PageProps } from "../pageProps";
import type { Brief, Chunk, EventInfo, TimelineMeta } from "../types";
import { bytes, color, dur, num, tickLabel } from "../format";
import { EventPanel } from "./TimelineDetails";
import { hashParams, linkedView, onPath, pathMarks, type PathMarks } from "./timelinePath";
import { CP_COLORS } from "../pathCategories";
import "./timeline.css";

// Geometry (px). Every depth of every row is drawn; rows are laid out once and only the lanes
// inside the visible band are painted (virtualised). The pinned band (counters and GPU rows by
// default) stays under the ruler; the rest scrolls with the wheel, the keys or the scrollbar.
const GUTTER = 220, RULER = 30, COUNTER_H = 30, GROUP_H = 18, LANE_H = 14, SB = 12, PIN_X = GUTTER - 14;

interface Lane {
  key: string; kind: "counter" | "group" | "row"; pinned: boolean; y: number; h: number;
  row?: number; group?: string; counter?: string; label: string; levels: number;
}
interface View { start: number; end: number; }
interface CounterMeta { id: string; label: string; unit: string; max: number; }
export type Hit = Brief;

/** Canvas timeline: data comes per window from the source (server-side level of detail). */
export function Timeline({ source, trace, config, report }: PageProps) {
  const canvas = useRef<HTMLCanvasElement>(null);
  const tip = useRef<HTMLDivElement>(null);
  const bar = useRef<HTMLDivElement>(null);
  const barInner = useRef<HTMLDivElement>(null);
  const [meta, setMeta] = useState<TimelineMeta | null>(null);
  const [selected, setSelected] = useState<EventInfo | null>(null);
  const [search, setSearch] = useState("");
  const [hits, setHits] = useState<{ count: number; list: Hit[] } | null>(null);
  const [hitIdx, setHitIdx] = useState(-1);
  const [cpOn, setCpOn] = useState(true);
  const st = useRef({
    view: { start: 0, end: 1 } as View, chunk: null as Chunk | null, collapsed: new Set<string>(), openPy: new Set<number>(),
    pinned: new Set<string>(), lanes: [] as Lane[], pinBottom: RULER, scrollY: 0, scrollMax: 0,
    selectedId: -1, searchNames: null as Set<number> | null, drag: null as null | { x: number; y: number; view: View; box: boolean; moved: boolean; sy: number },
    box: null as null | [number, number], pending: 0, firstDrawn: false, meta: null as TimelineMeta | null,
    counters: [] as CounterMeta[], timer: 0 as any, searchTimer: 0 as any, searchSeq: 0,
    cp: null as PathMarks | null, cpOn: true,  // the critical path, when opened with cp=1
  });

  useEffect(() => {
    let alive = true;
    source.timelineMeta(trace).then((m) => {
      if (!alive) return;
      const s = st.current;
      s.meta = m; s.view = { start: m.start, end: Math.max(m.end, m.start + 1) };
      // a link (Critical path page) may ask for a window, and for the path outlined in it
      const p = hashParams(), linked = linkedView(m, p);
      if (linked) s.view = linked;
      if (p.get("cp") === "1" && report.critical_path?.path) s.cp = pathMarks(report.critical_path.path, m);
      s.counters = [...m.devices.map((d) => ({ id: `util:${d}`, label: `GPU ${d} utilization`, unit: "share", max: 1 })),
        ...(m.tracks ?? []).map((t) => ({ id: t.id, label: t.label, unit: t.unit, max: t.max }))];
      // pinned by default: the counters and the GPU rows (streams, their annotations)
      for (const c of s.counters) s.pinned.add(`c:${c.id}`);
      for (const r of m.rows) if (r.kind === "stream" || r.kind === "annotations") s.pinned.add(`r:${r.id}`);
      performance.mark("stepscope:timeline-meta");
      setMeta(m);
    });
    return () => { alive = false; };
  }, [trace]);

  const plotW = () => Math.max(1, canvas.current!.clientWidth - GUTTER - SB);

  const layout = () => {
    const s = st.current, m = s.meta!, cv = canvas.current!, H = cv.clientHeight;
    const pinned: Lane[] = [], scroll: Lane[] = [];
    for (const c of s.counters) {
      const key = `c:${c.id}`;
      (s.pinned.has(key) ? pinned : scroll).push({ key, kind: "counter", pinned: s.pinned.has(key), y: 0, h: COUNTER_H, counter: c.id, label: c.label, levels: 1 });
    }
    let group = "";
    for (const r of m.rows) {
      const key = `r:${r.id}`, isPin = s.pinned.has(key);
      const levels = r.kind === "python" && !s.openPy.has(r.id) ? 1 : Math.max(1, r.depths);
      const label = r.kind === "python" ? `${s.openPy.has(r.id) ? "▾" : "▸"} ${r.label} (${r.depths} levels)` : r.label;
      const lane: Lane = { key, kind: "row", pinned: isPin, y: 0, h: levels * LANE_H + 4, row: r.id, label, levels };
      if (isPin) { pinned.push({ ...lane, label: `${r.group} · ${label}` }); continue; }
      if (r.group !== group) { group = r.group; scroll.push({ key: `g:${group}`, kind: "group", pinned: false, y: 0, h: GROUP_H, group, label: group, levels: 0 }); }
      if (s.collapsed.has(group)) continue;
      scroll.push(lane);
    }
    let y = RULER;
    for (const l of pinned) { l.y = y; y += l.h; }
    s.pinBottom = Math.min(y, RULER + Math.round((H - RULER) * 0.6));
    let total = 0;
    for (const l of scroll) { l.y = total; total += l.h; }
    const band = Math.max(0, H - s.pinBottom);
    s.scrollMax = Math.max(0, total - band);
    s.scrollY = Math.max(0, Math.min(s.scrollY, s.scrollMax));
    for (const l of scroll) l.y += s.pinBottom - s.scrollY;
    s.lanes = [...pinned, ...scroll];
    // the native scrollbar of the scrolled band
    if (bar.current && barInner.current) {
      bar.current.style.top = `${s.pinBottom}px`; bar.current.style.height = `${band}px`;
      barInner.current.style.height = `${total}px`;
      if (Math.abs(bar.current.scrollTop - s.scrollY) > 1) bar.current.scrollTop = s.scrollY;
    }
    // lane geometry for tests and tools: [kind, row/counter/group, y, height, pinned]
    cv.dataset.lanes = JSON.stringify(s.lanes.map((l) => [l.kind === "row" ? m.rows[l.row!].kind : l.kind, l.row ?? l.counter ?? l.group, Math.round(l.y), l.h, l.pinned ? 1 : 0]));
    cv.dataset.pinBottom = String(s.pinBottom); cv.dataset.scrollMax = String(s.scrollMax); cv.dataset.scrollY = String(Math.round(s.scrollY));
  };

  /** Screen y of (row, depth) and whether it is visible in its band; null when the row is folded away. */
  const rowY = (lane: Lane | undefined, depth: number): number | null => {
    if (!lane) return null;
    if (depth >= lane.levels) return null;
    return lane.y + 2 + depth * LANE_H;
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
    const { start, end } = s.view, span = end - start, pw = plotW(), right = GUTTER + pw;
    const X = (t: number) => GUTTER + ((t - start) / span) * pw;
    const rowLane = new Map<number, Lane>(), counterLane = new Map<string, Lane>();
    for (const l of s.lanes) { if (l.kind === "row") rowLane.set(l.row!, l); else if (l.kind === "counter") counterLane.set(l.counter!, l); }
    const c = s.chunk;
    let selBox: number[] | null = null, cpDrawn = 0, cpStrips = 0;
    // Two bands, each clipped: the scrolled one first, the pinned one over it.
    const bands: [boolean, number, number][] = [[false, s.pinBottom, H], [true, RULER, s.pinBottom]];
    for (const [pinned, top, bottom] of bands) {
      if (bottom <= top) continue;
      g.save(); g.beginPath(); g.rect(GUTTER, top, pw, bottom - top); g.clip();
      const visible = (l: Lane | undefined, y: number) => !!l && l.pinned === pinned && y + LANE_H > top && y < bottom;
      if (c) {
        const series = [...c.counters.map((k) => ({ id: `util:${k.device}`, values: k.values as (number | null)[] })), ...(c.tracks ?? [])];
        for (const k of series) {
          const lane = counterLane.get(k.id); if (!lane || lane.pinned !== pinned || lane.y > bottom || lane.y + lane.h < top) continue;
          const cm = s.counters.find((x) => x.id === k.id), mx = cm && cm.max > 0 ? cm.max : 1;
          const n = k.values.length, cs = c.start, ce = c.end;
          g.fillStyle = k.id.startsWith("util:") ? "#3a7bd5" : k.id.startsWith("mem:") ? "#9b59b6" : "#16a085";
          for (let i = 0; i < n; i++) {
            const v = k.values[i]; if (v == null || v <= 0) continue;
            const x0 = X(cs + (i * (ce - cs)) / n), x1 = X(cs + ((i + 1) * (ce - cs)) / n);
            const h = Math.min(1, v / mx) * (lane.h - 6);
            g.fillRect(x0, lane.y + lane.h - 3 - h, Math.max(1, x1 - x0), h);
          }
        }
        // aggregates: one pixel-wide box per (row, depth, pixel) of narrow events
        const a = c.aggregates;
        g.fillStyle = "#8a8f98";
        for (let i = 0; i < a.row.length; i++) {
          const lane = rowLane.get(a.row[i]), y = rowY(lane, a.depth[i]);
          if (y === null || !visible(lane, y)) continue;
          g.fillRect(X(a.ts[i]), y, Math.max(1, (a.dur / span) * pw), LANE_H - 1);
        }
        const e = c.events, sn = s.searchNames, cp = s.cpOn ? s.cp : null;
        g.font = "11px sans-serif"; g.textBaseline = "middle";
        for (let i = 0; i < e.id.length; i++) {
          const lane = rowLane.get(e.row[i]), y = rowY(lane, e.depth[i]);
          if (y === null || !visible(lane, y)) continue;
          const x0 = Math.max(GUTTER - 2, X(e.ts[i])), x1 = Math.min(right + 2, X(e.ts[i] + e.dur[i]));
          const w = Math.max(1, x1 - x0), name = c.names[e.name[i]] ?? "";
          const dim = sn !== null && !sn.has(e.name[i]) && e.id[i] !== s.selectedId;  // the selection is never dimmed
          // the critical path: its events outlined in their category's colour, the others faded
          const cat = cp ? onPath(cp, e.row[i], e.ts[i], e.dur[i], name) : null;
          g.globalAlpha = cp && cat === null && e.id[i] !== s.selectedId ? 0.3 : 1;
          g.fillStyle = dim ? "#e4e6ea" : color(name);
          g.fillRect(x0, y, w, LANE_H - 1);
          g.globalAlpha = 1;
          if (cat !== null) { g.strokeStyle = CP_COLORS[cat] ?? "#000"; g.lineWidth = 2; g.strokeRect(x0 + 1, y + 1, Math.max(1, w - 2), LANE_H - 3); cpDrawn++; }
          if (sn !== null && !dim) { g.strokeStyle = "#d4a000"; g.lineWidth = 2; g.strokeRect(x0, y, w, LANE_H - 1); }
          if (w > 40) { g.fillStyle = "#111"; g.fillText(fit(g, name, w - 4), x0 + 2, y + LANE_H / 2); }
          if (e.id[i] === s.selectedId) selBox = [x0, y, w, LANE_H - 1];
        }
      }
      // the path's segments as a strip under each row (drawn whatever the zoom: narrow
      // events are folded into grey boxes above)
      if (s.cpOn && s.cp) {
        for (const [row, mk] of s.cp.strips) {
          const lane = rowLane.get(row);
          if (!lane || lane.pinned !== pinned || lane.y + lane.h < top || lane.y > bottom) continue;
          for (let k = 0; k < mk.ts.length; k++) {
            const xa = X(mk.ts[k]), xb = X(mk.end[k]);
            if (xb < GUTTER || xa > right) continue;
            g.fillStyle = CP_COLORS[mk.cat[k]] ?? "#000";
            g.fillRect(xa, lane.y + lane.h - 4, Math.max(2, xb - xa), 4); cpStrips++;
          }
        }
      }
      g.restore();
    }
    cv.dataset.cpDrawn = String(cpDrawn); cv.dataset.cpStrips = String(cpStrips);
    if (selBox) {
      // the selection: a thick outline, drawn over both bands (it may sit at a band's edge)
      const [x, y, w, h] = selBox;
      g.save(); g.beginPath(); g.rect(GUTTER, RULER, pw, H - RULER); g.clip();
      g.strokeStyle = "#000"; g.lineWidth = 2; g.strokeRect(x - 1, y - 1, w + 2, h + 2);
      g.strokeStyle = "#ffd400"; g.lineWidth = 1; g.strokeRect(x - 2.5, y - 2.5, w + 5, h + 5);
      g.restore();
    }
    cv.dataset.selbox = selBox ? JSON.stringify(selBox.map(Math.round)) : "";
    // flow arrows launch -> kernel at their rows' real depths: all when few, else the selected event's
    if (c) {
      const f = c.flows, many = f.from.length > 60;
      g.save(); g.beginPath(); g.rect(GUTTER, RULER, pw, H - RULER); g.clip();
      g.strokeStyle = "rgba(200,40,40,0.8)"; g.fillStyle = "rgba(200,40,40,0.8)"; g.lineWidth = 1;
      let drawn = 0;
      const endY = (lane: Lane | undefined, depth: number) => {
        if (!lane) return null;
        const y = lane.y + 2 + Math.min(depth, lane.levels - 1) * LANE_H + LANE_H / 2;
        // a row scrolled out of its band: the arrow points to the band's edge
        return lane.pinned ? y : Math.max(s.pinBottom, Math.min(H, y));
      };
      for (let i = 0; i < f.from.length; i++) {
        const mine = f.from[i] === s.selectedId || f.to[i] === s.selectedId;
        const inView = f.from_ts[i] >= start && f.from_ts[i] <= end && f.to_ts[i] >= start && f.to_ts[i] <= end;
        if (!mine && (many || !inView)) continue;
        const ya = endY(rowLane.get(f.from_row[i]), f.from_depth[i]), yb = endY(rowLane.get(f.to_row[i]), f.to_depth[i]);
        if (ya === null || yb === null) continue;
        arrow(g, X(f.from_ts[i]), ya, X(f.to_ts[i]), yb); drawn++;
      }
      g.restore();
      cv.dataset.flowsDrawn = String(drawn);
    }
    // step boundaries
    g.save(); g.beginPath(); g.rect(GUTTER, RULER, pw, H - RULER); g.clip();
    g.strokeStyle = "rgba(0,120,0,0.6)"; g.setLineDash([4, 3]); g.lineWidth = 1;
    let lastLine = -1e9;
    for (const stp of m.steps) for (const t of [stp.start, stp.start + stp.dur]) {
      const x = X(t); if (x < GUTTER || x > right || x - lastLine < 4) continue;
      lastLine = x;
      g.beginPath(); g.moveTo(x, RULER); g.lineTo(x, H); g.stroke();
    }
    g.setLineDash([]);
    if (s.box) { g.fillStyle = "rgba(58,123,213,0.15)"; const [a, b] = s.box; g.fillRect(Math.min(a, b), RULER, Math.abs(b - a), H - RULER); }
    g.restore();
    // gutter: labels, group headers, pin marks; the pinned band over the scrolled one
    g.font = "11px sans-serif"; g.textBaseline = "middle";
    for (const pinned of [false, true]) {
      const top = pinned ? RULER : s.pinBottom, bottom = pinned ? s.pinBottom : H;
      g.save(); g.beginPath(); g.rect(0, top, W, bottom - top); g.clip();
      g.fillStyle = pinned ? "#eef3fb" : "#f4f5f7"; g.fillRect(0, top, GUTTER, bottom - top);
      for (const l of s.lanes) {
        if (l.pinned !== pinned || l.y > bottom || l.y + l.h < top) continue;
        if (l.kind === "group") {
          g.fillStyle = "#dde1e7"; g.fillRect(0, l.y, W, l.h);
          g.fillStyle = "#111"; g.fillText(`${s.collapsed.has(l.group!) ? "▸" : "▾"} ${l.group}`, 4, l.y + l.h / 2);
          continue;
        }
        let label = l.label;
        if (l.kind === "counter") { const cm = s.counters.find((x) => x.id === l.counter); if (cm && cm.unit !== "share") label += ` (max ${value(cm.max, cm.unit)})`; }
        // sticky: a tall row scrolled past the band's top keeps its label in view
        const ly = Math.max(l.y, Math.min(top, l.y + l.h - 16));
        g.fillStyle = "#333"; g.fillText(fit(g, label, PIN_X - 14), 10, ly + Math.min(l.h, 16) / 2 + 1);
        // pin mark: filled when pinned; click toggles
        g.beginPath(); g.arc(PIN_X + 5, ly + 8, 4, 0, Math.PI * 2);
        if (l.pinned) { g.fillStyle = "#3a7bd5"; g.fill(); } else { g.strokeStyle = "#9aa3b2"; g.lineWidth = 1; g.stroke(); }
        g.strokeStyle = "#eceef1"; g.beginPath(); g.moveTo(0, l.y + l.h); g.lineTo(right, l.y + l.h); g.stroke();
      }
      g.restore();
    }
    if (s.pinBottom > RULER) { g.fillStyle = "#9aa3b2"; g.fillRect(0, s.pinBottom - 1, W, 2); }
    // the scrolled band's scrollbar, also painted (headless browsers hide native scrollbars;
    // the native one, over it, has the same geometry)
    const band = H - s.pinBottom, total = band + s.scrollMax;
    g.fillStyle = "#eef0f3"; g.fillRect(W - SB, s.pinBottom + 1, SB, band - 1);
    if (s.scrollMax > 0) {
      const th = Math.max(20, (band * band) / total), ty = s.pinBottom + (s.scrollY / s.scrollMax) * (band - th);
      g.fillStyle = "#8a93a3"; g.fillRect(W - SB + 3, ty + 2, SB - 6, th - 4);
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
      if (x < GUTTER || x >= right || x < lastLabel) continue;
      g.fillText(label, x + 2, RULER - 5); lastLabel = x + g.measureText(label).width + 8;
    }
    const ms = performance.now() - t0;
    const w = window as any; (w.__stepscopeFrames ??= []).push(ms);
    if (c && !s.firstDrawn) { s.firstDrawn = true; performance.mark("stepscope:timeline-first-render"); cv.dataset.ready = "1"; }
  };

  const fetchChunk = () => {
    const s = st.current, cv = canvas.current; if (!cv || !s.meta) return;
    const id = ++s.pending, v = { ...s.view };
    source.timeline(trace, v.start, v.end, plotW()).then((c) => {
      if (id !== s.pending) return;
      s.chunk = c; cv.dataset.events = String(c.events.id.length); cv.dataset.aggregates = String(c.aggregates.row.length);
      cv.dataset.flows = String(c.flows.from.length); cv.dataset.chunk = String(id);
      cv.dataset.chunkStart = String(Math.round(c.start)); cv.dataset.chunkEnd = String(Math.round(c.end));
      requestAnimationFrame(draw);
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
    clearTimeout(s.timer); s.timer = setTimeout(fetchChunk, 40);
  };
  const scrollBy = (dy: number) => { const s = st.current; s.scrollY = Math.max(0, Math.min(s.scrollMax, s.scrollY + dy)); draw(); };
  const zoomAt = (x: number, factor: number) => {
    const { start, end } = st.current.view;
    const t = start + ((x - GUTTER) / plotW()) * (end - start);
    setView({ start: t - (t - start) * factor, end: t + (end - t) * factor });
  };
  const laneAt = (y: number) => {
    const s = st.current, pinned = y < s.pinBottom;
    return s.lanes.find((l) => l.pinned === pinned && y >= l.y && y < l.y + l.h);
  };
  const pick = (x: number, y: number): number => {
    const s = st.current, c = s.chunk; if (!c) return -1;
    const { start, end } = s.view, pw = plotW();
    const t = start + ((x - GUTTER) / pw) * (end - start), tol = (3 / pw) * (end - start);
    const lane = laneAt(y); if (!lane || lane.kind !== "row") return -1;
    const depth = Math.floor((y - lane.y - 2) / LANE_H), e = c.events;
    if (depth >= lane.levels) return -1;
    let best = -1, bestDur = Infinity;
    for (let i = 0; i < e.id.length; i++) {
      if (e.row[i] !== lane.row || e.depth[i] !== depth) continue;
      if (t >= e.ts[i] - tol && t <= e.ts[i] + e.dur[i] + tol && e.dur[i] < bestDur) { best = e.id[i]; bestDur = e.dur[i]; }
    }
    return best;
  };
  const select = (id: number) => {
    st.current.selectedId = id; canvas.current!.dataset.selected = String(id);
    if (id < 0) { setSelected(null); draw(); return; }
    source.event(trace, id).then((ev) => { if (st.current.selectedId === id) { setSelected(ev); draw(); } });
  };
  /** Bring an event on screen, drawn one by one (wide enough not to fold), its row unfolded
   * and scrolled into the band, and select it. */
  const goTo = (b: Brief) => {
    const s = st.current, m = s.meta!, r = m.rows[b.row];
    if (!r) return;
    s.collapsed.delete(r.group);
    if (r.kind === "python" && b.depth > 0) s.openPy.add(r.id);
    const cur = s.view.end - s.view.start, pw = plotW();
    // at least 1.5x the event (context), at most 40x (so it is >= pw/40 px wide, never folded)
    const span = Math.max(2000, Math.min(Math.max(cur, b.dur * 1.5), b.dur * Math.min(40, pw / 2)));
    const mid = b.ts + b.dur / 2;
    layout();
    const lane = s.lanes.find((l) => l.kind === "row" && l.row === b.row);
    if (lane && !lane.pinned) {
      const H = canvas.current!.clientHeight, y = lane.y + 2 + b.depth * LANE_H;
      const band = H - s.pinBottom;
      if (y < s.pinBottom + 10 || y + LANE_H > H - 10) s.scrollY = Math.max(0, Math.min(s.scrollMax, s.scrollY + (y - s.pinBottom) - band / 2));
    }
    st.current.selectedId = b.id; canvas.current!.dataset.selected = String(b.id);
    setView({ start: mid - span / 2, end: mid + span / 2 });
    select(b.id);
  };

  useEffect(() => {
    const cv = canvas.current; if (!cv || !meta) return;
    const s = st.current;
    setView(s.view);
    const rel = (e: MouseEvent) => { const r = cv.getBoundingClientRect(); return [e.clientX - r.left, e.clientY - r.top]; };
    // Perfetto's conventions: wheel scrolls the tracks, Ctrl/⌘+wheel zooms at the cursor,
    // shift+wheel or a horizontal wheel pans.
    const onWheel = (e: WheelEvent) => {
      e.preventDefault();
      const [x] = rel(e), unit = e.deltaMode === 1 ? 16 : e.deltaMode === 2 ? cv.clientHeight : 1;
      const dx = e.deltaX * unit, dy = e.deltaY * unit;
      if (e.ctrlKey || e.metaKey) zoomAt(Math.max(GUTTER, x), Math.exp(dy * 0.002));
      else if (e.shiftKey || Math.abs(dx) > Math.abs(dy)) {
        const d = (e.shiftKey && !dx ? dy : dx) / plotW() * (s.view.end - s.view.start);
        setView({ start: s.view.start + d, end: s.view.end + d });
      } else scrollBy(dy);
    };
    const onDown = (e: MouseEvent) => { const [x, y] = rel(e); if (x > GUTTER + plotW()) return; s.drag = { x, y, view: { ...s.view }, box: e.shiftKey, moved: false, sy: s.scrollY }; };
    const onMove = (e: MouseEvent) => {
      const d = s.drag;
      if (!d) { hover(e); return; }
      const [x, y] = rel(e);
      if (Math.abs(x - d.x) > 3 || Math.abs(y - d.y) > 3) d.moved = true;
      if (d.box) { s.box = [Math.max(GUTTER, d.x), Math.max(GUTTER, x)]; draw(); return; }
      const dt = ((x - d.x) / plotW()) * (d.view.end - d.view.start);
      if (d.y >= s.pinBottom) s.scrollY = Math.max(0, Math.min(s.scrollMax, d.sy - (y - d.y)));
      setView({ start: d.view.start - dt, end: d.view.end - dt });
    };
    // Tooltip: the event under the cursor, or the count of a folded (sub-pixel) box.
    const hover = (e: MouseEvent) => {
      const t = tip.current; if (!t) return;
      const [x, y] = rel(e);
      if (x < GUTTER || y < RULER || x > GUTTER + plotW() || y > cv.clientHeight || !s.chunk) { t.style.display = "none"; return; }
      const id = pick(x, y);
      let text = "";
      if (id >= 0) {
        const e2 = s.chunk.events, i = e2.id.indexOf(id);
        text = `${s.chunk.names[e2.name[i]] ?? ""} · ${dur(e2.dur[i])}`;
      } else {
        const lane = laneAt(y);
        if (lane && lane.kind === "row") {
          const a = s.chunk.aggregates, depth = Math.floor((y - lane.y - 2) / LANE_H), pw = plotW();
          const t0 = s.view.start + ((x - GUTTER) / pw) * (s.view.end - s.view.start);
          const tol = (2 / pw) * (s.view.end - s.view.start);
          for (let i = 0; i < a.row.length; i++) {
            if (a.row[i] === lane.row && a.depth[i] === depth && t0 >= a.ts[i] - tol && t0 <= a.ts[i] + a.dur + tol) {
              text = `${num(a.count[i])} short events folded (${dur(a.busy[i])} busy) — zoom in`; break;
            }
          }
        } else if (lane && lane.kind === "counter") {
          const c = s.chunk, k = [...c.counters.map((q) => ({ id: `util:${q.device}`, values: q.values as (number | null)[] })), ...(c.tracks ?? [])].find((q) => q.id === lane.counter);
          const cm = s.counters.find((q) => q.id === lane.counter);
          if (k && cm) {
            const tt = s.view.start + ((x - GUTTER) / plotW()) * (s.view.end - s.view.start);
            const i = Math.floor(((tt - c.start) / (c.end - c.start)) * k.values.length), v = k.values[i];
            if (v != null) text = `${cm.label}: ${value(v, cm.unit)} (the largest value in this bin)`;
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
        const { start, end } = s.view, T = (px: number) => start + ((px - GUTTER) / plotW()) * (end - start);
        const [a, b] = s.box; s.box = null; setView({ start: T(Math.min(a, b)), end: T(Math.max(a, b)) }); return;
      }
      s.box = null;
      if (d.moved) return;
      if (x < GUTTER) {
        const lane = laneAt(y); if (!lane) return;
        if (lane.kind === "group") { const gname = lane.group!; s.collapsed.has(gname) ? s.collapsed.delete(gname) : s.collapsed.add(gname); }
        else if (x >= PIN_X) { s.pinned.has(lane.key) ? s.pinned.delete(lane.key) : s.pinned.add(lane.key); }
        else if (lane.kind === "row" && s.meta!.rows[lane.row!].kind === "python") { const r = lane.row!; s.openPy.has(r) ? s.openPy.delete(r) : s.openPy.add(r); }
        draw(); return;
      }
      select(pick(x, y));
    };
    const onKey = (e: KeyboardEvent) => {
      const tag = (e.target as HTMLElement).tagName;
      if (tag === "INPUT" || tag === "SELECT" || tag === "TEXTAREA" || e.ctrlKey || e.metaKey || e.altKey) return;
      const span = s.view.end - s.view.start, mid = GUTTER + plotW() / 2, k = e.key.toLowerCase();
      if (k === "w") zoomAt(mid, 0.7); else if (k === "s") zoomAt(mid, 1 / 0.7);
      else if (k === "a") setView({ start: s.view.start - span * 0.2, end: s.view.end - span * 0.2 });
      else if (k === "d") setView({ start: s.view.start + span * 0.2, end: s.view.end + span * 0.2 });
      else if (k === "0") setView({ start: s.meta!.start, end: s.meta!.end });
      else if (e.key === "ArrowDown") { e.preventDefault(); scrollBy(40); } else if (e.key === "ArrowUp") { e.preventDefault(); scrollBy(-40); }
      else if (e.key === "PageDown") { e.preventDefault(); scrollBy(cv.clientHeight - s.pinBottom - 20); } else if (e.key === "PageUp") { e.preventDefault(); scrollBy(-(cv.clientHeight - s.pinBottom - 20)); }
    };
    const onScroll = () => { const b = bar.current; if (b && Math.abs(b.scrollTop - s.scrollY) > 1) { s.scrollY = b.scrollTop; draw(); } };
    const onResize = () => { draw(); fetchChunk(); };
    cv.addEventListener("wheel", onWheel, { passive: false });
    cv.addEventListener("mousedown", onDown); cv.addEventListener("mouseleave", onLeave); window.addEventListener("mousemove", onMove); window.addEventListener("mouseup", onUp);
    window.addEventListener("keydown", onKey); window.addEventListener("resize", onResize);
    bar.current?.addEventListener("scroll", onScroll);
    return () => {
      cv.removeEventListener("wheel", onWheel); cv.removeEventListener("mousedown", onDown); cv.removeEventListener("mouseleave", onLeave);
      window.removeEventListener("mousemove", onMove); window.removeEventListener("mouseup", onUp);
      window.removeEventListener("keydown", onKey); window.removeEventListener("resize", onResize);
      bar.current?.removeEventListener("scroll", onScroll);
    };
  }, [meta]);

  const runSearch = (text: string) => {
    const s = st.current;
    setSearch(text); clearTimeout(s.searchTimer);
    if (!text) { s.searchNames = null; setHits(null); setHitIdx(-1); draw(); return; }
    const seq = ++s.searchSeq;
    s.searchTimer = setTimeout(() => source.search(trace, text).then((r) => {
      if (seq !== s.searchSeq) return;
      s.searchNames = new Set(r.names);
      const h = r.hits, list: Hit[] = [];
      if (h) for (let i = 0; i < h.id.length; i++) list.push({ id: h.id[i], row: h.row[i], depth: h.depth[i], ts: h.ts[i], dur: h.dur[i], name: r.strings?.[h.name[i]] ?? "" });
      setHits({ count: r.count, list }); setHitIdx(-1); draw();
    }), 150);
  };
  const step = (d: number) => {
    if (!hits || !hits.list.length) return;
    const n = hits.list.length, i = hitIdx < 0 ? (d > 0 ? 0 : n - 1) : (hitIdx + d + n) % n;
    setHitIdx(i); goTo(hits.list[i]);
    document.getElementById(`hit-${i}`)?.scrollIntoView({ block: "nearest" });
  };

  if (!meta) return <div class="page" id="page-timeline"><p>Loading timeline…</p></div>;
  const kept = meta.cap === undefined ? null : meta.kept! < meta.events
    ? <span class="dim" id="timeline-cap">· this report keeps the {num(meta.kept)} longest of {num(meta.events)} events (cap {meta.cap}); <code>stepscope view</code> shows all of them</span>
    : <span class="dim" id="timeline-cap">· all {num(meta.events)} events (this report keeps at most {num(meta.cap)})</span>;
  const mid = () => GUTTER + plotW() / 2;
  return (
    <div class="page" id="page-timeline">
      <div class="toolbar">
        <input class="search" id="timeline-search" placeholder="search events…" aria-label="search events by name" value={search}
          onInput={(e) => runSearch((e.target as HTMLInputElement).value)}
          onKeyDown={(e) => { if (e.key === "Enter") { e.preventDefault(); step(e.shiftKey ? -1 : 1); } }} />
        {hits !== null && <span id="search-hits">{hits.count} matches</span>}
        {hits !== null && hits.list.length > 0 && <>
          <button id="search-prev" title="previous match (shift+Enter)" onClick={() => step(-1)}>‹ prev</button>
          <button id="search-next" title="next match (Enter)" onClick={() => step(1)}>next ›</button>
          <span id="search-pos" class="dim">{hitIdx >= 0 ? `${num(hitIdx + 1)} of ${num(hits.list.length)}` : `${num(hits.list.length)} listed`}</span>
        </>}
        <button id="zoom-in" onClick={() => zoomAt(mid(), 0.5)}>zoom in</button>
        <button id="zoom-out" onClick={() => zoomAt(mid(), 2)}>zoom out</button>
        <button id="zoom-reset" onClick={() => setView({ start: meta.start, end: meta.end })}>reset</button>
        <button id="export" onClick={() => source.exportWindow(trace, st.current.view.start, st.current.view.end)}>export window (Chrome trace)</button>
        {kept}
      </div>
      <p class="dim timeline-hint" id="timeline-hint">{num(meta.events)} events · wheel: scroll tracks · Ctrl/⌘+wheel: zoom · shift+wheel or drag: pan ·
        shift+drag: box zoom · W/S zoom, A/D pan, 0 reset, ↑/↓ PgUp/PgDn scroll · click a group to fold it, ▸ to open Python frames, ● to pin a track</p>
      {meta.notes?.map((n) => <p class="note" key={n}>{n}</p>)}
      {st.current.cp && <p class="note" id="timeline-cp" data-events={st.current.cp.events} data-placed={st.current.cp.placed} data-total={st.current.cp.total} data-bands={st.current.cp.bands}>
        Critical path of {st.current.cp.window}: {st.current.cp.total > st.current.cp.events
          ? <>the {num(st.current.cp.events)} events with the most path time outlined in their category's colour; all {num(st.current.cp.total)} as strips under their rows at any zoom (merged where they touch)</>
          : <>its {num(st.current.cp.events)} events outlined in their category's colour, and as strips under their rows at any zoom</>}; the rest faded.{" "}
        <button id="cp-toggle" onClick={() => { st.current.cpOn = !cpOn; setCpOn(!cpOn); draw(); }}>{cpOn ? "hide the path" : "show the path"}</button></p>}
      {hits !== null && hits.list.length > 0 && <ol class="search-results" id="search-results">
        {hits.list.map((h, i) => <li key={h.id} id={`hit-${i}`} class={i === hitIdx ? "active" : ""}>
          <button onClick={() => { setHitIdx(i); goTo(h); }}>{dur(h.ts)} · {h.name} · {dur(h.dur)} · {meta.rows[h.row]?.label}</button></li>)}
      </ol>}
      <div class="timeline-wrap">
        <canvas ref={canvas} id="timeline-canvas" class="timeline" />
        <div ref={bar} class="tl-vscroll" id="timeline-scrollbar" aria-label="scroll tracks"><div ref={barInner} /></div>
        <div ref={tip} class="tip" id="timeline-tip" />
      </div>
      <div class="details" id="event-details">
        {selected ? <EventPanel ev={selected} meta={meta} config={config} onGo={goTo} /> : <p class="dim">Click an event to see its details.</p>}
      </div>
    </div>
  );
}

/** A counter value in its unit: bytes in binary units, % and W as numbers. */
export function value(v: number, unit: string): string {
  if (unit === "B" || unit === "B/s") return bytes(v) + (unit === "B/s" ? "/s" : "");
  if (unit === "share") return `${(v * 100).toFixed(1)} %`;
  if (unit === "%") return `${v.toFixed(1)} %`;
  return `${num(v, 2)} ${unit}`;
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
