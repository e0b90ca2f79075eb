// The engine graph of a TensorRT report (`tensorrt.graph`): layers and the tensors between
// them, drawn top to bottom (dagLayout), coloured by precision, widths by share of time.
import { useMemo, useRef } from "preact/hooks";
import type { ECharts } from "echarts/core";
import { Chart } from "../chart";
import { layeredLayout } from "../dagLayout";
import { esc, ms4 } from "../format";

type D = Record<string, any>;

const PRECISION_COLORS: Record<string, string> = {
  FP32: "#5470c6", TF32: "#73c0de", BF16: "#3ba272", FP16: "#91cc75", FP8: "#fc8452",
  INT8: "#ee6666", INT4: "#9a60b4", FP4: "#b37fcf",
};
const OTHER = "#a9b1bf", UNKNOWN = "#dfe3ea", TENSOR = "#4b5563", TENSOR_CAT = "network input/output";
const GAP_X = 330, GAP_Y = 70;   // data units between slots / layers
const READABLE_PX = 58;          // pixels per layer at the initial zoom of a deep graph

export const dims = (d: number[]) => (d.length ? d.join("×") : "scalar");
const short = (s: string, n = 42) => (s.length <= n ? s : s.slice(0, n - 1) + "…");

/** One vertex per layer, then one per network input/output tensor (a binding, or a tensor
 * no layer produces / consumes). */
export interface GraphModel {
  names: string[]; layerOf: number[]; x: number[]; y: number[];
  links: { source: number; target: number; edge: D }[];
  layers: number; layoutMs: number; maxMs: number;
}

export function graphModel(graph: D): GraphModel {
  const t0 = performance.now();
  const nodes: D[] = graph.nodes;
  const vertex = new Map<number, number>();
  nodes.forEach((n, i) => vertex.set(n.id, i));
  const names = nodes.map((n) => n.name as string), layerOf = nodes.map((n) => n.id as number);
  const tensorVertex = new Map<string, number>();
  const io = (key: string, tensor: string) => {
    let v = tensorVertex.get(key);
    if (v === undefined) { v = names.length; tensorVertex.set(key, v); names.push(tensor); layerOf.push(-1); }
    return v;
  };
  const links: GraphModel["links"] = [];
  for (const e of graph.edges as D[]) {
    const s = e.from >= 0 ? vertex.get(e.from) : io(`in:${e.tensor}`, e.tensor);
    const t = e.to >= 0 ? vertex.get(e.to) : io(`out:${e.tensor}`, e.tensor);
    if (s !== undefined && t !== undefined) links.push({ source: s, target: t, edge: e });
  }
  const lay = layeredLayout(names.length, links.map((l) => [l.source, l.target] as const));
  const x = lay.slot.map((s, v) => (s - (lay.width[lay.layer[v]] - 1) / 2) * GAP_X);
  const y = lay.layer.map((l) => l * GAP_Y);
  const maxMs = Math.max(0, ...nodes.map((n) => n.average_ms ?? 0));
  return { names, layerOf, x, y, links, layers: lay.layers, maxMs, layoutMs: performance.now() - t0 };
}

function tip(p: D, m: GraphModel, layers: D[]): string {
  if (p.dataType === "edge") {
    const e = m.links[p.dataIndex].edge;
    const end = (i: number, word: string) => (i >= 0 ? esc(short(layers[i]?.name ?? String(i), 60)) : word);
    return `<b>${esc(e.tensor)}</b><br>${esc(e.dtype)} [${esc(dims(e.dims))}]<br>`
      + `<span style="color:#888">${end(e.from, "network input")} → ${end(e.to, "network output")}</span>`;
  }
  const li = m.layerOf[p.dataIndex];
  if (li < 0) return `<b>${esc(m.names[p.dataIndex])}</b><br>network input/output tensor`;
  const r = layers[li] ?? {};
  return `<b>${esc(r.name)}</b><br>${esc(r.type || "—")} · ${esc(r.precision ?? "—")}<br>`
    + `${ms4(r.average_ms)} ms per inference (${r.share_pct == null ? "—" : r.share_pct.toFixed(2)} %)`;
}

function option(m: GraphModel, layers: D[]): D {
  const precisions = [...new Set(m.layerOf.filter((i) => i >= 0).map((i) => layers[i]?.precision ?? "unknown"))];
  const cats = [...precisions.map((p) => ({ name: p, itemStyle: { color: PRECISION_COLORS[p] ?? (p === "unknown" ? UNKNOWN : OTHER) } })),
    { name: TENSOR_CAT, itemStyle: { color: TENSOR } }];
  const catIndex = new Map(cats.map((c, i) => [c.name, i]));
  const data = m.names.map((name, v) => {
    const li = m.layerOf[v];
    if (li < 0) {
      return { id: String(v), x: m.x[v], y: m.y[v], category: cats.length - 1, symbol: "diamond", symbolSize: 12,
        label: { position: "right", color: TENSOR }, text: short(name) };
    }
    const r = layers[li] ?? {}, avg = r.average_ms ?? 0;
    // width ∝ √share of the slowest layer's time, so small layers stay clickable
    const w = 16 + 90 * Math.sqrt(m.maxMs > 0 ? avg / m.maxMs : 0);
    return { id: String(v), x: m.x[v], y: m.y[v], category: catIndex.get(r.precision ?? "unknown"),
      symbol: "roundRect", symbolSize: [w, 16], text: `${short(name)}\n${ms4(r.average_ms)} ms · ${r.type || "—"}` };
  });
  return {
    tooltip: { confine: true, enterable: false, formatter: (p: D) => tip(p, m, layers) },
    legend: { top: 4, left: 10, data: cats.map((c) => c.name) },
    series: [{
      type: "graph", layout: "none", roam: true, categories: cats, data,
      nodeScaleRatio: 0, scaleLimit: { min: 0.2, max: 40 }, selectedMode: "single",
      label: { show: true, position: "right", fontSize: 11, lineHeight: 14, color: "#1d2330", formatter: (p: D) => p.data.text },
      labelLayout: { hideOverlap: true },
      edgeSymbol: ["none", "arrow"], edgeSymbolSize: 6,
      links: m.links.map((l) => ({ source: l.source, target: l.target,
        // edges that skip layers bow out so they do not run through the nodes in between
        lineStyle: { curveness: m.y[l.target] - m.y[l.source] > GAP_Y ? 0.25 : 0 } })),
      lineStyle: { color: "#8c95a6", width: 1, opacity: 0.8 },
      emphasis: { focus: "adjacency", lineStyle: { width: 2 } },
      select: { itemStyle: { borderColor: "#1d2330", borderWidth: 3 }, label: { fontWeight: "bold" } },
    }],
  };
}

