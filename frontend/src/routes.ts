// One entry per page: later pages (memory, distributed, nsys, TensorRT, compare, roofline)
// plug in by adding a route here.
import type { FunctionComponent } from "preact";
import type { Source } from "./data";
import type { Config, Dict } from "./types";
import { Overview } from "./pages/Overview";
import { Operators } from "./pages/Operators";
import { Kernels } from "./pages/Kernels";
import { Timeline } from "./pages/Timeline";
import { Findings } from "./pages/Findings";

export interface PageProps { source: Source; trace: string; report: Dict; config: Config; }
export interface RouteDef { path: string; title: string; page: FunctionComponent<PageProps>; }

export const ROUTES: RouteDef[] = [
  { path: "overview", title: "Overview", page: Overview },
  { path: "operators", title: "Operators", page: Operators },
  { path: "kernels", title: "Kernels", page: Kernels },
  { path: "timeline", title: "Timeline", page: Timeline },
  { path: "findings", title: "Findings", page: Findings },
];
