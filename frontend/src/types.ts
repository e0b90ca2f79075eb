// Shapes of the JSON the server (or the HTML report) provides. Report = `stepscope report --format json`.
export type Dict = Record<string, any>;

/** kind: thread | python (a thread's Python frames, `of` = its thread's row) | stream | annotations */
export interface Row { id: number; group: string; label: string; kind: string; depths: number; events: number; of?: number; }
/** A counter track besides GPU utilisation (report/counters.py): memory, monitor samples. */
export interface TrackMeta { id: string; label: string; unit: string; source: string; max: number; }
export interface Step { name: string; start: number; dur: number; }
export interface TimelineMeta {
  origin_ns: number; start: number; end: number; events: number; rows: Row[]; devices: number[];
  steps: Step[]; cap?: number; kept?: number; tracks?: TrackMeta[]; notes?: string[];
}
export interface Counter { device: number; label: string; values: number[]; }
export interface Chunk {
  start: number; end: number; width: number;
  events: { id: number[]; row: number[]; depth: number[]; ts: number[]; dur: number[]; name: number[] };
  names: Record<string, string>;
  aggregates: { row: number[]; depth: number[]; ts: number[]; dur: number; count: number[]; busy: number[] };
  flows: { from: number[]; to: number[]; from_row: number[]; from_depth: number[]; from_ts: number[];
    to_row: number[]; to_depth: number[]; to_ts: number[] };
  counters: Counter[];
  tracks?: { id: string; label: string; unit: string; values: (number | null)[] }[];
}
/** An event in brief: stack entries, launching operator, search hits. */
export interface Brief { id: number; name: string; row: number; depth: number; ts: number; dur: number; python?: boolean; }
export interface EventInfo {
  id: number; table: string; name: string; row: number; depth: number; ts: number; dur: number;
  args: Dict; flow: null | { id: number; name: string; row: number; ts: number; dur: number };
  stack?: Brief[]; launched_by?: Brief | null; launch?: Brief | null;
}
export interface SearchResult {
  names: number[]; count: number; first: number[];
  /** the first hits in time order (name = string id, spelled in `strings`) */
  hits?: { id: number[]; row: number[]; depth: number[]; ts: number[]; dur: number[]; name: number[] };
  strings?: Record<string, string>;
}
export interface Progress { state: string; done: number; total: number; error: string | null; elapsed_s: number; }
export interface Config { source_link: string; path_map: [string, string][]; mode: string; }
export interface RunTree { root: string; runs: { run: string; workers: { worker: string; spans: { span: string; trace: string; size: number; kind?: string; time?: number }[] }[] }[]; }
/** `stepscope diff --html` inlines a stepscope.diff/1 document as its report: only Compare shows. */
export const isDiff = (r: Dict) => typeof r.schema === "string" && r.schema.startsWith("stepscope.diff/");
/** `stepscope diff A B --html` on two TensorRT engines: only the engine comparison shows. */
export const isEngineDiff = (r: Dict) => typeof r.schema === "string" && r.schema.startsWith("stepscope.tensorrt-diff/");
/** `stepscope report DIR --html` inlines a run report (several ranks): the Distributed page shows it. */
export const isRun = (r: Dict) => r.source?.format === "run";
/** Every trace of a logdir tree, with the label the pickers show ("run / worker / span"). */
export function traceList(runs: RunTree | null) {
  return runs?.runs.flatMap((r) => r.workers.flatMap((w) => w.spans.map((s) => ({
    run: r.run, worker: w.worker, ...s, label: `${r.run} / ${w.worker}${s.span ? ` / ${s.span}` : ""}` })))) ?? [];
}
