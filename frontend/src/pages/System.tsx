// The system view of a monitored run beside the trace (`stepscope run --monitor`; the report's
// `system` key, docs/monitor.md): the verdict with its evidence, the main process's phases, and
// the sampled series over the run with the verdict's steady window shaded.
import { useMemo } from "preact/hooks";
import type { PageProps } from "../pageProps";
import { Chart } from "../chart";
import { bytes as formatBytes } from "../format";

type D = Record<string, any>;
const PHASES = ["data", "forward", "backward", "optimizer", "sync", "collective"];
const PHASE_COLORS = ["#e15759", "#4e79a7", "#76b7b2", "#59a14f", "#edc948", "#b07aa1"];

/** Bytes (or bytes/s) in binary units, 2 decimals. */
export function bytes(x: number | null | undefined, perSecond = false): string {
  const text = formatBytes(x);
  return x == null || !perSecond ? text : `${text}/s`;
}

/** A metric value in its unit ("%", "B", "B/s", "W", "1/s"). */
function inUnit(v: number | null | undefined, unit: string): string {
  if (v == null) return "—";
  if (unit === "B") return bytes(v);
  if (unit === "B/s") return bytes(v, true);
  if (unit === "%") return `${v.toFixed(2)} %`;
  return `${v.toFixed(2)} ${unit}`;
}

/** Evidence keys as the verdict writes them: shares (0-1) and *_pct read as %, rates in units. */
function evidenceText(key: string, v: number): string {
  if (key.endsWith("_pct")) return `${v.toFixed(2)} %`;
  if (/^main_|_share$|^worker_demand$|^worker_io$/.test(key)) return `${(100 * v).toFixed(2)} %`;
  if (key === "read_bytes_per_s") return bytes(v, true);
  if (key === "window_s") return `${v.toFixed(3)} s`;
  return Number.isInteger(v) ? String(v) : v.toFixed(3);
}

const LABELS: Record<string, string> = {
  cpu: "host CPU (% of all cores)", main_cpu: "main process", workers_cpu: "DataLoader workers",
  others_cpu: "other processes", iowait: "iowait", main_rss: "main process", workers_rss: "DataLoader workers",
  disk_read: "disk read", disk_write: "disk write", net_recv: "network in", net_sent: "network out",
  tree_read: "program read",
};

const chunks = <T,>(xs: T[], n: number): T[][] => Array.from({ length: Math.ceil(xs.length / n) }, (_, i) => xs.slice(i * n, i * n + n));

interface Panel { id: string; title: string; keys: string[]; unit: string; stack?: boolean; colors?: string[] }

function panels(series: D): Panel[] {
  const gpu = Object.keys(series).filter((k) => /^gpu\d+_/.test(k) && series[k].unit === "%");
  const all: Panel[] = [
    { id: "system-phases", title: "Main process: share of time in each phase (%)", unit: "%", stack: true,
      keys: PHASES.map((p) => `${p}_pct`), colors: PHASE_COLORS },
    { id: "system-cpu", title: "Program CPU (% of one core)", unit: "%", keys: ["main_cpu", "workers_cpu", "others_cpu"] },
    { id: "system-host", title: "Host CPU and iowait (% of all cores)", unit: "%", keys: ["cpu", "iowait"] },
    { id: "system-gpu", title: "GPUs (%)", unit: "%", keys: gpu },
    { id: "system-rss", title: "Resident memory", unit: "B", keys: ["main_rss", "workers_rss"] },
    { id: "system-io", title: "Storage and network", unit: "B/s", keys: ["disk_read", "disk_write", "tree_read", "net_recv", "net_sent"] },
  ];
  return all.map((p) => ({ ...p, keys: p.keys.filter((k) => series[k]) })).filter((p) => p.keys.length > 0);
}

const MIB = 1048576;

function panelOption(p: Panel, charts: D, window: D) {
  const t: number[] = charts.t_s;
  // bytes are drawn in MiB (round ticks), rates in MiB/s; the tooltip says each value in its unit
  const scale = p.unit === "B" || p.unit === "B/s" ? MIB : 1;
  const axisName = p.unit === "B" ? "MiB" : p.unit === "B/s" ? "MiB/s" : p.unit;
  return {
    tooltip: { trigger: "axis", valueFormatter: (v: number | null) => (v == null ? "—" : inUnit(v * scale, p.unit)) },
    legend: { top: 0, type: "scroll" },
    grid: { left: 70, right: 24, top: 30, bottom: 28 },
    xAxis: { type: "value", name: "s", min: 0, max: Math.ceil(t[t.length - 1] ?? 1) },
    yAxis: { type: "value", name: axisName, min: 0, max: p.unit === "%" ? 100 : undefined },
    series: p.keys.map((k, i) => ({
      // phases are not stacked: the main thread is in one at a time, so the lines never add up
      name: LABELS[k] ?? k.replace(/_pct$/, "").replace(/_/g, " "), type: "line", showSymbol: false,
      areaStyle: p.stack && i === 0 ? { opacity: 0.25 } : undefined,
      color: p.colors?.[PHASES.indexOf(k.replace(/_pct$/, ""))] ?? undefined,
      data: charts.series[k].values.map((v: number | null, j: number) => [t[j], v == null ? null : v / scale]),
      ...(i === 0 && window.start_s != null ? { markArea: { silent: true, itemStyle: { color: "rgba(58,123,213,0.10)" },
        label: { show: true, position: "insideTop", color: "#5b6577", formatter: "steady window" },
        data: [[{ xAxis: window.start_s }, { xAxis: window.end_s }]] } } : {}),
    })),
  };
}

