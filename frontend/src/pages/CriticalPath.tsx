import { useMemo } from "preact/hooks";
import type { PageProps } from "../pageProps";
import { Table, timeCol, type Column } from "../table";
import { num, pct, timeText, timeUnit } from "../format";
import type { Dict } from "../types";
import { CP_CATEGORIES, CP_COLORS } from "../pathCategories";
import "./criticalPath.css";
import { breakable } from "../names";

type Row = Dict;

/** Link to the timeline zoomed to [startUs, endUs] (trace µs); `cp` also outlines the path there. */
export const timelineHref = (trace: string, startUs: number, endUs: number, cp: boolean) =>
  `#/timeline?trace=${encodeURIComponent(trace)}&start_us=${startUs}&end_us=${endUs}${cp ? "&cp=1" : ""}`;

const TOP_COLS: Column<Row>[] = [
  { key: "name", label: "event", value: (r) => r.name, render: (r) => <span class="kname" title={r.name}>{breakable(r.name)}</span> },
  { key: "kind", label: "kind", value: (r) => r.kind },
  { key: "category", label: "category", value: (r) => r.category, render: (r) => <Cat c={r.category} /> },
  timeCol("on_path_us", "on path per window"),
  { key: "occurrences", label: "occurrences", num: true, value: (r) => r.occurrences, render: (r) => num(r.occurrences) },
];

const Cat = ({ c }: { c: string }) => <span class="cp-cat"><i class="swatch" style={{ background: CP_COLORS[c] ?? "#999" }} />{c}</span>;

/** The report's `critical_path`: length against the window, what bounds it, per window, the
 * events with the most path time, and the median window's path as lanes. */
