// Views of a run's parallelism on the Distributed page: pipeline stages, all-to-all traffic,
// per-collective skew/wait, FSDP units; and the large-run forms (heatmaps, histograms) that
// replace one bar per rank once a run has more than LARGE ranks.
import { Chart } from "../chart";
import { Table, timeCol, type Column } from "../table";
import { bytes, bytesUnit, num, pct, timeAxis, timeUnit } from "../format";

type K = Record<string, any>;

/** Above this many ranks, one bar per rank is unreadable: heatmaps and histograms instead. */
export const LARGE = 64;
/** A heatmap shows at most this many rows/columns; more ranks are summed in blocks. */
const CELLS = 64;
/** Rows a table renders in a large run (the rest by sorting or searching). */
export const ROWS = 50;
export const rowLimit = (n: number) => (n > LARGE ? ROWS : undefined);

/** One value in the unit that fits it (the pages' shared formatter). */
export const bytesText = (b: number | null | undefined) => bytes(b);

/** "0–249, 300": consecutive ranks as ranges, so a stage of hundreds of ranks stays one line. */
export function rankList(ranks: number[]): string {
  const out: string[] = [];
  for (let i = 0; i < ranks.length; i++) {
    let j = i;
    while (j + 1 < ranks.length && ranks[j + 1] === ranks[j] + 1) j++;
    out.push(j > i ? `${ranks[i]}–${ranks[j]}` : String(ranks[i]));
    i = j;
  }
  return out.join(", ");
}

/** Equal-width bins over `values`: [label of each bin, count]. */
export function histogram(values: number[], bins = 30, label: (x: number) => string = String): { cats: string[]; counts: number[] } {
  const lo = Math.min(...values), hi = Math.max(...values);
  const n = hi > lo ? bins : 1;
  const width = (hi - lo) / n || 1;
  const counts = new Array(n).fill(0);
  for (const v of values) counts[Math.min(n - 1, Math.floor((v - lo) / width))]++;
  return { cats: counts.map((_, i) => `${label(lo + i * width)}–${label(lo + (i + 1) * width)}`), counts };
}

/** A histogram of one figure per rank (µs). A single slow rank is a bar of height 1 beside
 * hundreds: the highest ranks are named under the chart (`highest`). */
export function rankHistogram(ranks: K[], value: (r: K) => number, name: string) {
  const vals = ranks.map(value);
  const u = timeUnit(vals);
  const h = histogram(vals, 30, (x) => (x / u.div).toFixed(2));
  return {
    tooltip: { trigger: "axis" }, grid: { left: 60, right: 20, top: 30, bottom: 90 },
    xAxis: { type: "category", data: h.cats, name: `${name} (${u.label})`, nameLocation: "middle", nameGap: 70, axisLabel: { rotate: 35 } },
    yAxis: { type: "value", name: "ranks", minInterval: 1 },
    series: [{ name: "ranks", type: "bar", data: h.counts, itemStyle: { color: "#4e79a7" }, barMinHeight: 0,
      label: { show: true, position: "top", formatter: (p: any) => (p.value ? String(p.value) : "") } }],
  };
}

/** "rank 617: 77.6 ms, rank 3: 25.9 ms, …": the ranks with the largest value. */
export function highest(ranks: K[], value: (r: K) => number, n = 3): string {
  const top = [...ranks].sort((a, b) => value(b) - value(a)).slice(0, n);
  const u = timeUnit(top.map(value));
  return top.map((r) => `rank ${r.rank}: ${u.text(value(r))}`).join(", ");
}

/** Rank × figure heatmap (each row scaled to its own maximum, so one slow rank stands out). */
export function rankHeatmap(ranks: K[], rows: [string, string][]) {
  const data: [number, number, number][] = [];
  rows.forEach(([key], y) => {
    const max = Math.max(1e-9, ...ranks.map((r) => r[key] ?? 0));
    ranks.forEach((r, x) => data.push([x, y, +(100 * (r[key] ?? 0) / max).toFixed(1)]));
  });
  return {
    tooltip: { formatter: (p: any) => `rank ${ranks[p.value[0]].rank} · ${rows[p.value[1]][1]}: ${p.value[2]} % of the largest rank's` },
    grid: { left: 120, right: 30, top: 10, bottom: 70 },
    xAxis: { type: "category", data: ranks.map((r) => String(r.rank)), name: "rank", nameLocation: "middle", nameGap: 30 },
    yAxis: { type: "category", data: rows.map(([, label]) => label) },
    visualMap: { min: 0, max: 100, calculable: false, orient: "horizontal", left: "center", bottom: 0, itemHeight: 200, text: ["100 % of max", "0"], inRange: { color: ["#f7fbff", "#08306b"] } },
    series: [{ type: "heatmap", data, progressive: 0 }],
  };
}

