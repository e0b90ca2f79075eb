// A run of rank traces: per-rank time split, stragglers, last rank per step, collectives and
// the run's findings, from `api/run` (the `distributed` key of `stepscope report DIR`).
import { useEffect, useMemo, useState } from "preact/hooks";
import type { PageProps } from "../pageProps";
import { isRun, type Dict, type Progress, type RunTree } from "../types";
import { Table, timeCol, type Column } from "../table";
import { Chart } from "../chart";
import { num, pct, timeAxis, timeUnit } from "../format";
import { FindingCard } from "./FindingCard";
import { RunPathView } from "./RunPath";
import { AllToAllView, CallsView, CollectiveSkewView, Definitions, FsdpView, LARGE, PipelineView, bytesText, highest, rankHeatmap, rankHistogram, rowLimit } from "./DistributedViews";

type K = Record<string, any>;

/** The run holding `trace`, when it has 2 or more workers (ranks). */
export function rankRun(runs: RunTree | null, trace: string): string | null {
  const run = runs?.runs.find((r) => r.workers.some((w) => w.spans.some((s) => s.trace === trace)));
  return run && run.workers.length >= 2 ? run.run : null;
}

const fixed = (x: number | null | undefined, d: number) => (x == null ? "—" : x.toFixed(d));

const RANKS: Column<K>[] = [
  { key: "rank", label: "rank", num: true, value: (r) => r.rank },
  timeCol("computation_us", "computation"),
  timeCol("overlap_us", "overlap"),
  timeCol("communication_us", "communication"),
  timeCol("sync_us", "sync wait"),
  timeCol("transfer_us", "transfer"),
  timeCol("other_us", "other"),
  { key: "comm_overlap_pct", label: "overlap % of communication", num: true, value: (r) => r.comm_overlap_pct, render: (r) => pct(r.comm_overlap_pct) },
];

const STRAGGLERS: Column<K>[] = [
  { key: "rank", label: "rank", num: true, value: (r) => r.rank },
  timeCol("wait_caused_us", "wait caused"),
  { key: "share_pct", label: "share of waiting %", num: true, value: (r) => r.share_pct, render: (r) => pct(r.share_pct) },
  { key: "last_arrivals", label: "last arrivals", num: true, value: (r) => r.last_arrivals, render: (r) => `${r.last_arrivals} / ${r.matched_calls}` },
  timeCol("computation_us", "busy computation"),
  timeCol("computation_excess_us", "busy computation vs median rank"),
];

const STEPS: Column<K>[] = [
  { key: "step", label: "step", value: (r) => r.step },
  { key: "last_rank", label: "last rank", num: true, value: (r) => r.last_rank ?? "—" },
  timeCol("wait_us", "wait caused"),
];

const COLLECTIVES: Column<K>[] = [
  { key: "collective", label: "type", value: (r) => r.collective },
  { key: "process_group", label: "group", value: (r) => `${r.process_group || "default"} (${r.group_size ?? "?"})` },
  { key: "calls", label: "calls", num: true, value: (r) => r.calls, render: (r) => num(r.calls) },
  { key: "bytes_per_call", label: "bytes/call", num: true, value: (r) => r.bytes_per_call, render: (r) => <span title={r.bytes_per_call == null ? "" : `${r.bytes_per_call} B`}>{bytesText(r.bytes_per_call)}</span> },
  { key: "dtype", label: "dtype", value: (r) => r.dtype ?? "—" },
  timeCol("time_us", "time"),
  { key: "algbw_gbps", label: "algbw GB/s", num: true, value: (r) => r.algbw_gbps, render: (r) => fixed(r.algbw_gbps, 4) },
  { key: "busbw_gbps", label: "busbw GB/s", num: true, value: (r) => r.busbw_gbps, render: (r) => fixed(r.busbw_gbps, 4) },
  { key: "link_peak_pct", label: "% link peak", num: true, value: (r) => r.link_peak_pct, render: (r) => pct(r.link_peak_pct) },
];

export function Distributed(props: PageProps) {
  // `stepscope report DIR --html` inlines the run report: nothing to fetch
  return isRun(props.report) ? <RunView data={props.report} run={props.report.source?.path ?? ""} config={props.config} />
    : <RunFromServer {...props} />;
}