export function System({ report }: PageProps) {
  const s: D = report.system;
  const list = useMemo(() => (s?.charts ? panels(s.charts.series) : []), [report]);
  const options = useMemo(() => list.map((p) => panelOption(p, s.charts, s.window)), [list]);
  if (s?.error) return <div class="page" id="page-system"><p class="warn" id="system-error">{s.error}</p></div>;
  const v = s.verdict, th = s.throughput;
  const phases = Object.entries((s.phases ?? {}) as Record<string, number>);
  const metrics = Object.entries((s.metrics ?? {}) as Record<string, D>);
  return (
    <div class="page" id="page-system">
      <p class="dim">From <span class="kname">{s.file}</span>: {s.samples} samples at {s.hz} Hz over {s.duration_s} s
        of <span class="kname">{s.command}</span>; {s.cores} cores{s.gpus.length ? `; ${s.gpus.join(", ")}` : "; no GPU"}.</p>
      <section class="cards">
        <div class="card"><div class="label">bound</div><div class="big" id="system-bound">{v.bound ?? "—"}</div>
          <div class="unit" id="system-confidence">{v.confidence} confidence</div></div>
        <div class="card"><div class="label">steady window</div><div class="big" id="system-window">{s.window.seconds.toFixed(3)}</div>
          <div class="unit">s ({s.window.from_steps ? "from the first to the last step" : "the whole run"})</div></div>
        <div class="card"><div class="label">throughput</div><div class="big" id="system-steps">{th.steps_per_s.toFixed(2)}</div>
          <div class="unit">steps/s; {th.samples_per_s.toFixed(2)} samples/s ({th.steps} steps)</div></div>
      </section>
      <p id="system-reason"><b>why:</b> {v.reason}</p>
      <p class="note" role="note" id="system-next"><b>next step:</b> {v.next_step}</p>
      {phases.length > 0 && <><h2>Main process over the steady window</h2>
        <div class="phasebar" id="system-phasebar" role="img" aria-label={phases.map(([k, x]) => `${k} ${(100 * x).toFixed(1)} %`).join(", ")}>
          {phases.map(([k, x]) => x > 0 && <span key={k} data-phase={k} title={`${k}: ${(100 * x).toFixed(2)} %`}
            style={{ width: `${100 * x}%`, background: PHASE_COLORS[PHASES.indexOf(k)] ?? "#999" }}>{x >= 0.08 ? k : ""}</span>)}
        </div></>}
      <h2>Evidence</h2>
      <div class="cards" id="system-evidence">{chunks(Object.entries(v.evidence as Record<string, number>), 8).map((rows, i) => (
        <table class="kv" key={i}><tbody>{rows.map(([k, x]) => (
          <tr key={k} data-key={k}><td>{k.replace(/_/g, " ")}</td><td class="num">{evidenceText(k, x)}</td></tr>))}</tbody></table>))}</div>
      <h2>Over the run <span class="dim">({s.charts.bucket_s} s per point; the shaded band is the steady window the verdict reads)</span></h2>
      {list.map((p, i) => <div key={p.id}><h3 class="chart-title">{p.title}</h3><Chart option={options[i]} height={170} id={p.id} /></div>)}
      <h2>Metrics over the whole run</h2>
      <table id="system-metrics"><thead><tr><th scope="col">metric</th><th scope="col" class="num">mean</th><th scope="col" class="num">p50</th>
        <th scope="col" class="num">p95</th><th scope="col" class="num">max</th></tr></thead>
        <tbody>{metrics.map(([k, m]) => <tr key={k} data-key={k}><td>{k.replace(/_/g, " ")} <span class="dim">({m.unit})</span></td>
          {(["mean", "p50", "p95", "max"] as const).map((q) => <td key={q} class="num" data-q={q}>{inUnit(m[q], m.unit)}</td>)}</tr>)}</tbody></table>
    </div>
  );
}
