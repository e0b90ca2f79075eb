// The layer selected in the engine graph (or the layers table): its numbers, decoded name
// and kernel, and the tensors it reads and writes (neighbours are links that select them).
import { ms4 } from "../format";
import { dims } from "./EngineGraph";
import { breakable } from "../names";

type D = Record<string, any>;

function End({ layer, layers, word, onSelect }: { layer: number; layers: D[]; word: string; onSelect: (i: number) => void }) {
  if (layer < 0) return <span class="dim">{word}</span>;
  return <a href="#" class="kname layer-link" data-index={layer}
    onClick={(e) => { e.preventDefault(); onSelect(layer); }}>{layers[layer]?.name ?? String(layer)}</a>;
}

export function LayerDetail({ index, layers, edges, onSelect }: {
  index: number; layers: D[]; edges: D[]; onSelect: (i: number) => void;
}) {
  const r = layers[index];
  if (!r) return null;
  const ins = edges.filter((e) => e.to === index);
  const outs = new Map<string, { e: D; to: number[] }>();  // one row per tensor, all its consumers
  for (const e of edges) if (e.from === index) {
    const o = outs.get(e.tensor) ?? { e, to: [] };
    o.to.push(e.to); outs.set(e.tensor, o);
  }
  const dec = r.decoded ?? {}, k = r.kernel;
  return (
    <div id="trt-layer-detail" class="layer-detail" data-index={index}>
      <h3 id="trt-detail-name" class="kname">{breakable(r.name)}</h3>
      <table class="kv"><tbody>
        <tr><td>type</td><td id="trt-detail-type">{r.type || "—"}</td></tr>
        <tr><td>precision</td><td id="trt-detail-precision">{r.precision ?? "—"}</td></tr>
        <tr><td>avg ms</td><td id="trt-detail-avg">{ms4(r.average_ms)}</td></tr>
        <tr><td>median ms</td><td>{ms4(r.median_ms)}</td></tr>
        <tr><td>share %</td><td id="trt-detail-share">{r.share_pct == null ? "—" : r.share_pct.toFixed(2)}</td></tr>
        {r.gpu_ms != null && <tr><td>GPU ms (nsys)</td><td>{ms4(r.gpu_ms)}</td></tr>}
        <tr><td>tactic</td><td class="kname">{breakable(r.tactic || "—")}</td></tr>
        {k && <tr><td>kernel</td><td id="trt-detail-kernel">{k.summary}</td></tr>}
        <tr><td>name decoded</td><td id="trt-detail-decoded">{dec.summary ?? "—"}</td></tr>
        {(dec.ops?.length ?? 0) > 0 && <tr><td>ops</td><td id="trt-detail-ops">{dec.ops.join(" → ")}</td></tr>}
        {(dec.idioms?.length ?? 0) > 0 && <tr><td>idioms</td><td>{dec.idioms.join(", ")}</td></tr>}
        {r.onnx_nodes?.length > 0 && <tr><td>ONNX nodes</td><td class="kname">{r.onnx_nodes.join(", ")}</td></tr>}
        <tr><td>formats</td><td>{(r.input_formats ?? []).join(", ") || "—"} → {(r.output_formats ?? []).join(", ") || "—"}</td></tr>
      </tbody></table>
      <h4>Inputs</h4>
      <table id="trt-detail-inputs"><thead><tr><th>tensor</th><th>dtype</th><th>dims</th><th>from</th></tr></thead>
        <tbody>{ins.map((e, i) => <tr key={i}><td class="kname">{breakable(e.tensor)}</td><td>{e.dtype}</td><td class="dims">{dims(e.dims)}</td>
          <td><End layer={e.from} layers={layers} word="network input" onSelect={onSelect} /></td></tr>)}</tbody></table>
      <h4>Outputs</h4>
      <table id="trt-detail-outputs"><thead><tr><th>tensor</th><th>dtype</th><th>dims</th><th>to</th></tr></thead>
        <tbody>{[...outs.values()].map(({ e, to }, i) => <tr key={i}><td class="kname">{breakable(e.tensor)}</td><td>{e.dtype}</td><td class="dims">{dims(e.dims)}</td>
          <td>{to.map((t, j) => <div key={j}><End layer={t} layers={layers} word="network output" onSelect={onSelect} /></div>)}</td></tr>)}</tbody></table>
    </div>
  );
}