/** Blocks of `size` consecutive ranks: labels and the block of each index. */
function blocks(ranks: number[], size: number): string[] {
  const out: string[] = [];
  for (let i = 0; i < ranks.length; i += size) {
    const last = Math.min(i + size, ranks.length) - 1;
    out.push(size === 1 ? String(ranks[i]) : `${ranks[i]}–${ranks[last]}`);
  }
  return out;
}

export function AllToAllView({ a }: { a: K }) {
  if (!a.ranks.length) {
    return <p id="a2a-unmapped">{a.unmapped_calls} all-to-all calls whose peers' global ranks the trace does not give: no traffic matrix.</p>;
  }
  const n: number = a.ranks.length;
  const size = Math.ceil(n / CELLS);
  const labels = blocks(a.ranks, size);
  const m = labels.length;
  // a block's cell is the mean per rank pair in it (the last block may hold fewer ranks)
  const cells = Array.from({ length: m }, () => new Array(m).fill(0));
  a.matrix_bytes.forEach((row: number[], i: number) => row.forEach((b, j) => { cells[Math.floor(i / size)][Math.floor(j / size)] += b; }));
  const span = (k: number) => Math.min(size, n - k * size);
  cells.forEach((row, i) => row.forEach((_, j) => { row[j] /= span(i) * span(j); }));
  const flat = cells.flat();
  const [unit, div] = bytesUnit(flat);
  const data: [number, number, number][] = [];
  cells.forEach((row, i) => row.forEach((b, j) => data.push([j, i, +(b / div).toFixed(3)])));
  const who = size === 1 ? "rank" : "ranks";
  const vals = data.map((d) => d[2]);
  const lo = Math.min(...vals), hi = Math.max(...vals);
  const heat = {
    tooltip: { formatter: (p: any) => `${who} ${labels[p.value[1]]} → ${who} ${labels[p.value[0]]}: ${p.value[2]} ${unit}${size > 1 ? " per rank pair (mean)" : ""}` },
    grid: { left: 90, right: 30, top: 10, bottom: size > 1 ? 110 : 80 },
    xAxis: { type: "category", data: labels, name: `receiver ${who}`, nameLocation: "middle", nameGap: size > 1 ? 60 : 28, axisLabel: { rotate: size > 1 ? 45 : 0, interval: size > 1 ? 1 : 0 } },
    yAxis: { type: "category", data: labels, name: `sender ${who}`, inverse: true, axisLabel: { interval: size > 1 ? 3 : 0 } },
    // colours span the data's own range: an even exchange is pale, a hot rank's column dark
    visualMap: { min: lo, max: Math.max(hi, lo + 1e-9), calculable: false, orient: "horizontal", left: "center", bottom: 0, itemHeight: 200,
      text: [`${hi} ${unit}`, `${lo} ${unit}`], inRange: { color: ["#fff7ec", "#7f0000"] } },
    series: [{ type: "heatmap", data, progressive: 0 }],
  };
  const per: K[] = a.ranks.map((r: number, k: number) => ({ rank: r, sent: a.sent_bytes[k], received: a.received_bytes[k] }));
  const mean = per.reduce((s, r) => s + r.received, 0) / n;
  const [ru, rd] = bytesUnit(per.flatMap((r) => [r.sent, r.received]));
  const recv = n <= LARGE ? {
    tooltip: { trigger: "axis", axisPointer: { type: "shadow" } }, legend: { top: 0 }, grid: { left: 60, right: 20, top: 36, bottom: 30 },
    xAxis: { type: "category", data: per.map((r) => `rank ${r.rank}`) }, yAxis: { type: "value", name: ru },
    series: [{ name: "sent", type: "bar", data: per.map((r) => +(r.sent / rd).toFixed(3)), itemStyle: { color: "#76b7b2" } },
      { name: "received", type: "bar", data: per.map((r) => +(r.received / rd).toFixed(3)), itemStyle: { color: "#e15759" } }],
  } : (() => {
    const h = histogram(per.map((r) => r.received / rd), 30, (x) => x.toFixed(2));
    return { tooltip: { trigger: "axis" }, grid: { left: 60, right: 20, top: 30, bottom: 90 },
      xAxis: { type: "category", data: h.cats, name: `received per rank (${ru})`, nameLocation: "middle", nameGap: 70, axisLabel: { rotate: 35 } },
      yAxis: { type: "value", name: "ranks", minInterval: 1 }, series: [{ name: "ranks", type: "bar", data: h.counts, itemStyle: { color: "#e15759" },
        label: { show: true, position: "top", formatter: (p: any) => (p.value ? String(p.value) : "") } }] };
  })();
  const cols: Column<K>[] = [
    { key: "rank", label: "rank", num: true, value: (r) => r.rank },
    { key: "sent", label: `sent ${ru}`, num: true, value: (r) => r.sent, render: (r) => <span title={`${r.sent} B`}>{(r.sent / rd).toFixed(2)}</span> },
    { key: "received", label: `received ${ru}`, num: true, value: (r) => r.received, render: (r) => <span title={`${r.received} B`}>{(r.received / rd).toFixed(2)}</span> },
    { key: "ratio", label: "received / mean", num: true, value: (r) => (mean ? r.received / mean : null), render: (r) => (mean ? (r.received / mean).toFixed(2) : "—") },
  ];
  return (
    <div id="a2a">
      <p id="a2a-summary">{a.calls} all-to-all calls per rank · received max/mean <b id="a2a-imbalance">{a.imbalance?.toFixed(2)}</b> ·
        hot ranks (received ≥ 1.25 × mean): <b id="a2a-hot">{a.hot_ranks.length ? a.hot_ranks.join(", ") : "none"}</b>
        {size > 1 && <> · cells are blocks of {size} ranks (mean bytes per rank pair)</>}{a.unmapped_calls > 0 && <> · {a.unmapped_calls} calls not placed (unknown group)</>}</p>
      <Chart option={heat} height={Math.min(600, 180 + (size > 1 ? 7 : 22) * m)} id="a2a-heatmap" />
      <Chart option={recv} height={n <= LARGE ? 240 : 300} id="a2a-received" />
      {n > LARGE && <p class="dim" id="a2a-most">most received: {[...per].sort((x, y) => y.received - x.received).slice(0, 3)
        .map((r) => `rank ${r.rank}: ${bytesText(r.received)}`).join(", ")}</p>}
      <Table id="a2a-table" rows={per} cols={cols} initialSort="received" searchKey={(r) => String(r.rank)} limit={rowLimit(n)} />
    </div>
  );
}

