import { useMemo } from "preact/hooks";
import type { PageProps } from "../pageProps";
import { Chart } from "../chart";
import { num, pct, pctUnit, timeAxis, timeUnit } from "../format";
import { FindingCard } from "./FindingCard";

const CAT_COLORS = ["#5470c6", "#91cc75", "#fac858", "#ee6666", "#73c0de", "#3ba272", "#fc8452", "#9a60b4", "#ea7ccc", "#999"];

export function Overview({ report, config }: PageProps) {
  const cats = Object.keys(report.breakdown.avg_us);
  const option = useMemo(() => {
    const u = timeUnit(report.steps.map((s: any) => s.duration_us));  // the longest step's unit
    return {
      tooltip: { trigger: "axis", axisPointer: { type: "shadow" }, valueFormatter: u.text },
      legend: { type: "scroll", top: 0 },
      grid: { left: 70, right: 20, top: 40, bottom: 30 },
      xAxis: { type: "category", data: report.steps.map((s: any) => s.name) },
      yAxis: timeAxis(u),
      color: CAT_COLORS,
      series: cats.map((c) => ({ name: c, type: "bar", stack: "step", data: report.steps.map((s: any) => s.breakdown_us[c]) })),
    };
  }, [report]);
  const avg = timeUnit([report.breakdown.step_avg_us]), cat = timeUnit(cats.map((c) => report.breakdown.avg_us[c]));
  const src = report.source;
  return (
    <div class="page" id="page-overview">
      <section class="cards">
        <div class="card"><div class="label">average step</div><div class="big" id="step-avg">{avg.fmt(report.breakdown.step_avg_us)}</div><div class="unit">{avg.label}</div></div>
        <div class="card"><div class="label">steps</div><div class="big" id="step-count">{num(report.steps.length)}</div></div>
        <div class="card"><div class="label">events</div><div class="big" id="event-count">{num(src.events)}</div></div>
        {report.gpu.map((g: any) => (
          <div class="card gpu" key={g.device} data-device={g.device}>
            <div class="label">GPU {g.device}: {g.name}</div>
            <table class="kv"><tbody>
              <tr><td>utilization</td><td class="num" data-key="utilization_pct">{pctUnit(g.utilization_pct)}</td></tr>
              <tr><td>SM efficiency</td><td class="num" data-key="sm_efficiency_pct">{pctUnit(g.sm_efficiency_pct)}</td></tr>
              <tr><td>achieved occupancy</td><td class="num" data-key="achieved_occupancy_pct">{pctUnit(g.achieved_occupancy_pct)}</td></tr>
              <tr><td>{report.tensor_core_metric ?? "Tensor Cores"}</td><td class="num" data-key="tensor_core_pct">{pctUnit(g.tensor_core_pct)}</td></tr>
            </tbody></table>
          </div>))}
      </section>
      {Object.keys(src.skipped).length > 0 && <p class="warn" id="partial">partial data: skipped {Object.entries(src.skipped).map(([why, n]) => `${num(n as number)} ${why}`).join(", ")}</p>}
      {src.warnings.map((w: string, i: number) => <p key={i} class="warn">warning: {w}</p>)}
      {(report.notes ?? []).length > 0 && <ul class="note" role="note" id="report-notes">{report.notes.map((n: string, i: number) => <li key={i}>{n}</li>)}</ul>}
      <h2>Step time breakdown</h2>
      <Chart option={option} id="steps-chart" />
      <table id="breakdown"><thead><tr><th>category</th><th class="num">avg {cat.label} per step</th><th class="num">% of step</th></tr></thead>
        <tbody>{cats.map((c) => (
          <tr key={c} data-cat={c}><td>{c}</td><td class="num" data-key="avg_us">{cat.fmt(report.breakdown.avg_us[c])}</td>
            <td class="num" data-key="pct">{pct(report.breakdown.pct[c])}</td></tr>))}</tbody></table>
      <h2>Findings</h2>
      {report.findings.length === 0 ? <p>No findings.</p> :
        report.findings.map((f: any, i: number) => <FindingCard key={f.id} f={f} config={config} index={i + 1} />)}
    </div>
  );
}
