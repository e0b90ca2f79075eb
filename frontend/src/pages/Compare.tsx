import { useEffect, useState } from "preact/hooks";
import type { PageProps } from "../pageProps";
import { Table, type Column } from "../table";
import { pct, pctUnit, timeUnit, type TimeUnit as Unit } from "../format";
import { isDiff, traceList, type RunTree } from "../types";
import { breakable } from "../names";

type D = Record<string, any>;
const signed = (x: number | null | undefined, d = 3) => (x == null ? "—" : (x >= 0 ? "+" : "") + x.toFixed(d));
const sig = (r: D) => (r.significance == null ? "—" : r.significance.significant ? "yes" : "no");

/** Red for more time, green for less, no colour for no change. */
const tone = (delta: number | null | undefined) => (!delta ? "" : delta > 0 ? "worse" : "better");
const signedIn = (u: Unit, x: number | null | undefined) => (x == null ? "—" : (x >= 0 ? "+" : "") + u.fmt(x));

function changeCols(u: Unit): Column<D>[] {
  return [
    { key: "base_us", label: `base ${u.label}`, num: true, value: (r) => r.base_us, render: (r) => u.fmt(r.base_us) },
    { key: "new_us", label: `new ${u.label}`, num: true, value: (r) => r.new_us, render: (r) => u.fmt(r.new_us) },
    { key: "delta_us", label: `Δ ${u.label}`, num: true, value: (r) => r.delta_us, render: (r) => <span class={tone(r.delta_us)}>{signedIn(u, r.delta_us)}</span> },
    { key: "delta_pct", label: "Δ %", num: true, value: (r) => r.delta_pct, render: (r) => signed(r.delta_pct, 2) },
    { key: "share_of_step_change_pct", label: "share of step change %", num: true, value: (r) => r.share_of_step_change_pct, render: (r) => pct(r.share_of_step_change_pct) },
    { key: "significant", label: "significant", value: sig, render: (r) => <span title={r.noise_verdict ?? (r.significance?.p_value != null ? `p = ${r.significance.p_value}` : "")}>{sig(r)}</span> },
  ];
}
const catCols = (u: Unit): Column<D>[] => [{ key: "name", label: "category", value: (r) => r.name }, ...changeCols(u)];
const itemCols = (u: Unit): Column<D>[] => [
  { key: "name", label: "name", value: (r) => r.name, render: (r) => <span class="kname">{breakable(r.name)}</span> },
  { key: "status", label: "status", value: (r) => r.status },
  { key: "calls_base", label: "calls base", num: true, value: (r) => r.calls_base ?? "—" },
  { key: "calls_new", label: "calls new", num: true, value: (r) => r.calls_new ?? "—" },
  ...changeCols(u),
];


export function Compare(props: PageProps) {
  // `stepscope diff --html`: the diff is the page's report; the dashboard computes it on demand.
  return isDiff(props.report) ? <div class="page" id="page-compare"><Sides diff={props.report} /><DiffView diff={props.report} /></div>
    : <ComparePicker {...props} />;
}

type Listed = ReturnType<typeof traceList>[number];
/** What Compare may put side by side: profiler traces and nsys exports (both have a step
 * breakdown); TensorRT engines are compared with `stepscope diff A B`, not here. */
export const comparable = (t: { kind?: string }) => (t.kind ?? "trace") !== "tensorrt";

/** The default pair: the two newest inputs of `trace`'s run and kind (else of its kind in the
 * whole logdir), the older as base: before → after in time order. */
export function defaultPair(traces: Listed[], trace: string): [string, string] | null {
  const cur = traces.find((t) => t.trace === trace);
  if (!cur || !comparable(cur)) return null;
  const kind = cur.kind ?? "trace", byTime = (a: Listed, b: Listed) => (a.time ?? 0) - (b.time ?? 0) || a.trace.localeCompare(b.trace);
  const same = traces.filter((t) => (t.kind ?? "trace") === kind);
  const inRun = same.filter((t) => t.run === cur.run);
  const pool = (inRun.length >= 2 ? inRun : same).sort(byTime);
  return pool.length >= 2 ? [pool[pool.length - 2].trace, pool[pool.length - 1].trace] : null;
}

function ComparePicker({ source, trace }: PageProps) {
  const [runs, setRuns] = useState<RunTree | null>(null);
  const [base, setBase] = useState("");
  const [next, setNext] = useState("");
  const [diff, setDiff] = useState<D | null>(null);
  const [state, setState] = useState<string>("");
  useEffect(() => { source.runs().then(setRuns); }, []);
  const traces = traceList(runs).filter(comparable);
  useEffect(() => {
    if (!runs || base || next) return;
    const pair = defaultPair(traces, trace);
    if (pair) { setBase(pair[0]); setNext(pair[1]); } else setBase(trace);
  }, [runs]);
  useEffect(() => {
    if (!base || !next || !source.diff) return;
    let alive = true, timer: any;
    setDiff(null); setState("loading both traces…");
    const poll = () => source.diff!(base, next).then(({ status, body }) => {
      if (!alive) return;
      if (status === 202) { timer = setTimeout(poll, 300); return; }
      if (status !== 200) { setState(`cannot compare: ${body?.error ?? `HTTP ${status}`}`); return; }
      setDiff(body); setState("");
    }).catch((e) => alive && setState(String(e)));
    poll();
    return () => { alive = false; clearTimeout(timer); };
  }, [base, next]);
  const pick = (id: string, value: string, set: (v: string) => void) => (
    <select id={id} value={value} aria-label={id === "diff-base" ? "base (before)" : "new (after)"} onChange={(e) => set((e.target as HTMLSelectElement).value)}>
      <option value="">—</option>
      {traces.map((t) => <option key={t.trace} value={t.trace}>{t.label}</option>)}
    </select>);
  return (
    <div class="page" id="page-compare">
      <div class="toolbar"><label>base (before) {pick("diff-base", base, setBase)}</label><label>new (after) {pick("diff-new", next, setNext)}</label></div>
      {traces.length < 2 && runs && <p class="note" role="note">The logdir has one trace to compare: add another run.</p>}
      {state && <p class={state.startsWith("cannot") ? "error" : "dim"} id="diff-state">{state}</p>}
      {diff && <DiffView diff={diff} />}
    </div>
  );
}

