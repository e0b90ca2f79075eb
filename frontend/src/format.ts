// Numbers are shown exactly as the JSON report has them (µs with 3 decimals, % with 2).
export const us = (x: number | null | undefined) => (x == null ? "—" : x.toFixed(3));
export const pct = (x: number | null | undefined) => (x == null ? "—" : x.toFixed(2));
/** A percentage with its sign: "55.51 %", or "—" alone when the trace has no value. */
export const pctUnit = (x: number | null | undefined) => (x == null ? "—" : `${x.toFixed(2)} %`);
/** One time unit for a whole view, from its largest µs value: ms from 1 ms up, else µs. */
export function timeUnit(maxUs: number): { label: string; fmt: (x: number | null | undefined) => string } {
  const [label, div] = Math.abs(maxUs) >= 1000 ? ["ms", 1000] : ["µs", 1];
  return { label, fmt: (x) => (x == null ? "—" : (x / div).toFixed(3)) };
}
export const int = (x: number | null | undefined) => (x == null ? "—" : String(x));
/** Tick labels: as few digits as the tick step needs. */
export function tickLabel(ns: number, step: number): string {
  const [div, unit] = step >= 1e8 ? [1e9, "s"] : step >= 1e5 ? [1e6, "ms"] : step >= 1e2 ? [1e3, "µs"] : [1, "ns"];
  const nd = Math.max(0, Math.min(3, -Math.floor(Math.log10(step / div) + 1e-9)));
  return (ns / div).toFixed(nd) + " " + unit;
}
export function dur(ns: number): string {
  if (ns >= 1e9) return (ns / 1e9).toFixed(3) + " s";
  if (ns >= 1e6) return (ns / 1e6).toFixed(3) + " ms";
  if (ns >= 1e3) return (ns / 1e3).toFixed(3) + " µs";
  return ns.toFixed(0) + " ns";
}
/** Stack frame / source line "path(123): fn" or "path:123" -> a link by the configured template. */
export function sourceLink(frame: string, template: string, pathMap: [string, string][]): string | null {
  const m = /^\s*(.+?)(?:\((\d+)\)|:(\d+))/.exec(frame);
  if (!m) return null;
  let path = m[1];
  const line = m[2] ?? m[3];
  for (const [remote, local] of pathMap) if (path.startsWith(remote)) { path = local + path.slice(remote.length); break; }
  if (!/^[\w./\\~-]/.test(path) || path.includes("..")) return null;
  const link = template.split("{path}").join(encodeURI(path)).split("{line}").join(line);
  return /^(vscode|pycharm|cursor|idea|https?|file):/i.test(link) ? link : null;
}
export function color(name: string): string {
  let h = 0;
  for (let i = 0; i < name.length; i++) h = (h * 31 + name.charCodeAt(i)) | 0;
  return `hsl(${Math.abs(h) % 360},55%,62%)`;
}
/** Text for HTML strings (ECharts tooltip formatters return HTML): names are hostile input. */
export function esc(s: unknown): string {
  return String(s ?? "").replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]!);
}
/** TensorRT times are ms (trtexec's unit), shown with 4 decimals on every TensorRT page. */
export const ms4 = (x: number | null | undefined) => (x == null ? "—" : x.toFixed(4));
