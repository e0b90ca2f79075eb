import { useMemo, useState } from "preact/hooks";
import type { PageProps } from "../pageProps";
import { Table, timeCol, type Column } from "../table";
import { Chart } from "../chart";
import { pct, timeText } from "../format";

type K = Record<string, any>;
const dims = (d: number[] | null) => (d ? `[${d.join(", ")}]` : "—");
const COLS: Column<K>[] = [
  { key: "name", label: "kernel", value: (r) => r.name, render: (r) => <span class="kname" title={r.name}>{r.name}</span> },
  { key: "calls", label: "calls", num: true, value: (r) => r.calls },
  timeCol("total_us", "total"),
  timeCol("mean_us", "mean"),
  timeCol("min_us", "min"),
  timeCol("max_us", "max"),
  { key: "blocks_per_sm", label: "blocks/SM", num: true, value: (r) => r.blocks_per_sm, render: (r) => pct(r.blocks_per_sm) },
  { key: "achieved_occupancy_pct", label: "occupancy %", num: true, value: (r) => r.achieved_occupancy_pct, render: (r) => pct(r.achieved_occupancy_pct) },
  { key: "tensor_cores", label: "Tensor Cores", value: (r) => (r.tensor_cores ? "yes" : "no") },
  { key: "grid", label: "grid", value: (r) => dims(r.grid) },
  { key: "block", label: "block", value: (r) => dims(r.block) },
  { key: "registers_per_thread", label: "regs", num: true, value: (r) => r.registers_per_thread ?? "—" },
  { key: "shared_memory_bytes", label: "smem B", num: true, value: (r) => r.shared_memory_bytes ?? "—" },
];

const BY_OP: Column<K>[] = [
  { key: "kernel", label: "kernel", value: (r) => r.kernel, render: (r) => <span class="kname">{r.kernel}</span> },
  { key: "operator", label: "operator", value: (r) => r.operator },
  { key: "calls", label: "calls", num: true, value: (r) => r.calls },
  timeCol("total_us", "total"),
  timeCol("mean_us", "mean"),
  timeCol("min_us", "min"),
  timeCol("max_us", "max"),
];

export function Kernels({ report }: PageProps) {
  const [group, setGroup] = useState<"kernel" | "op">("kernel");
  const option = useMemo(() => {
    const ks = [...report.kernels].sort((a: K, b: K) => b.total_us - a.total_us);
    const top = ks.slice(0, 10).map((k: K) => ({ name: k.name.length > 60 ? k.name.slice(0, 28) + "…" + k.name.slice(-28) : k.name, value: k.total_us }));
    const rest = ks.slice(10).reduce((s: number, k: K) => s + k.total_us, 0);
    if (rest > 0) top.push({ name: "other kernels", value: +rest.toFixed(3) });
    return { tooltip: { trigger: "item", valueFormatter: timeText }, series: [{ type: "pie", radius: ["35%", "70%"], data: top, label: { show: true, width: 220, overflow: "truncate" } }] };
  }, [report]);
  return (
    <div class="page" id="page-kernels">
      <h2>Kernels (share of GPU kernel time)</h2>
      {report.kernels.length === 0 ? <p>No GPU kernels in this trace.</p> : <Chart option={option} height={300} id="kernels-chart" />}
      <label>group by <select id="kernel-group" value={group} onChange={(e) => setGroup((e.target as HTMLSelectElement).value as any)}>
        <option value="kernel">kernel</option><option value="op">kernel + operator</option></select></label>
      {group === "kernel"
        ? <Table key="k" id="kernels-table" rows={report.kernels} cols={COLS} searchKey={(r) => r.name} initialSort="total_us" />
        : <Table key="ko" id="kernel-ops-table" rows={report.kernels_by_operator ?? []} cols={BY_OP} searchKey={(r) => `${r.kernel} ${r.operator}`} initialSort="total_us" />}
    </div>
  );
}