/** Zoom and centre that show a deep graph from its top (or around `atY`) at READABLE_PX per
 * layer; zoom 1 = the whole graph. ECharts fits the nodes' box into 80 % of the chart in its
 * limiting direction, keeping the aspect, centred (no box options given). */
function readableView(chart: ECharts, m: GraphModel, atY?: number): { zoom: number; center: number[] } {
  const w = chart.getWidth(), h = chart.getHeight();
  const minX = Math.min(...m.x), maxX = Math.max(...m.x), maxY = Math.max(...m.y);
  const bw = maxX - minX || 2, bh = maxY || 2;  // ECharts widens an empty extent to 2
  const scale = bw / bh > w / h ? (0.8 * w) / bw : (0.8 * h) / bh;
  const zoom = Math.max(1, READABLE_PX / (scale * GAP_Y));
  const half = (h / 2 - 50) / (scale * zoom);  // data units from the view's centre to its top, less a margin
  const cy = atY === undefined ? half : Math.min(Math.max(atY, half), Math.max(half, maxY - half));
  return { zoom, center: [(minX + maxX) / 2, zoom === 1 ? maxY / 2 : cy] };
}

export interface GraphHandle { focus(layer: number): void }

export function EngineGraph({ graph, layers, onSelect, handle }: {
  graph: D; layers: D[]; onSelect: (layer: number) => void; handle: { current: GraphHandle | null };
}) {
  const wrap = useRef<HTMLDivElement>(null);
  const chart = useRef<ECharts | null>(null);
  const t0 = useRef(0);
  const m = useMemo(() => { t0.current = performance.now(); return graphModel(graph); }, [graph]);
  const opt = useMemo(() => option(m, layers), [m, layers]);
  const nLayers = m.layerOf.filter((i) => i >= 0).length;
  const view = (v: { zoom: number; center: number[] }) => chart.current?.setOption({ series: [{ zoom: v.zoom, center: v.center }] });
  const whole = () => view({ zoom: 1, center: [(Math.min(...m.x) + Math.max(...m.x)) / 2, Math.max(...m.y) / 2] });
  const top = () => chart.current && view(readableView(chart.current, m));
  handle.current = {
    focus(layer: number) {
      const v = m.layerOf.indexOf(layer);
      if (v < 0 || !chart.current) return;
      const rv = readableView(chart.current, m, m.y[v]);
      view({ zoom: rv.zoom, center: [m.x[v], rv.center[1]] });
      chart.current.dispatchAction({ type: "select", seriesIndex: 0, dataIndex: v });
    },
  };
  const ready = (c: ECharts) => {
    chart.current = c;
    c.on("click", (p: D) => { if (p.dataType === "node" && m.layerOf[p.dataIndex] >= 0) onSelect(m.layerOf[p.dataIndex]); });
    let first = true;
    c.on("finished", () => {
      const el = wrap.current;
      if (!el) return;
      // where each layer's node is on screen now (tests click them; roam moves them)
      const px = m.layerOf.flatMap((li, v) => (li < 0 ? [] : [c.convertToPixel({ seriesIndex: 0 }, [m.x[v], m.y[v]]).map(Math.round)]));
      el.dataset.px = JSON.stringify(px);
      if (first) { first = false; el.dataset.renderMs = (performance.now() - t0.current).toFixed(1); el.dataset.ready = "1"; }
    });
    const t = performance.now();
    top();  // after the handlers: ECharts renders (and fires "finished") inside setOption
    if (wrap.current) wrap.current.dataset.drawMs = (performance.now() - t).toFixed(1);  // one full redraw
  };
  return (
    <div id="trt-graph" ref={wrap} data-nodes={nLayers} data-tensors={m.names.length - nLayers}
      data-edges={m.links.length} data-depth={m.layers} data-layout-ms={m.layoutMs.toFixed(2)}>
      <div class="toolbar">
        <button id="trt-graph-top" type="button" onClick={top}>top, readable</button>
        <button id="trt-graph-fit" type="button" onClick={whole}>whole graph</button>
        <span class="dim">{nLayers} layers on {m.layers} levels · drag to pan, wheel to zoom, click a layer for its details</span>
      </div>
      <Chart option={opt} height={640} id="trt-graph-chart" onReady={ready} />
    </div>
  );
}
