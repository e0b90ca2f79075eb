import { useMemo, useState } from "preact/hooks";
import type { PageProps } from "../pageProps";
import { Chart } from "../chart";
import { Table, timeCol, type Column } from "../table";
import { num, pct, timeText, timeUnit } from "../format";
import { breakable } from "../names";

const PALETTE = ["#5470c6", "#91cc75", "#fac858", "#ee6666", "#73c0de", "#3ba272", "#fc8452", "#9a60b4", "#ea7ccc", "#999"];

type D = Record<string, any>;
/** 3 decimals (GFLOP, TFLOP/s, ...), thousands grouped as every figure. */
const dec3 = (x: number | null | undefined, d = 3) => num(x, d);
const short = (s: string) => (s.length > 70 ? s.slice(0, 33) + "…" + s.slice(-33) : s);

const POINT_COLS: Column<D>[] = [
  { key: "name", label: "name", value: (r) => r.name, render: (r) => <span class="kname">{breakable(r.name)}</span> },
  { key: "family", label: "family", value: (r) => r.family },
  { key: "dtype", label: "dtype", value: (r) => r.dtype ?? "—" },
  { key: "calls", label: "calls", num: true, value: (r) => r.calls, render: (r) => num(r.calls) },
  timeCol("time_us", "time"),
  { key: "gflop", label: "GFLOP", num: true, value: (r) => r.gflop, render: (r) => dec3(r.gflop) },
  { key: "tflops_per_s", label: "TFLOP/s", num: true, value: (r) => r.tflops_per_s, render: (r) => dec3(r.tflops_per_s) },
  { key: "gbytes_per_s", label: "GB/s", num: true, value: (r) => r.gbytes_per_s, render: (r) => dec3(r.gbytes_per_s) },
  { key: "intensity_flop_per_byte", label: "FLOP/B", num: true, value: (r) => r.intensity_flop_per_byte, render: (r) => dec3(r.intensity_flop_per_byte) },
  { key: "pct_roofline", label: "% of roofline", num: true, value: (r) => r.pct_roofline, render: (r) => pct(r.pct_roofline) },
  { key: "bound", label: "bound", value: (r) => r.bound ?? "—" },
  { key: "above_roof", label: "above its roof", value: (r) => r.above_roof ?? "",
    render: (r) => (r.above_roof ? <span class="above-roof">⚠ {r.above_roof}</span> : "") },
];
const STEP_COLS: Column<D>[] = [
  { key: "step", label: "step", value: (r) => r.step },
  { key: "device", label: "device", num: true, value: (r) => r.device },
  timeCol("duration_us", "duration"),
  { key: "model_gflop", label: "model GFLOP", num: true, value: (r) => r.model_gflop, render: (r) => dec3(r.model_gflop) },
  { key: "hardware_gflop", label: "hardware GFLOP", num: true, value: (r) => r.hardware_gflop, render: (r) => dec3(r.hardware_gflop) },
  { key: "peak_tflops", label: "peak TFLOP/s", num: true, value: (r) => r.peak_tflops, render: (r) => dec3(r.peak_tflops, 1) },
  { key: "mfu_pct", label: "MFU %", num: true, value: (r) => r.mfu_pct, render: (r) => dec3(r.mfu_pct) },
  { key: "hfu_pct", label: "HFU %", num: true, value: (r) => r.hfu_pct, render: (r) => dec3(r.hfu_pct) },
];
const NO_MODEL_COLS: Column<D>[] = [
  { key: "name", label: "launching operator", value: (r) => r.name },
  { key: "calls", label: "calls", num: true, value: (r) => r.calls, render: (r) => num(r.calls) },
  timeCol("time_us", "time"),
];
const SHAPE_COLS: Column<D>[] = [
  { key: "op", label: "operator", value: (r) => r.op },
  { key: "m", label: "M", num: true, value: (r) => r.m }, { key: "n", label: "N", num: true, value: (r) => r.n },
  { key: "k", label: "K", num: true, value: (r) => r.k }, { key: "dtype", label: "dtype", value: (r) => r.dtype ?? "—" },
  { key: "calls", label: "calls", num: true, value: (r) => r.calls, render: (r) => num(r.calls) },
  timeCol("time_us", "time"),
];

