// Two data sources behind one interface: the dashboard's JSON API and the data inlined in the
// single-file HTML report (no network at all there).
import type { Chunk, Config, EventInfo, Progress, RunTree, SearchResult, TimelineMeta, Dict } from "./types";

export interface Source {
  mode: "server" | "static";
  config(): Promise<Config>;
  runs(): Promise<RunTree>;
  /** The report JSON; resolves to a Progress while the trace loads (the page polls). */
  report(trace: string): Promise<Dict | Progress>;
  timelineMeta(trace: string): Promise<TimelineMeta>;
  timeline(trace: string, start: number, end: number, width: number): Promise<Chunk>;
  event(trace: string, id: number): Promise<EventInfo>;
  search(trace: string, q: string): Promise<SearchResult>;
  exportWindow(trace: string, start: number, end: number): void;
  /** `stepscope diff` JSON of two traces of the logdir (server only); status 202 while they load. */
  diff?(base: string, next: string): Promise<{ status: number; body: any }>;
  /** The Query page: SQL over the trace's tables (docs/sql.md; server only); 400 with
   * `{error}` for a bad query. */
  sql?(trace: string, query: string): Promise<{ status: number; body: any }>;
}

async function getJson(url: string): Promise<{ status: number; body: any }> {
  const r = await fetch(url);
  return { status: r.status, body: await r.json() };
}
const q = encodeURIComponent;

export class ServerSource implements Source {
  mode = "server" as const;
  async config() { return (await getJson("api/config")).body as Config; }
  async runs() { return (await getJson("api/runs")).body as RunTree; }
  async report(trace: string) {
    const r = await getJson(`api/report?trace=${q(trace)}`);
    if (r.status === 202 || r.status === 422) return r.body as Progress;
    if (r.status !== 200) throw new Error(r.body?.error ?? `HTTP ${r.status}`);
    return r.body as Dict;
  }
  async timelineMeta(trace: string) {
    return (await getJson(`api/timeline/meta?trace=${q(trace)}`)).body as TimelineMeta;
  }
  async timeline(trace: string, start: number, end: number, width: number) {
    const s = Math.floor(start), e = Math.max(Math.ceil(end), s + 1);
    return (await getJson(`api/timeline?trace=${q(trace)}&start=${s}&end=${e}&width=${Math.round(width)}`)).body as Chunk;
  }
  async event(trace: string, id: number) { return (await getJson(`api/event?trace=${q(trace)}&id=${id}`)).body as EventInfo; }
  async search(trace: string, text: string) { return (await getJson(`api/search?trace=${q(trace)}&q=${q(text)}`)).body as SearchResult; }
  async diff(base: string, next: string) { return getJson(`api/diff?base=${q(base)}&new=${q(next)}`); }
  async sql(trace: string, query: string) { return getJson(`api/sql?trace=${q(trace)}&q=${q(query)}`); }
  exportWindow(trace: string, start: number, end: number) {
    const a = document.createElement("a");
    a.href = `api/export?trace=${q(trace)}&start=${Math.floor(start)}&end=${Math.ceil(end)}`;
    a.download = "stepscope-window.json";
    a.click();
  }
}

/** What `report/html.py` inlines: a report (trace or TensorRT; a diff document for
 * `stepscope diff --html`), and for traces a bounded timeline. */
interface Embedded {
  report: Dict; config: Config; trace: string;
  timeline?: TimelineMeta & {
    columns: { row: number[]; depth: number[]; ts: number[]; dur: number[]; name: number[]; table: number[] };
    strings: string[]; flows: { from: number[]; to: number[] }; counters: { device: number; label: string; values: number[] }[];
    /** counter tracks (memory) over the whole trace, resampled per window like `counters` */
    track_values?: { id: string; label: string; unit: string; values: (number | null)[] }[];
  };
}

const TABLES = ["host", "runtime", "device", "gpu_annotations"];

