// One entry per page: later pages (memory, distributed, nsys, TensorRT, compare, roofline)
// plug in by adding a route here.
import type { FunctionComponent } from "preact";
import type { Source } from "./data";
import type { Config, Dict, RunTree } from "./types";
import { Overview } from "./pages/Overview";
import { Operators } from "./pages/Operators";
import { Kernels } from "./pages/Kernels";
import { Timeline } from "./pages/Timeline";
import { Findings } from "./pages/Findings";
import { Distributed, rankRun } from "./pages/Distributed";

export interface PageProps { source: Source; trace: string; report: Dict; config: Config; }
export interface RouteDef {
  path: string; title: string; page: FunctionComponent<PageProps>;
  /** Shown in the navigation only when this says so (default: always). */
  show?: (runs: RunTree | null, trace: string, mode: string) => boolean;
}

export const ROUTES: RouteDef[] = [
  { path: "overview", title: "Overview", page: Overview },
  { path: "operators", title: "Operators", page: Operators },
  { path: "kernels", title: "Kernels", page: Kernels },
  { path: "timeline", title: "Timeline", page: Timeline },
  { path: "findings", title: "Findings", page: Findings },
  { path: "distributed", title: "Distributed", page: Distributed, show: (runs, t, mode) => mode === "server" && rankRun(runs, t) !== null },
];