function RunFromServer({ source, trace, config }: PageProps) {
  const [run, setRun] = useState<string | null | undefined>(undefined);
  const [data, setData] = useState<Dict | null>(null);
  const [progress, setProgress] = useState<Progress | null>(null);
  const [error, setError] = useState<string | null>(null);

  useEffect(() => { source.runs().then((t) => setRun(rankRun(t, trace))).catch((e) => setError(String(e))); }, [trace]);
  useEffect(() => {
    if (!run) return;
    let alive = true, timer: any;
    const load = () => fetch(`api/run?run=${encodeURIComponent(run)}`).then(async (r) => {
      const body = await r.json();
      if (!alive) return;
      if (r.status === 200) { setData(body); return; }
      if (r.status === 202) { setProgress(body); timer = setTimeout(load, 300); return; }
      setError(body?.error ?? `HTTP ${r.status}`);
    }).catch((e) => alive && setError(String(e)));
    load();
    return () => { alive = false; clearTimeout(timer); };
  }, [run]);

  if (error) return <p class="error" id="run-error">Could not load the run: {error}</p>;
  if (run === null) return <p>This trace's run has a single rank trace.</p>;
  if (!data) {
    const frac = progress && progress.total ? progress.done / progress.total : 0;
    return <div id="progress"><p>Loading run {run ?? ""}: {progress?.state ?? "starting"} {progress?.done ?? 0} / {progress?.total ?? "?"} ranks</p>
      <div class="bar"><div style={{ width: `${Math.round(100 * frac)}%` }} /></div></div>;
  }
  return <RunView data={data} run={run ?? ""} config={config} />;
}

