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
  // A page is listed only once the report says its data exists (none while loading or after an
  // error); a page may also depend on the logdir (Distributed: runs of 2+ rank traces).
  const routes = report ? ROUTES.filter((r) => (!r.when || r.when(report, source.mode))
    && (!r.show || r.show(runs, trace, source.mode))) : [];
  const route = routes.find((r) => r.path === state.page) ?? routes[0] ?? null;
  const label = source.mode === "static" ? trace : traces.find((t) => t.trace === trace)?.label ?? trace;
  useEffect(() => {
    document.title = [route?.title ?? (error ? "error" : "loading"), label, "stepscope"].filter(Boolean).join(" · ");
  }, [route?.path, label, error]);
  const Page = route?.page;
  return (
    <div class="app">
      <header>
        <span class="brand">stepscope</span>
        <nav aria-label="pages">{routes.map((r) => <a key={r.path} id={`nav-${r.path}`} class={r.path === route?.path ? "active" : ""}
          aria-current={r.path === route?.path ? "page" : undefined}
          href={`#/${r.path}?trace=${encodeURIComponent(trace)}`}>{r.title}</a>)}</nav>
        {source.mode === "server" ? <select id="trace-select" aria-label="trace" value={trace} onChange={(e) => go(route?.path ?? state.page, (e.target as HTMLSelectElement).value)}>
          {traces.map((t) => <option key={t.trace} value={t.trace}>{t.label}</option>)}
        </select> : report && <Subject report={report} trace={trace} />}
      </header>
      <main>
        {/* one h1 per page: what is shown, and of which input */}
        <h1 id="page-title">{route?.title ?? (error ? "Error" : report || !trace ? "stepscope" : "Loading")}{trace && <span class="dim"> · {label}</span>}</h1>
        {error ? <p class="error" id="load-error">Could not load {trace}: {error}</p>
          : !trace ? <p>{runs ? "No traces found in this logdir yet (the list refreshes every few seconds)." : "…"}</p>
          : report && config && Page ? <Page key={`${route!.path}:${trace}`} source={source} trace={trace} report={report} config={config} />
          : report ? <p class="note">Nothing to show for {label}.</p>
          : <LoadProgress p={progress} trace={trace} />}
      </main>
    </div>
  );
}

/** The single-file report names what it is about in its body: the input and its devices. */
function Subject({ report, trace }: { report: Dict; trace: string }) {
  const devices: string[] = (report.devices ?? []).map((d: Dict) => d.label ?? d.name).filter(Boolean);
  const path = report.source?.path ?? report.tensorrt?.engine ?? trace;
  return (
    <span class="subject" id="report-subject">
      <span class="kname" title={path}>{trace}</span>
      {devices.length > 0 && <span id="report-devices"> on {[...new Set(devices)].join(", ")}</span>}
    </span>
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
