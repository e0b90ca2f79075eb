import { useMemo, useRef, useState } from "preact/hooks";
import type { PageProps } from "../pageProps";
import { Chart } from "../chart";
import { Table, type Column } from "../table";
import { ms4 as ms, pct as pct2 } from "../format";
import { FindingCard } from "./FindingCard";
import { EngineGraph, type GraphHandle } from "./EngineGraph";
import { LayerDetail } from "./LayerDetail";
import { breakable } from "../names";

type D = Record<string, any>;
const kernelText = (r: D) => r.kernel?.summary ?? r.decoded?.summary ?? r.tactic ?? "—";

/** The layers table; with a graph, a layer's name selects it there. */
const layerCols = (select: ((i: number) => void) | null): Column<D>[] => [
  { key: "index", label: "#", num: true, value: (r) => r.index },
  { key: "name", label: "layer", value: (r) => r.name, render: (r) => select
    ? <a href="#" class="kname layer-link" data-index={r.index} onClick={(e) => { e.preventDefault(); select(r.index); }}>{r.name}</a>
    : <span class="kname">{breakable(r.name)}</span> },
  { key: "type", label: "type", value: (r) => r.type ?? "—" },
  { key: "precision", label: "precision", value: (r) => r.precision ?? "—" },
  { key: "average_ms", label: "avg ms", num: true, value: (r) => r.average_ms, render: (r) => ms(r.average_ms) },
  { key: "median_ms", label: "median ms", num: true, value: (r) => r.median_ms, render: (r) => ms(r.median_ms) },
  { key: "share_pct", label: "share %", num: true, value: (r) => r.share_pct, render: (r) => pct2(r.share_pct) },
  { key: "kernel", label: "kernel / tactic", value: kernelText,
    render: (r) => <span class="kname" title={r.tactic ?? ""}>{breakable(kernelText(r))}</span> },
  { key: "gpu_ms", label: "GPU ms (nsys)", num: true, value: (r) => r.gpu_ms, render: (r) => ms(r.gpu_ms) },
];
const MIX_COLS: Column<D>[] = [
  { key: "key", label: "", value: (r) => r.key },
  { key: "layers", label: "layers", num: true, value: (r) => r.layers },
  { key: "average_ms", label: "avg ms", num: true, value: (r) => r.average_ms, render: (r) => ms(r.average_ms) },
  { key: "share_pct", label: "share %", num: true, value: (r) => r.share_pct, render: (r) => pct2(r.share_pct) },
];