/** Level of detail computed in the page over the bounded event set the report carries. */
export class StaticSource implements Source {
  mode = "static" as const;
  private partner = new Map<number, number>();
  private rowIndex: number[][] = [];
  private d: Embedded & { timeline: NonNullable<Embedded["timeline"]> };
  constructor(d: Embedded) {
    // A page without a timeline (TensorRT, diff) gets an empty one: its Timeline page is hidden.
    const empty = { origin_ns: 0, start: 0, end: 0, events: 0, rows: [], devices: [], steps: [],
      columns: { row: [], depth: [], ts: [], dur: [], name: [], table: [] }, strings: [], flows: { from: [], to: [] }, counters: [] };
    this.d = { ...d, timeline: d.timeline ?? empty };
    const f = this.d.timeline.flows;
    for (let i = 0; i < f.from.length; i++) { this.partner.set(f.from[i], f.to[i]); this.partner.set(f.to[i], f.from[i]); }
    const c = this.d.timeline.columns;
    for (const r of this.d.timeline.rows) this.rowIndex[r.id] = [];
    for (let i = 0; i < c.ts.length; i++) this.rowIndex[c.row[i]].push(i);
  }
  async config() { return this.d.config; }
  async runs(): Promise<RunTree> {
    return { root: "", runs: [{ run: "report", workers: [{ worker: this.d.trace, spans: [{ span: "", trace: this.d.trace, size: 0 }] }] }] };
  }
  async report() { return this.d.report; }
  async timelineMeta() { return this.d.timeline; }
  async timeline(_t: string, start: number, end: number, width: number): Promise<Chunk> {
    const c = this.d.timeline.columns, names = this.d.timeline.strings;
    const nsPx = (end - start) / width;
    const ev: Chunk["events"] = { id: [], row: [], depth: [], ts: [], dur: [], name: [] };
    const agg = new Map<number, [number, number, number, number]>();
    const used: Record<string, string> = {};
    for (let i = 0; i < c.ts.length; i++) {
      const ts = c.ts[i], dur = c.dur[i];
      if (ts >= end || ts + dur <= start) continue;
      if (dur >= nsPx) {
        ev.id.push(i); ev.row.push(c.row[i]); ev.depth.push(c.depth[i]); ev.ts.push(ts); ev.dur.push(dur); ev.name.push(c.name[i]);
        used[c.name[i]] = names[c.name[i]];
      } else {
        const px = Math.min(width - 1, Math.max(0, Math.floor((ts - start) / nsPx)));
        const key = (c.row[i] * 65536 + c.depth[i]) * (width + 1) + px;
        const a = agg.get(key);
        if (a) { a[2] += 1; a[3] += dur; } else agg.set(key, [c.row[i], c.depth[i], 1, dur]);
      }
    }
    const ag: Chunk["aggregates"] = { row: [], depth: [], ts: [], dur: Math.max(1, Math.round(nsPx)), count: [], busy: [] };
    for (const [key, a] of agg) {
      ag.row.push(a[0]); ag.depth.push(a[1]); ag.count.push(a[2]); ag.busy.push(a[3]);
      ag.ts.push(Math.round(start + (key % (width + 1)) * nsPx));
    }
    const fl: Chunk["flows"] = { from: [], to: [], from_row: [], from_depth: [], from_ts: [], to_row: [], to_depth: [], to_ts: [] };
    const seen = new Set<number>();
    for (const id of ev.id) {
      const other = this.partner.get(id);
      if (other === undefined) continue;
      const [from, to] = c.table[id] === 2 ? [other, id] : [id, other];
      if (seen.has(to)) continue;
      seen.add(to);
      fl.from.push(from); fl.to.push(to);
      fl.from_row.push(c.row[from]); fl.from_depth.push(c.depth[from]); fl.from_ts.push(c.ts[from]);
      fl.to_row.push(c.row[to]); fl.to_depth.push(c.depth[to]); fl.to_ts.push(c.ts[to]);
    }
    const bins = Math.max(1, Math.floor(width / 2));
    return { start, end, width, events: ev, names: used, aggregates: ag, flows: fl, counters: this.counters(start, end, bins),
      tracks: (this.d.timeline.track_values ?? []).map((k) => ({ ...k, values: this.resample(k.values, start, end, bins) })) };
  }
  private counters(start: number, end: number, bins: number) {
    return this.d.timeline.counters.map((k) => ({ device: k.device, label: k.label, values: this.resample(k.values, start, end, bins) as number[] }));
  }
  /** Resample a full-span series (the report's) onto the window. */
  private resample<T>(values: T[], start: number, end: number, bins: number): T[] {
    const t = this.d.timeline, span = Math.max(1, t.end - t.start), n = values.length, out: T[] = [];
    for (let b = 0; b < bins; b++) {
      const mid = start + ((b + 0.5) * (end - start)) / bins;
      out.push(values[Math.min(n - 1, Math.max(0, Math.floor(((mid - t.start) / span) * n)))]);
    }
    return out;
  }
  async event(_t: string, id: number): Promise<EventInfo> {
    const c = this.d.timeline.columns, s = this.d.timeline.strings;
    const p = this.partner.get(id);
    return {
      id, table: TABLES[c.table[id]], name: s[c.name[id]], row: c.row[id], depth: c.depth[id], ts: c.ts[id], dur: c.dur[id],
      args: {},
      flow: p === undefined ? null : { id: p, name: s[c.name[p]], row: c.row[p], ts: c.ts[p], dur: c.dur[p] },
    };
  }
  async search(_t: string, text: string): Promise<SearchResult> {
    const needle = text.toLowerCase(), s = this.d.timeline.strings, ids: number[] = [];
    s.forEach((x, i) => { if (x.toLowerCase().includes(needle)) ids.push(i); });
    const set = new Set(ids), c = this.d.timeline.columns;
    let count = 0;
    const all: number[] = [];
    for (let i = 0; i < c.name.length; i++) if (set.has(c.name[i])) { count++; all.push(i); }
    all.sort((a, b) => c.ts[a] - c.ts[b]);
    const first = all.slice(0, 1000), strings: Record<string, string> = {};
    for (const i of first) strings[c.name[i]] = s[c.name[i]];
    const hits = { id: first, row: first.map((i) => c.row[i]), depth: first.map((i) => c.depth[i]), ts: first.map((i) => c.ts[i]),
      dur: first.map((i) => c.dur[i]), name: first.map((i) => c.name[i]) };
    return { names: ids, count, first, hits, strings };
  }
  exportWindow(_t: string, start: number, end: number) {
    const c = this.d.timeline.columns, s = this.d.timeline.strings, rows = this.d.timeline.rows;
    const events: Dict[] = [];
    for (let i = 0; i < c.ts.length; i++) {
      if (c.ts[i] >= end || c.ts[i] + c.dur[i] <= start) continue;
      events.push({ ph: "X", name: s[c.name[i]], cat: TABLES[c.table[i]], pid: rows[c.row[i]].group, tid: rows[c.row[i]].label,
        ts: (c.ts[i] + this.d.timeline.origin_ns) / 1000, dur: c.dur[i] / 1000 });
    }
    const blob = new Blob([JSON.stringify({ traceEvents: events })], { type: "application/json" });
    const a = document.createElement("a");
    a.href = URL.createObjectURL(blob);
    a.download = "stepscope-window.json";
    a.click();
  }
}

export function makeSource(): Source {
  const el = document.getElementById("stepscope-data");
  if (el && el.textContent) return new StaticSource(JSON.parse(el.textContent) as Embedded);
  return new ServerSource();
}
