// One entry per page: later pages (memory, distributed, nsys, TensorRT, compare, roofline)
// plug in by adding a route here.
import type { FunctionComponent } from "preact";
import type { PageProps } from "./pageProps";
import { isDiff, isEngineDiff, isRun, traceList, type Dict, type RunTree } from "./types";
import { Overview } from "./pages/Overview";
import { Operators } from "./pages/Operators";
import { Kernels } from "./pages/Kernels";
import { Timeline } from "./pages/Timeline";
import { Findings } from "./pages/Findings";
import { Memory } from "./pages/Memory";
import { Modules } from "./pages/Modules";
import { Efficiency } from "./pages/Efficiency";
import { Nsight } from "./pages/Nsight";
import { Compare, comparable } from "./pages/Compare";
import { TensorRT } from "./pages/TensorRT";
import { EngineCompare } from "./pages/EngineCompare";
import { Distributed, rankRun } from "./pages/Distributed";
import { Query } from "./pages/Query";
import { System } from "./pages/System";
import { CriticalPath } from "./pages/CriticalPath";

export interface RouteDef {
  path: string; title: string; page: FunctionComponent<PageProps>;
  /** Shown only when the report has this page's data (e.g. its key is not null). */
  when?: (report: Dict, mode: "server" | "static") => boolean;
  /** Shown only when the logdir says so (default: always). */
  show?: (runs: RunTree | null, trace: string, mode: string) => boolean;
}

const isTrace = (r: Dict) => "breakdown" in r;

export const ROUTES: RouteDef[] = [
  { path: "overview", title: "Overview", page: Overview, when: isTrace },
  { path: "operators", title: "Operators", page: Operators, when: isTrace },
  { path: "kernels", title: "Kernels", page: Kernels, when: (r) => isTrace(r) && (r.kernels?.length ?? 0) > 0 },
  { path: "timeline", title: "Timeline", page: Timeline, when: isTrace },
  // the dependency graph's longest path (docs/metrics.md, Critical path)
  { path: "critical-path", title: "Critical path", page: CriticalPath, when: (r) => !!r.critical_path?.path },
  { path: "tensorrt", title: "TensorRT", page: TensorRT, when: (r) => !!r.tensorrt },
  // the dashboard: a rank trace of a run of 2+ ranks; `report DIR --html`: the run report itself
  { path: "distributed", title: "Distributed", page: Distributed,
    when: (r, mode) => (mode === "server" ? isTrace(r) : isRun(r)),
    show: (runs, t, mode) => mode !== "server" || rankRun(runs, t) !== null },
  { path: "findings", title: "Findings", page: Findings, when: (r) => Array.isArray(r.findings) && !isDiff(r) },
  { path: "memory", title: "Memory", page: Memory, when: (r) => (r.memory?.devices?.length ?? 0) > 0 || !!r.memory?.categories },
  { path: "efficiency", title: "Efficiency", page: Efficiency, when: (r) => !!r.efficiency },
  { path: "modules", title: "Modules", page: Modules, when: (r) => (r.modules?.nodes?.length ?? 0) > 0 },
  { path: "engines", title: "Engine comparison", page: EngineCompare, when: isEngineDiff },
  // a monitor output beside the trace (stepscope run --monitor): the run's system view
  { path: "system", title: "System", page: System, when: (r) => !!r.system },
  // the dashboard's Compare needs a second input it can put beside this one
  { path: "compare", title: "Compare", page: Compare, when: (r, mode) => isDiff(r) || (mode === "server" && isTrace(r)),
    show: (runs, _t, mode) => mode !== "server" || traceList(runs).filter(comparable).length >= 2 },
  { path: "nsight", title: "Nsight", page: Nsight, when: (r) => !!r.nsys || !!r.ncu },
  // SQL over the trace's tables (docs/sql.md): the dashboard only, the server runs the query
  { path: "query", title: "Query", page: Query,
    when: (r, mode) => mode === "server" && (isTrace(r) || !!r.tensorrt) },
];