export function TensorRT({ report, config }: PageProps) {
  const t = report.tensorrt, s = t.summary;
  const [selected, setSelected] = useState<number | null>(null);
  const graph = useRef<GraphHandle | null>(null);
  const fromTable = (i: number) => {
    setSelected(i); graph.current?.focus(i);
    document.getElementById("trt-graph")?.scrollIntoView({ block: "start" });
  };
  const cols = useMemo(() => layerCols(t.graph ? fromTable : null), [report]);
  const metrics = Object.entries((s?.metrics ?? {}) as Record<string, D>);
  const typeOption = useMemo(() => ({
    tooltip: { trigger: "axis", axisPointer: { type: "shadow" } },
    grid: { left: 150, right: 30, top: 10, bottom: 30 },
    xAxis: { type: "value", name: "ms" },
    yAxis: { type: "category", inverse: true, data: t.by_type.map((r: D) => r.key) },
    series: [{ type: "bar", data: t.by_type.map((r: D) => r.average_ms), color: "#5470c6" }],
  }), [report]);
  const iterOption = useMemo(() => t.iterations && ({
    tooltip: { trigger: "axis" }, legend: { top: 0 },
    grid: { left: 70, right: 30, top: 30, bottom: 70 },
    xAxis: { type: "value", name: "iteration", min: "dataMin", max: "dataMax" },
    yAxis: { type: "value", name: "ms", scale: true },
    dataZoom: [{ type: "inside" }, { type: "slider", bottom: 10 }],
    series: [
      { name: "GPU compute (mean)", type: "line", showSymbol: false, data: t.iterations.first.map((x: number, i: number) => [x, t.iterations.compute_mean_ms[i]]) },
      { name: "latency (mean)", type: "line", showSymbol: false, data: t.iterations.first.map((x: number, i: number) => [x, t.iterations.latency_mean_ms[i]]) },
    ],
  }), [report]);
  return (
    <div class="page" id="page-tensorrt">
      <section class="cards">
        <div class="card"><div class="label">engine</div><div class="big" id="trt-engine">{t.engine}</div><div class="unit">{t.trt_version ? `TensorRT ${t.trt_version}` : ""} {report.devices[0]?.name ?? ""}</div></div>
        <div class="card"><div class="label">precision</div><div class="big" id="trt-precision">{t.engine_precision ?? "—"}</div><div class="unit">batch {t.batch ?? "—"}</div></div>
        <div class="card"><div class="label">per inference</div><div class="big" id="trt-inference">{ms(t.inference_ms)}</div><div class="unit">ms (Σ layers {ms(t.layer_total_ms)} ms)</div></div>
        <div class="card"><div class="label">throughput</div><div class="big" id="trt-qps">{s?.throughput_qps ?? "—"}</div><div class="unit">queries/s</div></div>
        <div class="card"><div class="label">reformats</div><div class="big" id="trt-reformat-share">{pct2(t.reformats.share_pct)}</div><div class="unit">% of layer time ({t.reformats.layers} layers)</div></div>
      </section>
      {t.notes.length > 0 && <ul class="note" role="note" id="trt-notes">{t.notes.map((n: string, i: number) => <li key={i}>{n}</li>)}</ul>}
      {metrics.length > 0 && <><h2>Performance summary <span class="dim">({s.source})</span></h2>
        <table id="trt-metrics"><thead><tr><th>metric</th><th class="num">min ms</th><th class="num">mean ms</th><th class="num">median ms</th><th class="num">max ms</th><th class="num">p99 ms</th></tr></thead>
          <tbody>{metrics.map(([k, m]) => (
            <tr key={k} data-metric={k}><td>{k}</td><td class="num">{ms(m.min_ms)}</td><td class="num" data-key="mean_ms">{ms(m.mean_ms)}</td>
              <td class="num" data-key="median_ms">{ms(m.median_ms)}</td><td class="num">{ms(m.max_ms)}</td><td class="num">{ms(m.percentiles_ms?.p99)}</td></tr>))}</tbody></table></>}
      <h2>Time by layer type</h2>
      <Chart option={typeOption} height={Math.max(120, 26 * t.by_type.length + 40)} id="trt-types-chart" />
      <div class="cards">
        <div><h2>Precision mix</h2><Table id="trt-precision-mix" rows={t.precision_mix} cols={MIX_COLS} /></div>
        <div><h2>By layer type</h2><Table id="trt-by-type" rows={t.by_type} cols={MIX_COLS} /></div>
      </div>
      {t.graph && <><h2>Engine graph <span class="dim">(layers and tensors from the layer info; colour: precision, width: share of time)</span></h2>
        <div class="graph-split">
          <EngineGraph graph={t.graph} layers={t.layers} onSelect={setSelected} handle={graph} />
          {selected === null ? <p class="dim layer-detail" id="trt-layer-detail">Click a layer in the graph (or a name in the layers table) for its details.</p>
            : <LayerDetail index={selected} layers={t.layers} edges={t.graph.edges} onSelect={fromTable} />}
        </div></>}
      <h2>Layers (execution order)</h2>
      <Table id="trt-layers" rows={t.layers} cols={cols} searchKey={(r) => `${r.name} ${r.type ?? ""}`} />
      {iterOption && <><h2>Iterations ({t.iterations.iterations}, {t.iterations.bucket} per point)</h2>
        <Chart option={iterOption} height={280} id="trt-iterations" /></>}
      {report.findings.length > 0 && <><h2>Findings (savings per inference)</h2>
        {report.findings.map((f: D, i: number) => <FindingCard key={f.id} f={f} config={config} index={i + 1} />)}</>}
    </div>
  );
}
