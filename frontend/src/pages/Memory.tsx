import { useMemo, useState } from "preact/hooks";
import type { PageProps } from "../pageProps";
import { Chart } from "../chart";
import { Table, timeCol, type Column } from "../table";
import { bytes, bytesUnit, num, timeAxis, timeText, timeUnit } from "../format";

type D = Record<string, any>;
/** A size in the unit that fits it (format.ts `bytes`); the exact count in the title. */
const Size = ({ b }: { b: number | null | undefined }) => <span class="nowrap" title={b == null ? undefined : `${num(b)} B`}>{bytes(b)}</span>;

const ALLOC_COLS: Column<D>[] = [
  { key: "size_bytes", label: "size", num: true, value: (r) => r.size_bytes, render: (r) => <Size b={r.size_bytes} /> },
  timeCol("alloc_us", "allocated at", "at"),
  timeCol("free_us", "freed at", "at"),
  timeCol("lifetime_us", "lifetime"),
  { key: "operator", label: "operator", value: (r) => r.operator ?? "—" },
  { key: "step", label: "step", value: (r) => r.step ?? "—" },
];

const sizeCol = (key: string, label: string): Column<D> =>
  ({ key, label, num: true, value: (r) => r[key], render: (r) => <Size b={r[key]} /> });
const OP_COLS: Column<D>[] = [
  { key: "name", label: "operator", value: (r) => r.name },
  { key: "calls", label: "calls", num: true, value: (r) => r.calls, render: (r) => num(r.calls) },
  sizeCol("size_increase_bytes", "size increase"),
  sizeCol("self_size_increase_bytes", "self size increase"),
  { key: "allocation_count", label: "allocations", num: true, value: (r) => r.allocation_count, render: (r) => num(r.allocation_count) },
  { key: "self_allocation_count", label: "self allocations", num: true, value: (r) => r.self_allocation_count, render: (r) => num(r.self_allocation_count) },
  sizeCol("allocation_size_bytes", "allocation size"),
  sizeCol("self_allocation_size_bytes", "self allocation size"),
];

function curveOption(d: D) {
  const c = d.curve, t: number[] = c.t_us;
  // the axis in the unit of the largest value (an 8 B CPU peak is not 0.000008 MiB)
  const [unit, div] = bytesUnit([...c.allocated_bytes, ...(c.reserved_bytes ?? [])]);
  const alloc = t.map((x, i) => [x, c.allocated_bytes[i] / div]);
  const series: D[] = [{
    name: d.cumulative ? "recorded bytes (running sum)" : "allocated", type: "line", step: "end", showSymbol: false, data: alloc,
    markPoint: { symbol: "pin", symbolSize: 44, label: { formatter: "peak" },
      data: [{ name: "peak", coord: [d.peak_us, d.peak_allocated_bytes / div], value: bytes(d.peak_allocated_bytes) }] },
  }];
  if (c.reserved_bytes) series.push({ name: "reserved", type: "line", step: "end", showSymbol: false,
    data: t.map((x, i) => [x, c.reserved_bytes[i] / div]) });
  return {
    tooltip: { trigger: "axis", valueFormatter: (v: number) => bytes(v * div) },
    legend: { top: 0 },
    grid: { left: 80, right: 30, top: 36, bottom: 70 },
    xAxis: timeAxis(timeUnit(t), { min: "dataMin", max: "dataMax" }),
    yAxis: { type: "value", name: unit },
    dataZoom: [{ type: "inside", xAxisIndex: 0, filterMode: "none" }, { type: "slider", xAxisIndex: 0, filterMode: "none", bottom: 10 }],
    series,
  };
}

function categoryOption(m: D) {
  const cats: string[] = m.categories, t: number[] = m.t_us;
  // the stack's tallest point sets the axis unit
  const [unit, div] = bytesUnit((m.bytes as number[][]).map((row) => row.reduce((a, b) => a + b, 0)));
  return {
    tooltip: { trigger: "axis", valueFormatter: (v: number) => bytes(v * div) },
    legend: { type: "scroll", top: 0 },
    grid: { left: 80, right: 30, top: 36, bottom: 70 },
    xAxis: timeAxis(timeUnit(t), { min: "dataMin", max: "dataMax" }),
    yAxis: { type: "value", name: unit },
    dataZoom: [{ type: "inside", xAxisIndex: 0, filterMode: "none" }, { type: "slider", xAxisIndex: 0, filterMode: "none", bottom: 10 }],
    series: cats.map((cat, j) => ({ name: cat, type: "line", stack: "mem", areaStyle: {}, showSymbol: false, step: "end",
      data: t.map((x, i) => [x, m.bytes[i][j] / div]) })),
  };
}