/** Log-log roofline: points sized by time; one roof per precision the device has a peak for. */
function rooflineOption(points: D[], dev: D | undefined, mainDtype: string | null) {
  const shown = points.filter((p) => p.intensity_flop_per_byte > 0 && p.tflops_per_s > 0);
  const maxT = Math.max(1, ...shown.map((p) => p.time_us));
  const xs = shown.map((p) => p.intensity_flop_per_byte);
  let xmin = Math.min(0.01, ...xs) / 2, xmax = Math.max(1e4, ...xs) * 2;
  const series: D[] = [];
  const families = [...new Set(shown.map((p) => p.family))];
  families.forEach((fam, i) => {
    series.push({
      name: fam, type: "scatter", color: PALETTE[i % PALETTE.length],
      // a point above its roof: a triangle with a dark outline, its reason in the tooltip
      data: shown.filter((p) => p.family === fam).map((p) => ({ value: [p.intensity_flop_per_byte, p.tflops_per_s], name: p.name, t: p.time_us,
        above: p.above_roof, ...(p.above_roof ? { symbol: "triangle", itemStyle: { borderColor: "#7a4d00", borderWidth: 2, opacity: 0.9 } } : {}) })),
      symbolSize: (_v: any, p: any) => 6 + 34 * Math.sqrt(p.data.t / maxT),
      itemStyle: { opacity: 0.7, borderColor: "#333", borderWidth: 0.5 },
      tooltip: { formatter: (p: any) => `${escapeText(short(p.data.name))}<br/>${p.data.value[1]} TFLOP/s at ${p.data.value[0]} FLOP/B, ${timeText(p.data.t)}`
        + (p.data.above ? `<br/><b>above its roof</b>: ${escapeText(p.data.above)}` : "") },
    });
  });
  if (dev && dev.peak_gbytes_per_s) {
    const bw = dev.peak_gbytes_per_s / 1000;  // TB/s: TFLOP/s = FLOP/B × TB/s
    // One roof per distinct peak among the run's precision and the usual ones (bf16 = fp16 on most parts).
    const roofs = new Map<number, string[]>();
    const used = new Set(shown.map((p) => p.dtype));  // every point has its own roof drawn
    for (const dt of ["fp4", "fp8", "bf16", "fp16", "tf32", "fp32", "fp64"]) {
      const peak = dev.peak_tflops?.[dt];
      if (peak == null || (dt !== mainDtype && dt !== "fp32" && !used.has(dt))) continue;
      roofs.set(peak, [...(roofs.get(peak) ?? []), dt]);
    }
    for (const [peak, dts] of roofs) {
      const main = mainDtype != null && dts.includes(mainDtype), dt = dts.join("/");
      const ridge = peak / bw;
      xmin = Math.min(xmin, ridge / 1000); xmax = Math.max(xmax, ridge * 10);
      series.push({
        name: `roof ${dt}`, type: "line", showSymbol: false, silent: true, z: 1,
        color: main ? "#d64545" : "#888", lineStyle: { width: main ? 2 : 1, type: main ? "solid" : "dashed" },
        data: [[xmin, xmin * bw], [ridge, peak], [xmax, peak]],
        endLabel: { show: true, formatter: `${dt} ${peak} TFLOP/s`, color: "#555" },
        markLine: { silent: true, symbol: "none", lineStyle: { type: "dotted", color: "#aaa" }, label: { formatter: `ridge ${ridge.toFixed(1)}` },
          data: [{ xAxis: ridge }] },
      });
    }
  }
  return {
    tooltip: { trigger: "item" },
    legend: { type: "scroll", top: 0 },
    grid: { left: 80, right: 160, top: 40, bottom: 50 },
    xAxis: { type: "log", name: "arithmetic intensity (FLOP/byte)", nameLocation: "middle", nameGap: 28, min: xmin, max: xmax },
    yAxis: { type: "log", name: "TFLOP/s", min: (v: any) => Math.min(v.min, 1e-3) },
    series,
  };
}