export function PipelineView({ p }: { p: K }) {
  const stages: K[] = p.stages;
  const m = p.microbatches ?? 0;
  const fwd = (s: K) => (s.forward_us_per_microbatch ?? 0) * m;
  const bwd = (s: K) => (s.backward_us_per_microbatch ?? 0) * m;
  const u = timeUnit(stages.map((s) => s.compute_us + s.idle_us));
  const cats = stages.map((s) => `stage ${s.stage} (rank${s.ranks.length > 1 ? "s" : ""} ${rankList(s.ranks)})`);
  const bar = (name: string, vals: number[], color: string) => ({ name, type: "bar", stack: "t", data: vals, itemStyle: { color } });
  // forward + backward may be less than compute (other work on the stage): the rest is "other compute"
  const option = {
    tooltip: { trigger: "axis", axisPointer: { type: "shadow" }, valueFormatter: u.text }, legend: { top: 0 },
    grid: { left: 170, right: 30, top: 36, bottom: 40 },
    yAxis: { type: "category", data: cats, inverse: true }, xAxis: timeAxis(u),
    series: [bar("forward", stages.map(fwd), "#4e79a7"), bar("backward", stages.map(bwd), "#f28e2b"),
      bar("other compute", stages.map((s) => Math.max(0, s.compute_us - fwd(s) - bwd(s))), "#9c755f"),
      bar("idle (bubble)", stages.map((s) => s.idle_us), "#e0e0e0")],
  };
  const cols: Column<K>[] = [
    { key: "stage", label: "stage", num: true, value: (r) => r.stage },
    { key: "ranks", label: "ranks", value: (r) => rankList(r.ranks) },
    { key: "bubble_pct", label: "bubble %", num: true, value: (r) => r.bubble_pct, render: (r) => pct(r.bubble_pct) },
    timeCol("forward_us_per_microbatch", "forward per micro-batch"),
    timeCol("backward_us_per_microbatch", "backward per micro-batch"),
    timeCol("compute_us", "compute"),
    timeCol("idle_us", "idle"),
  ];
  return (
    <div id="pipeline">
      <p id="pipeline-summary"><span class="nowrap">{stages.length} stages</span> · <span class="nowrap">schedule <b>{p.schedule ?? "unknown"}</b></span> · <span class="nowrap">{m} micro-batches</span> ·{" "}
        <span class="nowrap">theoretical bubble <b>{pct(p.theoretical_bubble_pct)}&nbsp;%</b></span> ((p−1)/(m+p−1)) · stage imbalance (slowest / mean compute) <b>{p.imbalance?.toFixed(2) ?? "—"}</b></p>
      <Chart option={option} height={80 + 40 * stages.length} id="pipeline-chart" />
      <Table id="pipeline-table" rows={stages} cols={cols} />
    </div>
  );
}

