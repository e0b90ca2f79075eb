// `stepscope diff A B --html` on two TensorRT engines: the `stepscope.tensorrt-diff/1`
// document (analysis/tensorrt_diff.py to_json) side by side. Times in ms with 4 decimals,
// as on the TensorRT page.
import { useMemo } from "preact/hooks";
import type { PageProps } from "../pageProps";
import { Chart } from "../chart";
import { Table, type Column } from "../table";
import { esc, ms4, pct } from "../format";
import { breakable } from "../names";

type D = Record<string, any>;
const signed = (x: number | null | undefined, d = 4) => (x == null ? "—" : (x > 0 ? "+" : "") + x.toFixed(d));
const deltaPct = (a: number | null, b: number | null) => (a && b != null ? (100 * (b - a)) / a : null);

/** A layer's status: slower / faster / same in B, or present in one engine only. */
function status(d: D): string {
  if (d.a_ms == null && d.b_ms == null) return "—";
  if (d.a_ms == null) return "only in B";
  if (d.b_ms == null) return "only in A";
  return d.delta_ms > 0 ? "slower" : d.delta_ms < 0 ? "faster" : "same";
}
const precision = (d: D) => (d.a_precision === d.b_precision || d.a_ms == null || d.b_ms == null
  ? d.a_precision ?? d.b_precision ?? "—" : `${d.a_precision ?? "—"} → ${d.b_precision ?? "—"}`);
const deltaCell = (x: number | null | undefined) => <span class={x == null || x === 0 ? "" : x > 0 ? "worse" : "better"}>{signed(x)}</span>;

const LAYER_COLS: Column<D>[] = [
  { key: "name", label: "layer", value: (r) => r.name, render: (r) => <span class="kname">{breakable(r.name)}</span> },
  { key: "status", label: "status", value: status, render: (r) => <span class={`status ${status(r).replace(/ /g, "-")}`}>{status(r)}</span> },
  { key: "a_ms", label: "A ms", num: true, value: (r) => r.a_ms, render: (r) => ms4(r.a_ms) },
  { key: "b_ms", label: "B ms", num: true, value: (r) => r.b_ms, render: (r) => ms4(r.b_ms) },
  { key: "delta_ms", label: "Δ ms", num: true, value: (r) => (r.a_ms == null || r.b_ms == null ? null : r.delta_ms), render: (r) => deltaCell(r.a_ms == null || r.b_ms == null ? null : r.delta_ms) },
  { key: "delta_pct", label: "Δ %", num: true, value: (r) => deltaPct(r.a_ms, r.b_ms), render: (r) => signed(deltaPct(r.a_ms, r.b_ms), 2) },
  { key: "precision", label: "precision A → B", value: precision, render: (r) => <span class={r.a_precision !== r.b_precision && r.a_ms != null && r.b_ms != null ? "changed" : ""}>{precision(r)}</span> },
  { key: "type", label: "type", value: (r) => r.a_type || r.b_type || "—", render: (r) => (r.a_type && r.b_type && r.a_type !== r.b_type ? `${r.a_type} → ${r.b_type}` : r.a_type || r.b_type || "—") },
];
const FUSION_COLS: Column<D>[] = [
  { key: "fused_in", label: "fused in", value: (r) => r.fused_in.toUpperCase() },
  { key: "layer", label: "layer", value: (r) => r.layer, render: (r) => <span class="kname">{breakable(r.layer)}</span> },
  { key: "layer_ms", label: "layer ms", num: true, value: (r) => r.layer_ms, render: (r) => ms4(r.layer_ms) },
  { key: "split_layers", label: "the other engine runs it as", value: (r) => r.split_layers.length,
    render: (r) => <ul class="plain">{r.split_layers.map((n: string, i: number) => <li key={i} class="kname">{breakable(n)}</li>)}</ul> },
  { key: "split_ms", label: "those layers ms", num: true, value: (r) => r.split_ms, render: (r) => ms4(r.split_ms) },
];
const SIDE_COLS = (label: string): Column<D>[] => [
  { key: "key", label, value: (r) => r.key },
  { key: "a_ms", label: "A ms", num: true, value: (r) => r.a_ms, render: (r) => ms4(r.a_ms) },
  { key: "a_pct", label: "A %", num: true, value: (r) => r.a_pct, render: (r) => pct(r.a_pct) },
  { key: "b_ms", label: "B ms", num: true, value: (r) => r.b_ms, render: (r) => ms4(r.b_ms) },
  { key: "b_pct", label: "B %", num: true, value: (r) => r.b_pct, render: (r) => pct(r.b_pct) },
  { key: "delta_ms", label: "Δ ms", num: true, value: (r) => r.b_ms - r.a_ms, render: (r) => deltaCell(r.b_ms - r.a_ms) },
];