function Sides({ diff }: { diff: D }) {
  const side = (s: D) => `${s.path} (${s.kind}${s.ranks > 1 ? `, ${s.ranks} ranks` : ""}, ${s.steps} steps${s.complete_tables ? "" : ", top rows only"})`;
  return <dl class="sides" id="diff-sides"><dt>base</dt><dd class="kname">{breakable(side(diff.base))}</dd><dt>new</dt><dd class="kname">{breakable(side(diff.new))}</dd></dl>;
}

function DiffView({ diff }: { diff: D }) {
  const st = diff.step_time;
  if (!st) return null;
  // Times in the step's unit (ms for training steps): one unit per page, per-step values.
  const u = timeUnit([st.base_us, st.new_us]);
  const items = itemCols(u);
  return <>
    <section class="cards">
      <div class="card"><div class="label">step time base → new</div><div class="big"><span id="diff-step-base">{u.fmt(st.base_us)}</span> → <span id="diff-step-new">{u.fmt(st.new_us)}</span></div><div class="unit">{u.label} per step ({diff.base.steps} vs {diff.new.steps} steps)</div></div>
      <div class="card"><div class="label">change</div><div class={`big ${tone(st.delta_us)}`} id="diff-step-delta">{signedIn(u, st.delta_us)}</div><div class="unit">{u.label} ({signed(st.delta_pct, 2)} %)</div></div>
      <div class="card"><div class="label">verdict</div><div class="big" id="diff-verdict">{st.verdict}</div><div class="unit" id="diff-noise">{st.noise_verdict ?? (st.significance ? `p = ${st.significance.p_value ?? "—"} (${st.significance.test})` : "no per-step samples")}</div></div>
      {diff.gate.length > 0 && <div class="card"><div class="label">gate</div><div class={`big ${diff.passed ? "better" : "worse"}`} id="diff-gate-verdict">{diff.passed ? "passed" : "FAILED"}</div><div class="unit">{diff.gate.length} threshold{diff.gate.length > 1 ? "s" : ""}</div></div>}
    </section>
    {diff.main_change && <p id="diff-main">Main change: {diff.main_change}</p>}
    {diff.warnings.length > 0 && <ul class="warn">{diff.warnings.map((w: string, i: number) => <li key={i}>{w}</li>)}</ul>}
    {diff.gate.length > 0 && <><h2>Gate</h2>
      <table id="diff-gate"><thead><tr><th>threshold</th><th>result</th><th>why</th></tr></thead>
        <tbody>{diff.gate.map((g: D, i: number) => <tr key={i}><td class="kname">{breakable(g.expression)}</td>
          <td class={g.broken ? "worse" : "better"}>{g.broken ? "broken" : "ok"}</td><td>{g.reason}</td></tr>)}</tbody></table></>}
    <h2>Step breakdown</h2>
    {/* categories the step never spent time in (e.g. kernels of a CPU run) are left out, as in the text diff */}
    <Table id="diff-categories" rows={diff.categories.filter((c: D) => c.base_us !== 0 || c.new_us !== 0)} cols={catCols(u)} />
    <h2>Operators</h2>
    <Table id="diff-operators" rows={diff.operators} cols={items} searchKey={(r) => r.name} />
    <h2>Kernels</h2>
    <Table id="diff-kernels" rows={diff.kernels} cols={items} searchKey={(r) => r.name} />
    {diff.findings.length > 0 && <><h2>Findings</h2>
      <table id="diff-findings"><thead><tr><th>finding</th><th>status</th><th class="num">base saving {u.label}/step</th><th class="num">new saving {u.label}/step</th></tr></thead>
        <tbody>{diff.findings.map((f: D) => <tr key={f.id}><td>{f.title}</td><td>{f.status}</td><td class="num">{u.fmt(f.base_saving_us)}</td><td class="num">{u.fmt(f.new_saving_us)}</td></tr>)}</tbody></table></>}
    {diff.gpu.length > 0 && <><h2>GPU</h2>
      <table id="diff-gpu"><thead><tr><th>device</th><th>metric</th><th class="num">base</th><th class="num">new</th><th class="num">Δ</th></tr></thead>
        <tbody>{diff.gpu.map((g: D, i: number) => <tr key={i}><td>{g.device}</td><td>{g.metric}</td><td class="num">{pctUnit(g.base)}</td><td class="num">{pctUnit(g.new)}</td><td class="num">{signed(g.delta, 2)}</td></tr>)}</tbody></table></>}
  </>;
}
