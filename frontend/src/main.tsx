import { render } from "preact";
import { useEffect, useState } from "preact/hooks";
import { makeSource } from "./data";
import { ROUTES } from "./routes";
import { traceList, type Config, type Dict, type Progress, type RunTree } from "./types";
import "./style.css";

const source = makeSource();

function hashState(): { page: string; trace: string } {
  const [page, ...rest] = location.hash.replace(/^#\/?/, "").split("?");
  const params = new URLSearchParams(rest.join("?"));
  return { page: page || "overview", trace: params.get("trace") ?? "" };
}

function App() {
  const [state, setState] = useState(hashState());
  const [runs, setRuns] = useState<RunTree | null>(null);
  const [config, setConfig] = useState<Config | null>(null);
  const [report, setReport] = useState<Dict | null>(null);
  const [progress, setProgress] = useState<Progress | null>(null);
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    const on = () => setState(hashState());
    window.addEventListener("hashchange", on);
    source.config().then(setConfig);
    const poll = () => source.runs().then(setRuns).catch(() => undefined);
    poll();
    const t = source.mode === "server" ? setInterval(poll, 5000) : undefined;  // new traces appear without restart
    return () => { window.removeEventListener("hashchange", on); if (t) clearInterval(t); };
  }, []);

  const traces = traceList(runs);
  const trace = state.trace || traces[0]?.trace || "";

  useEffect(() => {
    if (!trace) return;
    let alive = true, timer: any;
    setReport(null); setError(null);
    const load = () => source.report(trace).then((r) => {
      if (!alive) return;
      if ("schema" in r) { setReport(r); setProgress(null); return; }
      const p = r as Progress;
      if (p.state === "error") { setError(p.error ?? "failed"); return; }
      setProgress(p); timer = setTimeout(load, 300);
    }).catch((e) => alive && setError(String(e)));
    load();
    return () => { alive = false; clearTimeout(timer); };
  }, [trace]);

  const go = (page: string, t = trace) => { location.hash = `#/${page}?trace=${encodeURIComponent(t)}`; };
  // Pages whose data the report lacks are hidden (before the report loads, every page is listed);
  // a page may also depend on the logdir (Distributed: runs of 2+ rank traces).
  const routes = ROUTES.filter((r) => (!r.when || !report || r.when(report, source.mode))
    && (!r.show || r.show(runs, trace, source.mode)));
  const route = routes.find((r) => r.path === state.page) ?? routes[0] ?? ROUTES[0];
  const Page = route.page;
  return (
    <div class="app">
      <header>
        <span class="brand">stepscope</span>
        <nav>{routes.map((r) => <a key={r.path} id={`nav-${r.path}`} class={r.path === route.path ? "active" : ""}
          href={`#/${r.path}?trace=${encodeURIComponent(trace)}`}>{r.title}</a>)}</nav>
        {source.mode === "server" && <select id="trace-select" value={trace} onChange={(e) => go(route.path, (e.target as HTMLSelectElement).value)}>
          {traces.map((t) => <option key={t.trace} value={t.trace}>{t.label}</option>)}
        </select>}
      </header>
      <main>
        {error ? <p class="error" id="load-error">Could not load {trace}: {error}</p>
          : !trace ? <p>{runs ? "No traces found in this logdir yet (the list refreshes every few seconds)." : "…"}</p>
          : report && config ? <Page key={`${route.path}:${trace}`} source={source} trace={trace} report={report} config={config} />
          : <LoadProgress p={progress} trace={trace} />}
      </main>
    </div>
  );
}

function LoadProgress({ p, trace }: { p: Progress | null; trace: string }) {
  const frac = p && p.total ? p.done / p.total : 0;
  return (
    <div id="progress"><p>Loading {trace}: {p?.state ?? "starting"} {p && p.total ? `${(100 * frac).toFixed(0)} %` : ""} ({p?.elapsed_s.toFixed(1) ?? 0} s)</p>
      <div class="bar"><div style={{ width: `${Math.round(100 * frac)}%` }} /></div></div>
  );
}

render(<App />, document.getElementById("app")!);