function RunView({ data, run, config }: { data: Dict; run: string; config: PageProps["config"] }) {
  const charts = useMemo(() => {
    const ranks: K[] = data.distributed.ranks;
    if (ranks.length > LARGE) {  // one bar per rank is unreadable: a heatmap and histograms
      return {
        large: true,
        time: rankHeatmap(ranks, [["computation_us", "computation"], ["overlap_us", "overlap"], ["communication_us", "communication"],
          ["other_us", "other"], ["sync_us", "sync wait"], ["transfer_us", "transfer"]]),
        hist: rankHistogram(ranks, (r) => r.computation_us + r.overlap_us, "busy computation per rank"),
        comm: rankHistogram(ranks, (r) => r.sync_us, "sync wait per rank"),
      };
    }
    const cats = ranks.map((r) => `rank ${r.rank}`);
    // Both charts in the unit of the tallest stack (a rank's whole time), tooltips in it too.
    const u = timeUnit(ranks.map((r) => r.computation_us + r.overlap_us + r.communication_us + r.other_us));
    const base = { tooltip: { trigger: "axis", axisPointer: { type: "shadow" }, valueFormatter: u.text },
      legend: { top: 0 }, grid: { left: 60, right: 20, top: 36, bottom: 30 }, xAxis: { type: "category", data: cats }, yAxis: timeAxis(u) };
    const bar = (name: string, key: string, color: string) =>
      ({ name, type: "bar", stack: "t", data: ranks.map((r) => r[key]), itemStyle: { color }, emphasis: { focus: "series" } });
    return {
      large: false, hist: null,
      time: { ...base, series: [bar("computation", "computation_us", "#4e79a7"), bar("overlap", "overlap_us", "#59a14f"),
        bar("communication", "communication_us", "#e15759"), bar("other", "other_us", "#bab0ac")] },
      comm: { ...base, series: [bar("sync wait", "sync_us", "#f28e2b"), bar("transfer", "transfer_us", "#76b7b2")] },
    };
  }, [data]);

  const d = data.distributed;
  // sync wait and transfer split matched collectives; a run without any (a pipeline's
  // point-to-point sends and receives) has nothing to split: say so instead of an empty chart
  const split = (d.ranks as K[]).some((r) => (r.sync_us ?? 0) + (r.transfer_us ?? 0) > 0);
  const noSplit = <p class="dim" id="comm-none">No synchronisation wait or transfer to show: they are split on collectives matched across ranks, and
    {d.pipeline ? " these ranks exchange point-to-point sends and receives only (their time is in communication above; the pipeline stages below show the bubble)" : " these traces hold none"}.</p>;
  return (
    <div class="page" id="page-distributed">
      <h2>Distributed run <span class="dim">{run}</span></h2>
      <p id="run-summary"><span class="nowrap">{num(d.world_size)} ranks</span> · <span class="nowrap">backend <b>{d.backend ?? "—"}</b></span> · ranks from {d.rank_source}
        {d.imbalance && <> · busy computation <span class="nowrap">max/mean <b id="imbalance">{fixed(d.imbalance.max_over_mean, 3)}</b></span> (<span class="nowrap">slowest rank {d.imbalance.slowest_rank}</span>)</>}
        {d.failed.length > 0 && <span class="error"> · {d.failed.length} rank traces could not be read</span>}</p>
      <Definitions />
      {charts.large ? <>
        <h3>Time per rank: computation, overlap, communication, other, sync wait, transfer (heatmap, each row scaled to its largest rank)</h3>
        <Chart option={charts.time} height={300} id="ranks-heatmap" />
        <h3>Busy computation per rank (histogram)</h3>
        <Chart option={charts.hist} height={300} id="ranks-histogram" />
        <p class="dim" id="busiest-ranks">most busy computation: {highest(d.ranks, (r) => r.computation_us + r.overlap_us)}</p>
        <h3>Sync wait per rank (histogram)</h3>
        {split ? <><Chart option={charts.comm} height={300} id="comm-histogram" />
          <p class="dim">longest sync wait: {highest(d.ranks, (r) => r.sync_us)}</p></> : noSplit}
      </> : <>
        <h3>Time per rank (computation, overlap, communication, other)</h3>
        <Chart option={charts.time} height={280} id="ranks-chart" />
        <h3>Communication per rank: synchronisation wait vs data transfer</h3>
        {split ? <Chart option={charts.comm} height={240} id="comm-chart" /> : noSplit}
      </>}
      <Table id="ranks-table" rows={d.ranks} cols={RANKS} searchKey={(r) => String(r.rank)} limit={rowLimit(d.ranks.length)} />
      <h3>Stragglers (slowest first)</h3>
      {d.stragglers.length === 0 ? <p>No rank kept the others waiting.</p>
        : <Table id="stragglers-table" rows={d.stragglers} cols={STRAGGLERS} limit={rowLimit(d.ranks.length)} />}
      <h3>Critical path across ranks</h3>
      {data.critical_path?.length_us != null ? <RunPathView p={data.critical_path} />
        : <p class="note" role="note" id="run-path-none">No critical path across ranks{data.critical_path?.note ? `: ${data.critical_path.note}` : ": these traces have no step the graph can replay"}.</p>}
      <h3>Last rank per step</h3>
      {d.steps.length === 0 ? <p id="steps-none">No collective was matched across ranks, so no step has a last rank.</p>
        : <Table id="steps-table" rows={d.steps} cols={STEPS} />}
      <h3>Collectives</h3>
      {d.collectives.length === 0
        ? <p id="collectives-none">No collectives in these traces{d.pipeline ? " (the ranks exchange point-to-point traffic only: see the pipeline stages below)" : ""}.</p>
        : <Table id="collectives-table" rows={d.collectives} cols={COLLECTIVES} searchKey={(r) => `${r.collective} ${r.process_group}`} />}
      {d.groups?.length > 0 ? <><h3>Per collective: start skew and wait, by process group</h3>
        {d.matching_note && <p class="note" role="note" id="matching-note">{d.matching_note}</p>}<CollectiveSkewView groups={d.groups} /></>
        : d.calls?.length > 0 && <><h3>Per collective: who arrived last and what the others waited</h3><CallsView calls={d.calls} /></>}
      {d.pipeline && <><h3>Pipeline stages (time per stage over the captured steps, idle = bubble)</h3><PipelineView p={d.pipeline} /></>}
      {d.all_to_all && <><h3>All-to-all traffic (expert parallelism): bytes sender → receiver</h3><AllToAllView a={d.all_to_all} /></>}
      {d.fsdp && <><h3>FSDP units: all-gather and reduce-scatter, exposed vs overlapped</h3><FsdpView f={d.fsdp} /></>}
      <h3>Findings ({data.findings.length})</h3>
      <div id="run-findings">{data.findings.length === 0 ? <p>No findings.</p> :
        data.findings.map((f: Dict, i: number) => <FindingCard key={f.id} f={f} config={config} index={i + 1} />)}</div>
    </div>
  );
}