/** ECharts tooltips are HTML: trace names go in as text only. */
function escapeText(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

export function Efficiency({ report }: PageProps) {
  const e = report.efficiency;
  const [which, setWhich] = useState<"kernels" | "operators">(e.kernels.length ? "kernels" : "operators");
  const points: D[] = e[which];
  const dev: D | undefined = e.devices[0];
  const option = useMemo(() => rooflineOption(points, dev, e.mfu_dtype), [points, dev]);
  const families = Object.entries(e.time_by_family_us as Record<string, number>);
  const famUnit = timeUnit(families.map(([, v]) => v)), fp32 = timeUnit([e.fp32_matmul_us]);
  const above = points.filter((p) => p.above_roof);
  const plotted = points.filter((p) => p.intensity_flop_per_byte > 0 && p.tflops_per_s > 0).length;
  return (
    <div class="page" id="page-efficiency">
      <section class="cards">
        <div class="card"><div class="label">MFU ({e.mfu_dtype ?? "—"})</div><div class="big" id="mfu">{pct(e.mfu_pct)}</div><div class="unit">% of peak</div></div>
        <div class="card"><div class="label">HFU</div><div class="big" id="hfu">{pct(e.hfu_pct)}</div><div class="unit">% (with recomputation)</div></div>
        <div class="card"><div class="label">model work</div><div class="big" id="total-gflop">{dec3(e.total_gflop)}</div><div class="unit">GFLOP, {dec3(e.total_mbytes)} MB moved</div></div>
        <div class="card"><div class="label">time with a work model</div><div class="big" id="modelled-pct">{pct(e.modelled_time_pct)}</div><div class="unit">% of {timeText(e.time_us)} ({e.timed_on} time)</div></div>
        <div class="card"><div class="label">FP32 matmul time</div><div class="big" id="fp32-matmul">{fp32.fmt(e.fp32_matmul_us)}</div><div class="unit">{fp32.label}</div></div>
        {e.devices.map((d: D) => (
          <div class="card" key={d.device} data-device={d.device}><div class="label">device {d.device}: {d.name}</div>
            <div class="unit">peak: {d.peak_match ?? "unknown"} ({d.matched_by}); {d.peak_gbytes_per_s ?? "—"} GB/s;{" "}
              {Object.entries(d.peak_tflops ?? {}).filter(([, v]) => v != null).map(([k, v]) => `${k} ${v}`).join(", ")} TFLOP/s</div>
            {d.note && <p class="note" role="note" data-key="peak-note">{d.note}</p>}</div>))}
      </section>
      <h2>Roofline: <select id="roofline-points" aria-label="roofline points" value={which} onChange={(ev) => setWhich((ev.target as HTMLSelectElement).value as any)}>
        <option value="kernels">kernels</option><option value="operators">operators</option></select>
        <span class="dim"> ({plotted} of {points.length} points plotted; size = time)</span></h2>
      {!dev?.peak_gbytes_per_s && <p class="warn">No peak figures for this device: the roofs are not drawn.</p>}
      {above.length > 0 && <p class="warn" id="above-roof">{above.length} point{above.length > 1 ? "s sit" : " sits"} above
        {above.length > 1 ? " their" : " its"} roof (drawn as triangles): a measured rate cannot beat the hardware, so a premise is wrong
        ({[...new Set(above.map((p) => p.above_roof.split(":")[0]))].join(", ")}; see the table's last column).</p>}
      <Chart key={which} option={option} height={440} id="roofline-chart" />
      <Table key={`t-${which}`} id="efficiency-points" rows={points} cols={POINT_COLS} searchKey={(r) => r.name} initialSort="time_us" />
      <h2>Per step</h2>
      <Table id="efficiency-steps" rows={e.steps} cols={STEP_COLS} />
      <h2>Time by work family</h2>
      <table id="efficiency-families"><thead><tr><th>family</th><th class="num">{famUnit.label}</th></tr></thead>
        <tbody>{families.map(([f, v]) => <tr key={f} data-family={f}><td>{f}</td><td class="num" data-key="us">{famUnit.fmt(v)}</td></tr>)}</tbody></table>
      <h2>Time no work model covers</h2>
      <Table id="efficiency-no-model" rows={e.no_model} cols={NO_MODEL_COLS} initialSort="time_us" />
      {e.matmul_shapes.length > 0 && <><h2>Matmul shapes</h2>
        <Table id="efficiency-shapes" rows={e.matmul_shapes} cols={SHAPE_COLS} initialSort="time_us" /></>}
    </div>
  );
}