/** Per process group: wait per rank (bars, or a histogram for large groups) and its calls' skew. */
export function CollectiveSkewView({ groups }: { groups: K[] }) {
  return <div id="skew">{groups.map((g, gi) => {
    const waits: number[] = g.wait_us;
    const u = timeUnit(waits);
    const option = g.ranks.length <= LARGE ? {
      tooltip: { trigger: "axis", axisPointer: { type: "shadow" }, valueFormatter: u.text }, grid: { left: 60, right: 20, top: 20, bottom: 30 },
      xAxis: { type: "category", data: g.ranks.map((r: number) => `rank ${r}`) }, yAxis: timeAxis(u),
      series: [{ name: "wait", type: "bar", data: waits, itemStyle: { color: "#f28e2b" } }],
    } : rankHistogram(waits.map((w, i) => ({ w, rank: g.ranks[i] })), (r) => r.w, "wait per rank");
    const calls: K[] = g.calls.map((c: K) => ({ ...c, max_wait_us: Math.max(0, ...c.wait_us) }));
    const cols: Column<K>[] = [
      { key: "name", label: "collective", value: (r) => r.name },
      { key: "seq", label: "seq", num: true, value: (r) => r.seq },
      { key: "bytes", label: "bytes", num: true, value: (r) => r.bytes, render: (r) => bytesText(r.bytes < 0 ? null : r.bytes) },
      timeCol("transfer_us", "transfer"),
      timeCol("skew_us", "start skew"),
      timeCol("max_wait_us", "longest wait"),
    ];
    return <div class="group" key={gi}>
      <h4>Group {g.process_group || "default"} (ranks {rankList(g.ranks)}): wait per rank</h4>
      <Chart option={option} height={g.ranks.length <= LARGE ? 220 : 280} id={`skew-chart-${gi}`} />
      {g.ranks.length > LARGE && <p class="dim">longest waits: {highest(waits.map((w, i) => ({ w, rank: g.ranks[i] })), (r) => r.w)}</p>}
      <Table id={`skew-table-${gi}`} rows={calls} cols={cols} initialSort="skew_us" searchKey={(r) => r.name} limit={ROWS} />
    </div>;
  })}</div>;
}

/** Without per-group tables (`groups`), the matched calls: who arrived last, what the others waited. */
export function CallsView({ calls }: { calls: K[] }) {
  const cols: Column<K>[] = [
    { key: "collective", label: "collective", value: (r) => r.collective },
    { key: "process_group", label: "group", value: (r) => r.process_group || "default" },
    { key: "seq", label: "seq", num: true, value: (r) => r.seq },
    { key: "step", label: "step", value: (r) => r.step || "—" },
    { key: "bytes", label: "bytes", num: true, value: (r) => r.bytes, render: (r) => bytesText(r.bytes < 0 ? null : r.bytes) },
    { key: "last_rank", label: "last rank", num: true, value: (r) => r.last_rank },
    timeCol("wait_us", "others' wait (sum)"),
    timeCol("max_wait_us", "longest wait"),
    timeCol("transfer_us", "transfer"),
  ];
  return <Table id="calls-table" rows={calls} cols={cols} initialSort="wait_us" limit={ROWS} searchKey={(r) => `${r.collective} ${r.process_group}`} />;
}

