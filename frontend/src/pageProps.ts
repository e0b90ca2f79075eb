// What every page receives. Its own module, so pages never import the route table that
// imports them.
import type { Source } from "./data";
import type { Config, Dict } from "./types";

export interface PageProps { source: Source; trace: string; report: Dict; config: Config; }
