import { useMemo, useState } from "preact/hooks";
import type { PageProps } from "../pageProps";
import { Table, timeCol, type Column } from "../table";
import { color, dur } from "../format";
import { breakable } from "../names";

type D = Record<string, any>;
/** nsys figures as nsys prints them: integers as is, averages with one decimal. */
export const nsNum = (x: any) => (typeof x !== "number" ? (x ?? "—") : Number.isInteger(x) ? String(x) : x.toFixed(1));

const SUMMARIES: [string, string][] = [
  ["cuda_gpu_kern_sum", "GPU kernels"], ["cuda_api_sum", "CUDA API"], ["cuda_gpu_mem_time_sum", "GPU memory operations (time)"],
  ["cuda_gpu_mem_size_sum", "GPU memory operations (size)"], ["nvtx_sum", "NVTX ranges"], ["nvtx_gpu_proj_sum", "NVTX ranges projected onto the GPU"],
  ["osrt_sum", "OS runtime"], ["nccl_sum", "NCCL"],
];
const LABEL = (k: string) => k.replace(/_ns$/, " (ns)").replace(/_bytes$/, " (B)").replace(/_pct$/, " %").replace(/_/g, " ");

function columnsOf(rows: D[]): Column<D>[] {
  return Object.keys(rows[0]).filter((k) => k !== "mangled").map((k) => {
    const isNum = typeof rows[0][k] === "number";
    return isNum
      ? { key: k, label: LABEL(k), num: true, value: (r: D) => r[k], render: (r: D) => nsNum(r[k]) }
      : { key: k, label: LABEL(k), value: (r: D) => r[k] ?? "—", render: k === "name" ? (r: D) => <span class="kname" title={r.mangled ?? r.name}>{breakable(r.name)}</span> : undefined };
  });
}

function Summaries({ nsys }: { nsys: D }) {
  const present = SUMMARIES.filter(([k]) => (nsys[k]?.length ?? 0) > 0);
  const [which, setWhich] = useState(present[0]?.[0] ?? "");
  const rows: D[] = nsys[which] ?? [];
  const cols = useMemo(() => (rows.length ? columnsOf(rows) : []), [which]);
  return (
    <>
      <div class="tabs" id="nsys-tabs">{present.map(([k, label]) => (
        <button key={k} id={`tab-${k}`} class={k === which ? "active" : ""} onClick={() => setWhich(k)}>{label} ({nsys[k].length})</button>))}</div>
      {rows.length > 0 && <Table key={which} id="nsys-summary" rows={rows} cols={cols}
        searchKey={(r) => String(r.name ?? r.operation ?? "")} initialSort={"total_ns" in rows[0] ? "total_ns" : "total_proj_ns" in rows[0] ? "total_proj_ns" : "total_bytes"} />}
    </>
  );
}