export function Memory({ report }: PageProps) {
  const mem = report.memory;
  const devices: D[] = mem.devices ?? [];
  const [dev, setDev] = useState(() => Math.max(0, devices.findIndex((x) => x.device.startsWith("GPU"))));
  const d = devices[Math.min(dev, devices.length - 1)];
  const option = useMemo(() => (d ? curveOption(d) : null), [d]);
  const catOption = useMemo(() => (mem.categories ? categoryOption(mem.categories) : null), [mem]);
  return (
    <div class="page" id="page-memory">
      {mem.note && <p class="note" role="note" id="memory-note">{mem.note}</p>}
      {devices.length > 0 && <>
        <section class="cards">{devices.map((x, i) => (
          <div class={`card mem${i === dev ? " selected" : ""}`} key={x.device} data-device={x.device} onClick={() => setDev(i)}>
            <div class="label">{x.device}{x.cumulative ? " (running sum)" : ""}</div>
            <table class="kv"><tbody>
              <tr><td>peak allocated</td><td class="num" data-key="peak_allocated_bytes" ><Size b={x.peak_allocated_bytes} /></td></tr>
              <tr><td>peak reserved</td><td class="num" data-key="peak_reserved_bytes"><Size b={x.peak_reserved_bytes} /></td></tr>
              <tr><td>peak at</td><td class="num" data-key="peak_us">{timeText(x.peak_us)}</td></tr>
              <tr><td>peak step / operator</td><td data-key="peak_where">{x.peak_step ?? "—"} / {x.peak_operator ?? "—"}</td></tr>
              <tr><td>% of capacity</td><td class="num" data-key="peak_pct_of_capacity">{x.peak_pct_of_capacity == null ? "—" : `${x.peak_pct_of_capacity.toFixed(2)} %`}</td></tr>
              <tr><td>allocations / frees</td><td class="num" data-key="allocs">{num(x.allocations.count)} / {num(x.allocations.frees)}</td></tr>
              <tr><td>never freed</td><td class="num" data-key="unfreed">{num(x.allocations.unfreed_count)} (<Size b={x.allocations.unfreed_bytes} />)</td></tr>
            </tbody></table>
          </div>))}
        </section>
        <h2>Memory curve: <select id="memory-device" aria-label="memory curve of device" value={String(dev)} onChange={(e) => setDev(Number((e.target as HTMLSelectElement).value))}>
          {devices.map((x, i) => <option key={x.device} value={String(i)}>{x.device}</option>)}</select>
          <span class="dim"> (in <span id="memory-curve-unit">{option?.yAxis.name}</span>; wheel or the slider zooms; {num(d.curve.t_us.length)} points)</span></h2>
        <Chart key={`curve-${dev}`} option={option} height={320} id="memory-chart" />
      </>}
      {catOption && <>
        <h2>By category (peak <Size b={mem.categories.peak_bytes} /> at {timeText(mem.categories.peak_us)})</h2>
        <Chart option={catOption} height={320} id="memory-categories" />
      </>}
      {d && <>
        <h2>Largest allocations ({d.device})</h2>
        {d.allocations.largest.length === 0 ? <p class="dim">No allocation could be matched to its free in this trace.</p>
          : <Table key={`a-${dev}`} id="memory-allocations" rows={d.allocations.largest} cols={ALLOC_COLS} initialSort="size_bytes" />}
        {d.allocations.unfreed.length > 0 && <>
          <h2>Never freed in the trace</h2>
          <Table key={`u-${dev}`} id="memory-unfreed" rows={d.allocations.unfreed} cols={ALLOC_COLS} initialSort="size_bytes" />
        </>}
        <h2>Per operator ({d.device})</h2>
        <Table key={`o-${dev}`} id="memory-operators" rows={d.operators} cols={OP_COLS} searchKey={(r) => r.name} initialSort="allocation_size_bytes" />
      </>}
    </div>
  );
}
