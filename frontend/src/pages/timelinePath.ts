// The critical path on the timeline (opened from the Critical path page with `cp=1`): the
// report's path events placed on the timeline's rows, and the view a link asks for.
import type { Dict, TimelineMeta } from "../types";

/** Path events of one row, by start (ns from the timeline's origin). */
export interface RowMarks { ts: number[]; end: number[]; name: string[]; cat: string[]; }
/** Path time under one row: every path event, as the report's bands (merged where they touch)
 * when the path has more events than the report names, and the named events. */
export interface RowStrips { ts: number[]; end: number[]; cat: string[]; }
export interface PathMarks {
  window: string; events: number; placed: number; total: number; bands: number;
  byRow: Map<number, RowMarks>; strips: Map<number, RowStrips>;
}

// Trace timestamps are ~1.7e18 ns: a double keeps them to 256 ns, the report rounds to 1 ns.
const TOL_NS = 1500;

/** Query parameters of the page's hash (`#/timeline?trace=…&start_us=…&end_us=…&cp=1`). */
export function hashParams(): URLSearchParams {
  const q = location.hash.indexOf("?");
  return new URLSearchParams(q < 0 ? "" : location.hash.slice(q + 1));
}

/** The view (ns from the origin) that `start_us`/`end_us` (trace µs) ask for, with 2 % margins. */
export function linkedView(meta: TimelineMeta, p: URLSearchParams): { start: number; end: number } | null {
  const a = Number(p.get("start_us")), b = Number(p.get("end_us"));
  if (!p.has("start_us") || !p.has("end_us") || !Number.isFinite(a) || !Number.isFinite(b) || b <= a) return null;
  const o = meta.origin_ns / 1000, s = (a - o) * 1000, e = (b - o) * 1000, m = (e - s) * 0.02;
  return { start: s - m, end: e + m };
}

/** Place each path event on its row: a host event on "Thread <tid>", a device op on
 * "Stream <n>" (every GPU's stream of that number: the report does not name the device). */
export function pathMarks(path: Dict, meta: TimelineMeta): PathMarks {
  const o = meta.origin_ns / 1000, byRow = new Map<number, RowMarks>();
  const rowsOf = new Map<string, number[]>();
  for (const r of meta.rows) {
    if (r.kind !== "thread" && r.kind !== "stream") continue;
    (rowsOf.get(r.label) ?? rowsOf.set(r.label, []).get(r.label)!).push(r.id);
  }
  const strips = new Map<number, RowStrips>();
  const strip = (rows: number[], ts: number, end: number, cat: string) => {
    for (const r of rows) {
      const m = strips.get(r) ?? strips.set(r, { ts: [], end: [], cat: [] }).get(r)!;
      m.ts.push(ts); m.end.push(end); m.cat.push(cat);
    }
  };
  let placed = 0, bands = 0;
  const events = [...(path.events as Dict[])].sort((x, y) => x.ts_us - y.ts_us);
  for (const e of events) {
    const rows = rowsOf.get(e.stream != null ? `Stream ${e.stream}` : `Thread ${e.thread}`) ?? [];
    if (rows.length) placed++;
    const ts = (e.ts_us - o) * 1000, end = ts + e.dur_us * 1000;
    for (const r of rows) {
      const m = byRow.get(r) ?? byRow.set(r, { ts: [], end: [], name: [], cat: [] }).get(r)!;
      m.ts.push(ts); m.end.push(end); m.name.push(e.name); m.cat.push(e.category);
    }
    strip(rows, ts, end, e.category);
  }
  // the events the report does not name (it keeps 500) are in its bands: lanes "thread T" /
  // "stream S", times in µs from the window's start
  const b = path.bands as Dict | null;
  const total: number = b?.events ?? events.length;
  if (b && total > events.length) {
    for (let i = 0; i < b.lane.length; i++) {
      const lane = b.lanes[b.lane[i]] as string;
      const rows = rowsOf.get(lane.charAt(0).toUpperCase() + lane.slice(1)) ?? [];
      if (rows.length) bands++;
      const ts = (path.start_us + b.start_us[i] - o) * 1000;
      strip(rows, ts, ts + b.dur_us[i] * 1000, b.categories[b.cat[i]]);
    }
  }
  return { window: path.window, events: events.length, placed, total, bands, byRow, strips };
}

/** The category of the path event drawn as (row, ts, dur, name), or null when it is not on the path. */
export function onPath(p: PathMarks, row: number, ts: number, dur: number, name: string): string | null {
  const m = p.byRow.get(row);
  if (!m) return null;
  let lo = 0, hi = m.ts.length;
  while (lo < hi) { const mid = (lo + hi) >> 1; if (m.ts[mid] < ts - TOL_NS) lo = mid + 1; else hi = mid; }
  for (let i = lo; i < m.ts.length && m.ts[i] <= ts + TOL_NS; i++) {
    if (m.name[i] === name && Math.abs(m.end[i] - m.ts[i] - dur) <= TOL_NS) return m.cat[i];
  }
  return null;
}