/** NVTX ranges as lanes per thread; nested ranges stack downwards. */
function NvtxView({ ranges, total }: { ranges: D[]; total: number }) {
  const lay = useMemo(() => {
    const t0 = Math.min(...ranges.map((r) => r.start_ns)), t1 = Math.max(...ranges.map((r) => r.start_ns + r.duration_ns));
    const byThread = new Map<string, D[]>();
    for (const r of ranges) { const k = `${r.pid}/${r.tid}`; const l = byThread.get(k) ?? []; l.push(r); byThread.set(k, l); }
    const lanes: { key: string; y: number; depth: number; boxes: { r: D; depth: number }[] }[] = [];
    let y = 0;
    for (const [key, rs] of [...byThread].sort()) {
      rs.sort((a, b) => a.start_ns - b.start_ns || b.duration_ns - a.duration_ns);
      const open: number[] = [], boxes: { r: D; depth: number }[] = [];
      let depth = 0;
      for (const r of rs) {
        while (open.length && open[open.length - 1] <= r.start_ns) open.pop();
        boxes.push({ r, depth: open.length });
        depth = Math.max(depth, open.length + 1);
        open.push(r.start_ns + r.duration_ns);
      }
      lanes.push({ key, y, depth, boxes });
      y += depth + 1;
    }
    return { t0, span: Math.max(1, t1 - t0), lanes, rows: y };
  }, [ranges]);
  const W = 1000, H = 14;
  return (
    <div id="nvtx-view">
      <p class="dim">{ranges.length} of {total} ranges shown{ranges.length < total ? " (the longest)" : ""}; span {dur(lay.span)}. Hover a range for its name.</p>
      <div class="nvtx-scroll"><div class="flame-wrap">
      <svg viewBox={`0 0 ${W} ${lay.rows * H}`} width="100%" height={lay.rows * H} preserveAspectRatio="none" class="nvtx">
        {lay.lanes.map((l) => (
          <g key={l.key} data-thread={l.key}>
            <rect x={0} y={l.y * H} width={W} height={H} fill="#f4f5f7" />
            {l.boxes.map((b, i) => (
              <rect key={i} class="range" x={((b.r.start_ns - lay.t0) / lay.span) * W} y={(l.y + 1 + b.depth) * H} height={H - 1}
                width={Math.max(0.3, (b.r.duration_ns / lay.span) * W)} fill={color(b.r.name)}>
                <title>{`${b.r.name}\n${dur(b.r.duration_ns)}${b.r.payload != null ? `, payload ${b.r.payload}` : ""}`}</title>
              </rect>))}
          </g>))}
      </svg>
      <div class="flame-labels">{lay.lanes.map((l) => <span key={l.key} class="dim" style={{ top: `${l.y * H - 3}px` }}>thread {l.key}</span>)}</div>
      </div></div>
    </div>
  );
}

const pctCell = (k: string, label: string): Column<D> => ({ key: k, label, num: true, value: (r) => r[k], render: (r) => (r[k] == null ? "—" : r[k].toFixed(2)) });
const NCU_COLS: Column<D>[] = [
  { key: "id", label: "id", num: true, value: (r) => r.id },
  { key: "name", label: "kernel", value: (r) => r.name, render: (r) => <span class="kname">{breakable(r.name)}</span> },
  { key: "duration_ns", label: "duration ns", num: true, value: (r) => r.duration_ns, render: (r) => nsNum(r.duration_ns) },
  pctCell("sm_throughput_pct", "SM %"), pctCell("memory_throughput_pct", "memory %"), pctCell("dram_throughput_pct", "DRAM %"),
  pctCell("achieved_occupancy_pct", "achieved occ. %"), pctCell("theoretical_occupancy_pct", "theoretical occ. %"),
  { key: "occupancy_limiter", label: "occupancy limiter", value: (r) => r.occupancy_limiter ?? "—" },
  { key: "registers_per_thread", label: "regs", num: true, value: (r) => r.registers_per_thread ?? "—" },
  pctCell("tensor_pipe_pct", "tensor pipe %"), pctCell("best_speedup_pct", "best speed-up %"),
  timeCol("estimated_saving_us", "saving"),
  { key: "rules", label: "ncu rules", value: (r) => r.rules.length, render: (r) => <span title={r.rules.map((x: D) => `${x.type} ${x.name}: ${x.description}`).join("\n")}>{r.rules.map((x: D) => x.name).join(", ") || "—"}</span> },
];

export function Nsight({ report }: PageProps) {
  const nsys = report.nsys, ncu = report.ncu;
  return (
    <div class="page" id="page-nsight">
      {nsys && <>
        <h2>Nsight Systems summaries <span class="dim">({nsys.export.producer ?? "nsys"}, export schema {nsys.export.schema_version ?? "?"})</span></h2>
        {nsys.export.diagnostics.length > 0 && <ul class="warn" id="nsys-diagnostics">{nsys.export.diagnostics.map((d: string, i: number) => <li key={i}>{d}</li>)}</ul>}
        <Summaries nsys={nsys} />
        {nsys.nvtx_ranges.length > 0 && <><h2>NVTX ranges</h2><NvtxView ranges={nsys.nvtx_ranges} total={nsys.nvtx_ranges_total} /></>}
      </>}
      {ncu && <>
        <h2>Nsight Compute kernels <span class="dim">({ncu.kernels.length} launches, {ncu.matched} matched to this trace)</span></h2>
        <Table id="ncu-table" rows={ncu.kernels} cols={NCU_COLS} searchKey={(r) => r.name} initialSort="duration_ns" />
      </>}
    </div>
  );
}
