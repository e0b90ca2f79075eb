import { useMemo, useState } from "preact/hooks";
import type { PageProps } from "../pageProps";
import { Table, timeCol, type Column } from "../table";
import { Chart } from "../chart";
import { num, pct, timeText } from "../format";
import { breakable } from "../names";

type K = Record<string, any>;
const dims = (d: number[] | null) => (d ? `[${d.join(", ")}]` : "—");
/** A row merging several launch configurations names none of them (the grouping by
 * configuration shows each). */
const many = (r: K) => (r.configs ?? 1) > 1;
const cfgCell = (key: "grid" | "block") => (r: K) => (many(r)
  ? <span class="dim" title={`most frequent: ${dims(r[key])}; group by launch configuration for each`}>{r.configs} configs</span>
  : dims(r[key]));

// total alone (it sums calls); mean | min | max are per-call times: one unit for the three
const TIMES = <T extends K>(): Column<T>[] => [
  timeCol("total_us", "total"), timeCol("mean_us", "mean", "call"), timeCol("min_us", "min", "call"), timeCol("max_us", "max", "call"),
];
const COLS: Column<K>[] = [
  { key: "name", label: "kernel", value: (r) => r.name, render: (r) => <span class="kname" title={r.name}>{breakable(r.name)}</span> },
  { key: "calls", label: "calls", num: true, value: (r) => r.calls, render: (r) => num(r.calls) },
  ...TIMES<K>(),
  { key: "blocks_per_sm", label: "blocks/SM", num: true, value: (r) => r.blocks_per_sm, render: (r) => pct(r.blocks_per_sm) },
  { key: "achieved_occupancy_pct", label: "occupancy %", num: true, value: (r) => r.achieved_occupancy_pct, render: (r) => pct(r.achieved_occupancy_pct) },
  { key: "tensor_cores", label: "Tensor Cores", value: (r) => (r.tensor_cores ? "yes" : "no") },
  { key: "grid", label: "grid", value: (r) => (many(r) ? `~${r.configs}` : dims(r.grid)), render: cfgCell("grid") },
  { key: "block", label: "block", value: (r) => (many(r) ? `~${r.configs}` : dims(r.block)), render: cfgCell("block") },
  { key: "registers_per_thread", label: "regs", num: true, value: (r) => (many(r) ? null : r.registers_per_thread), render: (r) => (many(r) ? "—" : r.registers_per_thread ?? "—") },
  { key: "shared_memory_bytes", label: "smem B", num: true, value: (r) => (many(r) ? null : r.shared_memory_bytes), render: (r) => (many(r) ? "—" : r.shared_memory_bytes ?? "—") },
];

const BY_OP: Column<K>[] = [
  { key: "kernel", label: "kernel", value: (r) => r.kernel, render: (r) => <span class="kname">{breakable(r.kernel)}</span> },
  { key: "operator", label: "operator", value: (r) => r.operator },
  { key: "calls", label: "calls", num: true, value: (r) => r.calls, render: (r) => num(r.calls) },
  ...TIMES<K>(),
];

/** Ten distinct hues (Tableau 10) for the ten longest kernels, grey for the rest: no colour repeats. */
export const SLICE_COLORS = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#2f4b7c"];
const OTHER = "#bab0ac";
const TOP = 10;

export function Kernels({ report }: PageProps) {
  const [group, setGroup] = useState<"kernel" | "config" | "op">("kernel");
  const slices = useMemo(() => {
    const ks = [...report.kernels].sort((a: K, b: K) => b.total_us - a.total_us);
    const all = ks.reduce((s: number, k: K) => s + k.total_us, 0) || 1;
    const top = ks.slice(0, TOP).map((k: K, i: number) => ({ name: k.name, value: k.total_us, color: SLICE_COLORS[i], share: (100 * k.total_us) / all }));
    const rest = ks.slice(TOP).reduce((s: number, k: K) => s + k.total_us, 0);
    if (rest > 0) top.push({ name: `other kernels (${ks.length - TOP})`, value: rest, color: OTHER, share: (100 * rest) / all });
    return top;
  }, [report]);
  // no labels on the ring (long names collide): the legend beside it names every slice
  const option = useMemo(() => ({
    tooltip: { trigger: "item", valueFormatter: timeText },
    series: [{ type: "pie", radius: ["40%", "75%"], label: { show: false }, labelLine: { show: false },
      data: slices.map((s) => ({ name: s.name, value: s.value, itemStyle: { color: s.color } })) }],
  }), [slices]);
  const byConfig: K[] | undefined = report.kernels_by_config;
  return (
    <div class="page" id="page-kernels">
      <h2>Share of GPU kernel time</h2>
      {report.kernels.length === 0 ? <p>No GPU kernels in this trace.</p> : <div class="kernel-chart">
        <Chart option={option} height={260} id="kernels-chart" />
        <ul class="legend" id="kernels-legend" aria-label="kernels in the chart">{slices.map((s) => (
          <li key={s.name} data-color={s.color}><span class="swatch" style={{ background: s.color }} />
            <span class="name" title={s.name}>{s.name}</span><span class="share">{s.share.toFixed(2)} %</span></li>))}</ul>
      </div>}
      <h2>Kernels</h2>
      <label>group by <select id="kernel-group" value={group} onChange={(e) => setGroup((e.target as HTMLSelectElement).value as any)}>
        <option value="kernel">kernel</option>
        {byConfig && <option value="config">kernel + launch configuration</option>}
        <option value="op">kernel + operator</option></select></label>
      {group === "kernel"
        ? <Table key="k" id="kernels-table" rows={report.kernels} cols={COLS} searchKey={(r) => r.name} initialSort="total_us" />
        : group === "config"
        ? <Table key="kc" id="kernel-configs-table" rows={byConfig ?? []} cols={COLS} searchKey={(r) => r.name} initialSort="total_us" />
        : <Table key="ko" id="kernel-ops-table" rows={report.kernels_by_operator ?? []} cols={BY_OP} searchKey={(r) => `${r.kernel} ${r.operator}`} initialSort="total_us" />}
    </div>
  );
}