export function FsdpView({ f }: { f: K }) {
  const units: K[] = f.units;
  const u = timeUnit(units.map((x) => x.time_us));
  const kinds = ["all_gather", "reduce_scatter"];
  const names = [...new Set(units.map((x) => x.unit || "(all units)"))];
  const find = (k: string, n: string) => units.find((x) => x.kind === k && (x.unit || "(all units)") === n);
  const series = kinds.flatMap((k) => [
    { name: `${k.replace("_", "-")} exposed`, type: "bar", stack: k, data: names.map((n) => find(k, n)?.exposed_us ?? 0), itemStyle: { color: k === "all_gather" ? "#e15759" : "#f28e2b" } },
    { name: `${k.replace("_", "-")} overlapped`, type: "bar", stack: k, data: names.map((n) => { const x = find(k, n); return x ? x.time_us - x.exposed_us : 0; }), itemStyle: { color: k === "all_gather" ? "#59a14f" : "#8cd17d" } },
  ]);
  const option = { tooltip: { trigger: "axis", axisPointer: { type: "shadow" }, valueFormatter: u.text }, legend: { top: 0 },
    grid: { left: 60, right: 20, top: 36, bottom: 30 }, xAxis: { type: "category", data: names, name: "unit" }, yAxis: timeAxis(u), series };
  const [bu, bd] = bytesUnit(units.map((x) => x.bytes ?? 0));
  const cols: Column<K>[] = [
    { key: "unit", label: "unit", value: (r) => r.unit || "(all units)" },
    { key: "kind", label: "collective", value: (r) => r.kind.replace("_", "-") },
    { key: "calls", label: "calls", num: true, value: (r) => r.calls, render: (r) => num(r.calls) },
    { key: "bytes", label: `bytes ${bu}`, num: true, value: (r) => r.bytes, render: (r) => (r.bytes == null ? "—" : (r.bytes / bd).toFixed(2)) },
    timeCol("time_us", "time"),
    timeCol("exposed_us", "exposed"),
    { key: "overlap_pct", label: "overlapped %", num: true, value: (r) => r.overlap_pct, render: (r) => pct(r.overlap_pct) },
  ];
  return (
    <div id="fsdp">
      <p id="fsdp-summary">{f.version} · {f.ranks} ranks · per rank, all steps: all-gather {pct(f.all_gather_overlap_pct)} % overlapped
        ({timeUnit([f.all_gather_exposed_us]).text(f.all_gather_exposed_us)} exposed), reduce-scatter {pct(f.reduce_scatter_overlap_pct)} % overlapped
        ({timeUnit([f.reduce_scatter_exposed_us]).text(f.reduce_scatter_exposed_us)} exposed)</p>
      <Chart option={option} height={260} id="fsdp-chart" />
      <Table id="fsdp-table" rows={units} cols={cols} initialSort="exposed_us" />
    </div>
  );
}

/** The page's words, each used for one thing only. */
export function Definitions() {
  return (
    <details id="definitions" open><summary>What the words on this page mean</summary><dl>
      <dt>computation</dt><dd>time a rank computes (operators on CPU traces, non-communication kernels on GPU) while no communication runs; computation during communication is <i>overlap</i>.</dd>
      <dt>communication</dt><dd>time a collective runs while nothing computes.</dd>
      <dt>overlap</dt><dd>time computation and communication run together.</dd>
      <dt>other</dt><dd>the rest of each step: neither computation nor communication (host gaps, data loading, idling).</dd>
      <dt>busy computation</dt><dd>computation + overlap: all the time a rank computes; what stragglers and imbalance compare.</dd>
      <dt>sync wait</dt><dd>part of a rank's communication spent waiting for the last rank to arrive (its call minus the shortest call of all ranks).</dd>
      <dt>transfer</dt><dd>the shortest duration of a matched call across ranks: the data movement itself.</dd>
      <dt>bubble</dt><dd>a pipeline stage's idle time between its forward and backward micro-batches.</dd>
      <dt>exposed</dt><dd>communication time not covered by computation.</dd>
    </dl></details>
  );
}