export function CriticalPath({ report, trace }: PageProps) {
  const cp = report.critical_path as Dict, path = cp.path as Dict;
  const winCols = useMemo<Column<Row>[]>(() => [
    { key: "window", label: "window", value: (r) => r.window },
    timeCol("length_us", "path", "win"),
    timeCol("window_us", "window", "win"),
    { key: "share", label: "path / window %", num: true, value: (r) => (r.window_us ? (100 * r.length_us) / r.window_us : null), render: (r) => pct(r.window_us ? (100 * r.length_us) / r.window_us : null) },
    { key: "link", label: "", value: () => "", render: (r) => <a class="tl-link" href={timelineHref(trace, r.start_us, r.start_us + r.window_us, r.window === path.window)}>timeline</a> },
  ], [trace, path.window]);
  // the window of a trace without steps or --window is the whole trace
  const winName = path.window === "trace" ? "the whole trace" : path.window as string;
  const bands = path.bands as Dict | null;
  const total: number = bands?.events ?? path.events.length;
  // the DataLoader share of the step (breakdown) beside the path's: they measure different things
  const dlStep = report.breakdown?.pct?.dataloader as number | undefined;
  const lenU = timeUnit([cp.length_us, cp.window_us]);
  // HTA's "cpu_bound" is every host edge; the report splits it into cpu, sync, data_loading
  const b = cp.by_category_us, host = cp.length_us ? (100 * (b.cpu + b.sync + b.data_loading)) / cp.length_us : null;
  const share = cp.window_us ? (100 * cp.length_us) / cp.window_us : null;
  const cats = CP_CATEGORIES.map(([k, def]) => ({ k, def, p: cp.bound_by_pct[k] ?? 0, us: cp.by_category_us[k] ?? 0 }));
  const catU = timeUnit(cats.map((c) => c.us));
  return (
    <div class="page" id="page-critical-path">
      <section class="cards">
        <div class="card"><div class="label">critical path{cp.windows > 1 ? ` (mean of ${cp.windows} windows)` : ""}</div>
          <div class="big" id="cp-length">{lenU.fmt(cp.length_us)}</div><div class="unit">{lenU.label}</div></div>
        <div class="card"><div class="label">window{cp.windows > 1 ? ` (mean of ${cp.windows})` : ""}</div>
          <div class="big" id="cp-window">{lenU.fmt(cp.window_us)}</div><div class="unit">{lenU.label}</div></div>
        <div class="card"><div class="label">path / window</div><div class="big" id="cp-share">{pct(share)}</div><div class="unit">%</div></div>
        <div class="card cp-note-card"><div class="label">CPU-bound</div><div class="big" id="cp-cpu">{pct(cp.bound_by_pct.cpu)}</div>
          <div class="unit">% of the path; all host time <span class="nowrap"><span id="cp-host">{pct(host)}</span>&nbsp;%</span> (cpu + sync + data_loading: HTA's cpu_bound)</div></div>
        <Prediction report={report} />
      </section>
      <p class="dim" id="cp-definition">{cp.definition}. The longest chain of dependent work (host threads, launches, streams,
        synchronisations): shortening anything off it does not shorten the step.</p>
      <p class="dim" id="cp-basis">Window: each analysed {path.window === "trace" ? "trace" : "step (or --window range)"}, from its start to its end or to its last event's end if later (device work can outlast the host range);
        the cards are means over the {cp.windows === 1 ? "one window" : `${cp.windows} windows`}, the table below per window, the lanes one window.</p>
      {dlStep != null && dlStep > 0 && <p class="dim" id="cp-dataloader">Data loading here is path time inside DataLoader ranges (<span class="nowrap">{pct(cp.bound_by_pct.data_loading)}&nbsp;%</span> of the path); the Overview's <span class="nowrap">{pct(dlStep)}&nbsp;%</span> is
        the step's time waiting for batches: HTA's path counts only time in operators, runtime calls and device work, so a wait with no operator running is not on it.</p>}
      <h2>Bound by</h2>
      <div class="cp-bar" id="cp-bar" role="img" aria-label={cats.filter((c) => c.p > 0).map((c) => `${c.k} ${pct(c.p)} %`).join(", ")}>
        {cats.filter((c) => c.p > 0).map((c) => <div key={c.k} data-cat={c.k} title={`${c.k}: ${pct(c.p)} %`}
          style={{ width: `${c.p}%`, background: CP_COLORS[c.k] }}>{c.p >= 8 ? `${c.k} ${pct(c.p)} %` : ""}</div>)}
      </div>
      <table id="cp-bound-by" class="cp-defs"><thead><tr><th>category</th><th class="num">% of path</th><th class="num">{catU.label} per window</th><th>what it is</th></tr></thead>
        <tbody>{cats.map((c) => <tr key={c.k} data-cat={c.k}><td><Cat c={c.k} /></td>
          <td class="num" data-key="pct">{pct(c.p)}</td><td class="num" data-key="us">{catU.fmt(c.us)}</td><td class="dim">{c.def}</td></tr>)}</tbody></table>
      <h2>The path {winName === path.window ? "of " : "over "}{winName} <a class="tl-link" id="cp-timeline-link" href={timelineHref(trace, path.start_us, path.end_us, true)}>show on timeline</a></h2>
      <p class="dim" id="cp-path-text">{timeText(path.length_us)} of path in the {timeText(path.end_us - path.start_us)} window of {winName}{cp.windows > 1 ? ` (of the ${cp.windows} windows, the one of median path length)` : ""};
        all <span id="cp-total">{num(total)}</span> of its events, by thread and stream{total > path.events.length ? <>: bands where events touch (merged below 1/4000 of the window);
          the <span id="cp-named">{num(path.events.length)}</span> with the most path time are drawn over them, hover one for its name</> : ". Hover a segment for its name"}.</p>
      <Lanes path={path} />
      <h2>Top events on the path</h2>
      <Table id="cp-top" rows={cp.top_events} cols={TOP_COLS} searchKey={(r) => r.name} initialSort="on_path_us" />
      {cp.per_window.length > 0 && <><h2>Per window</h2>
        <Table id="cp-windows" rows={cp.per_window} cols={winCols} /></>}
    </div>
  );
}

/** The predicted step with every replayable finding's fix applied together (`whatif`). */
function Prediction({ report }: { report: Dict }) {
  const w = report.whatif as Dict | null;
  if (!w) return null;
  const u = timeUnit([w.before.step_us, w.after.step_us]);
  const rules = (w.applied as Dict[]).flatMap((a) => a.rules as string[]);
  const sameWindows = (w.windows as string[]).join("\n") === (report.critical_path.per_window as Dict[]).map((r) => r.window).join("\n");
  return (
    <div class="card cp-pred-card" id="cp-prediction" title={`replayed with ${(w.applied as Dict[]).map((a) => a.transform).join(", ")}`}>
      <div class="label">predicted step, {rules.length > 1 ? `the ${rules.length} replayed fixes together` : "the replayed fix"}</div>
      <div class="big"><span id="cp-pred-before">{u.fmt(w.before.step_us)}</span> → <span id="cp-pred-after">{u.fmt(w.after.step_us)}</span></div>
      <div class="unit">{u.label} (−<span id="cp-pred-pct">{pct(w.saving_pct)}</span> %: {rules.join(", ")})</div>
      {!sameWindows && <div class="unit">replayed over {(w.windows as string[]).length > 3 ? `${w.windows.length} windows` : w.windows.join(", ")}, not this page's</div>}
    </div>
  );
}

/** The path's events as lanes (host threads, then streams) over the window; each segment
 * coloured by its category. A path of more events than the report names (500) is drawn whole
 * from its bands (every event, merged where they touch), the named events over them.
 * SVG in % of the width, so it follows the page's width. */
function Lanes({ path }: { path: Dict }) {
  const { lanes, ticks } = useMemo(() => {
    const t0 = path.start_us as number, span = Math.max(1, (path.end_us as number) - t0);
    type Seg = { x: number; w: number; cat: string; title: string; band: boolean };
    const by = new Map<string, Seg[]>();
    const add = (key: string, s: Seg) => (by.get(key) ?? by.set(key, []).get(key)!).push(s);
    const events = path.events as Dict[], b = path.bands as Dict | null;
    if (b && b.events > events.length) {
      for (let i = 0; i < b.lane.length; i++) {
        const cat = b.categories[b.cat[i]] as string;
        add(b.lanes[b.lane[i]], { x: (100 * b.start_us[i]) / span, w: (100 * b.dur_us[i]) / span, cat, band: true,
          title: `${cat} · path events over ${timeText(b.dur_us[i])} from ${timeText(b.start_us[i])}` });
      }
    }
    for (const e of events) {
      const key = e.stream != null ? `stream ${e.stream}` : `thread ${e.thread ?? "?"}`;
      add(key, { x: Math.max(0, (100 * (e.ts_us - t0)) / span), w: Math.max(0, (100 * e.dur_us) / span), cat: e.category, band: false,
        title: `${e.name} · ${e.kind} · ${e.category} · ${timeText(e.dur_us)} (${timeText(e.on_path_us)} on the path)` });
    }
    const keys = [...by.keys()].sort((a, b) => (a.startsWith("thread") === b.startsWith("thread") ? a.localeCompare(b, undefined, { numeric: true }) : a.startsWith("thread") ? -1 : 1));
    const u = timeUnit([span]);
    const ticks = [0, 0.25, 0.5, 0.75, 1].map((f) => ({ f, text: `${+(f * span / u.div).toFixed(3)} ${u.label}` }));
    return { ticks, lanes: keys.map((k) => ({ key: k, segs: by.get(k)! })) };
  }, [path]);
  const named = lanes.reduce((n, l) => n + l.segs.filter((s) => !s.band).length, 0);
  return (
    <div class="cp-lanes" id="cp-lanes" data-lanes={lanes.length} data-segments={named}
      data-bands={lanes.reduce((n, l) => n + l.segs.length, 0) - named}>
      {lanes.map((l) => (
        <div class="cp-lane" key={l.key} data-lane={l.key}>
          <span class="cp-lane-label">{l.key}</span>
          <svg class="cp-lane-plot" role="img" aria-label={`${l.key}: ${l.segs.filter((s) => !s.band).length} named path events`}>
            {l.segs.map((s, i) => <rect key={i} class={s.band ? "cp-band" : "cp-event"} x={`${s.x}%`} y="3" width={`${s.w}%`} height="16"
              fill={CP_COLORS[s.cat] ?? "#999"} stroke={CP_COLORS[s.cat] ?? "#999"} stroke-width="1" data-cat={s.cat}>
              <title>{s.title}</title></rect>)}
          </svg>
        </div>))}
      <div class="cp-lane cp-axis"><span class="cp-lane-label dim">since its start</span>
        <div class="cp-ticks">{ticks.map((t) => <span key={t.f} style={{ left: `${100 * t.f}%`, transform: `translateX(-${100 * t.f}%)` }}>{t.text}</span>)}</div></div>
      <ul class="cp-legend">{CP_CATEGORIES.map(([k]) => <li key={k}><Cat c={k} /></li>)}</ul>
    </div>
  );
}