function Totals({ d }: { d: D }) {
  const rows: [string, string, (x: D) => string][] = [
    ["per inference (GPU compute) ms", "inference_ms", (x) => ms4(x.inference_ms)],
    ["Σ per-layer time ms", "layer_total_ms", (x) => ms4(x.layer_total_ms)],
    ["throughput qps", "throughput_qps", (x) => (x.throughput_qps == null ? "—" : x.throughput_qps.toFixed(1))],
    ["layers", "layers", (x) => String(x.layers)],
    ["precision", "precision", (x) => x.precision ?? "—"],
  ];
  return (
    <table id="ediff-totals"><thead><tr><th></th><th class="num">A</th><th class="num">B</th><th class="num">Δ (B − A)</th></tr></thead>
      <tbody>{rows.map(([label, key, f]) => {
        const a = d.a[key], b = d.b[key], num = typeof a === "number" && typeof b === "number";
        return <tr key={key} data-key={key}><td>{label}</td><td class="num" data-side="a">{f(d.a)}</td><td class="num" data-side="b">{f(d.b)}</td>
          <td class="num" data-side="delta">{num ? (key.endsWith("_ms") ? deltaCell(b - a) : signed(b - a, key === "layers" ? 0 : 1)) : ""}</td></tr>;
      })}</tbody></table>
  );
}

export function EngineCompare({ report }: PageProps) {
  const d = report.tensorrt_diff;
  const layers = useMemo(() => [...d.matched_layers, ...d.only_a, ...d.only_b], [report]);
  const precChanges = useMemo(() => d.matched_layers.filter((r: D) => r.a_precision !== r.b_precision), [report]);
  const typeOption = useMemo(() => ({
    tooltip: { trigger: "axis", axisPointer: { type: "shadow" },
      formatter: (ps: D[]) => `<b>${esc(ps[0]?.name)}</b>` + ps.map((p) => `<br>${esc(p.seriesName)}: ${ms4(p.value)} ms`).join("") },
    legend: { top: 0 }, grid: { left: 160, right: 30, top: 28, bottom: 30 },
    xAxis: { type: "value", name: "ms" },
    yAxis: { type: "category", inverse: true, data: d.by_type.map((r: D) => r.key) },
    series: [{ name: "A", type: "bar", data: d.by_type.map((r: D) => r.a_ms), color: "#8c95a6" },
      { name: "B", type: "bar", data: d.by_type.map((r: D) => r.b_ms), color: "#3a7bd5" }],
  }), [report]);
  const counts = layers.reduce((c: Record<string, number>, r: D) => ({ ...c, [status(r)]: (c[status(r)] ?? 0) + 1 }), {});
  return (
    <div class="page" id="page-engine-compare">
      <dl class="sides" id="ediff-sides">
        <dt>A</dt><dd class="kname">{d.a.engine} <span class="dim">({report.a})</span></dd>
        <dt>B</dt><dd class="kname">{d.b.engine} <span class="dim">({report.b})</span></dd>
      </dl>
      <section class="cards">
        <div class="card"><div class="label">per inference A → B</div><div class="big"><span id="ediff-a-inference">{ms4(d.a.inference_ms)}</span> → <span id="ediff-b-inference">{ms4(d.b.inference_ms)}</span></div><div class="unit">ms (GPU compute mean)</div></div>
        <div class="card"><div class="label">speedup (A / B)</div><div class={`big ${d.speedup == null ? "" : d.speedup >= 1 ? "better" : "worse"}`} id="ediff-speedup">{d.speedup == null ? "—" : `${d.speedup.toFixed(2)}×`}</div><div class="unit">&gt; 1: B is faster</div></div>
        <div class="card"><div class="label">precision A → B</div><div class="big" id="ediff-precision">{d.a.precision ?? "—"} → {d.b.precision ?? "—"}</div><div class="unit">{d.a.layers} → {d.b.layers} layers</div></div>
        <div class="card"><div class="label">layers</div><div class="big" id="ediff-matched">{d.matched_layers.length}</div><div class="unit">matched; {d.only_a.length} only in A, {d.only_b.length} only in B</div></div>
      </section>
      <h2>Totals</h2>
      <Totals d={d} />
      <h2>Layer latencies <span class="dim">({Object.entries(counts).map(([k, n]) => `${n} ${k}`).join(", ")}; largest changes first)</span></h2>
      <Table id="ediff-layers" rows={layers} cols={LAYER_COLS} searchKey={(r) => `${r.name} ${status(r)}`} />
      <h2>Precision changes <span class="dim">({precChanges.length} matched layers)</span></h2>
      {precChanges.length ? <Table id="ediff-precision-changes" rows={precChanges} cols={LAYER_COLS} />
        : <p class="dim" id="ediff-precision-changes">No matched layer changed precision.</p>}
      <h2>Fused groups <span class="dim">(a layer of one engine that runs nodes the other engine ran as two or more layers)</span></h2>
      {d.fusions.length ? <Table id="ediff-fusions" rows={d.fusions} cols={FUSION_COLS} />
        : <p class="dim" id="ediff-fusions">No fusion differences.</p>}
      <div class="cards">
        <div><h2>Precision mix</h2><Table id="ediff-precision-mix" rows={d.precision_mix} cols={SIDE_COLS("precision")} /></div>
        <div><h2>By layer type</h2><Table id="ediff-by-type" rows={d.by_type} cols={SIDE_COLS("type")} /></div>
      </div>
      <h2>Time by layer type, A and B</h2>
      <Chart option={typeOption} height={Math.max(140, 40 * d.by_type.length + 60)} id="ediff-types-chart" />
    </div>
  );
}
