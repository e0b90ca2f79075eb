// Numbers are the JSON report's: times in one unit per column or card (see timeUnit), % with 2 decimals.
export const pct = (x: number | null | undefined) => (x == null ? "—" : x.toFixed(2));
/** A percentage with its sign: "55.51 %", or "—" alone when the trace has no value. */
export const pctUnit = (x: number | null | undefined) => (x == null ? "—" : `${x.toFixed(2)} %`);
/** `fmt`: the number alone (cells under a header naming the unit); `text`: with the unit. */
export interface TimeUnit { label: string; div: number; fmt: (us: number | null | undefined) => string; text: (us: number | null | undefined) => string; }
/** One time unit for a set of µs values (a table column, a card, a chart), so it never mixes
 * units: picked from the largest magnitude as the terminal's `units.column_unit` (ms from 1 ms
 * up, else µs), plus s from 1 s up. 3 decimals in it: a µs column keeps the JSON's precision
 * and a ms one still shows whole µs. tests/browser/helpers.py mirrors this. */
export function timeUnit(valuesUs: Iterable<number | null | undefined>): TimeUnit {
  let big = 0;
  for (const v of valuesUs) if (v != null && Number.isFinite(v)) big = Math.max(big, Math.abs(v));
  const [label, div] = big >= 1e6 ? ["s", 1e6] : big >= 1e3 ? ["ms", 1e3] : ["µs", 1];
  const fmt = (x: number | null | undefined) => (x == null ? "—" : num(x / div, 3));
  return { label, div, fmt, text: (x) => (x == null ? "—" : `${fmt(x)} ${label}`) };
}
/** One µs value in its own unit: "98.562 ms". */
export const timeText = (us: number | null | undefined) => timeUnit([us]).text(us);
/** An ECharts value axis for µs data, labelled in `u` (the data stay µs; tooltips: `valueFormatter: u.text`);
 * its pointer label also heads an axis tooltip. */
export const timeAxis = (u: TimeUnit, more: Record<string, unknown> = {}) => ({
  type: "value", name: u.label, axisLabel: { formatter: (v: number) => String(+(v / u.div).toFixed(3)) },
  axisPointer: { label: { formatter: (p: { value: number }) => u.text(p.value) } }, ...more,
});
export const int = (x: number | null | undefined) => (x == null ? "—" : num(x));
/** A number with thousands separators and `nd` decimals, as the terminal prints figures
 * (Python's "{:,}"): "12,345", "1,234.57". Every page formats counts through it. */
export function num(x: number | null | undefined, nd = 0): string {
  if (x == null || !Number.isFinite(x)) return "—";
  // toFixed rounds the double's exact value (as every other figure here); Intl would round
  // its shortest decimal form and differ on ties (1.2445 -> 1.245 where toFixed says 1.244)
  const [int, frac] = x.toFixed(nd).split(".");
  const grouped = int.replace(/\B(?=(\d{3})+(?!\d))/g, ",");
  return frac === undefined ? grouped : `${grouped}.${frac}`;
}
const BYTE_UNITS: [string, number][] = [["TiB", 2 ** 40], ["GiB", 2 ** 30], ["MiB", 2 ** 20], ["KiB", 2 ** 10]];
/** Bytes in the binary unit that fits the value, as the terminal's units.format_bytes:
 * "512 B", "1.50 KiB", "2.60 GiB" (never "0.00 MiB" for a few bytes). */
/** One binary unit for a set of byte values (a chart axis, a table column), picked from the
 * largest, as `bytes()` picks it for one value: [unit, divisor]. */
export function bytesUnit(values: Iterable<number | null | undefined>): [string, number] {
  let big = 0;
  for (const v of values) if (v != null && Number.isFinite(v)) big = Math.max(big, Math.abs(v));
  for (const [unit, size] of BYTE_UNITS) if (big >= size) return [unit, size];
  return ["B", 1];
}
export function bytes(n: number | null | undefined): string {
  if (n == null || !Number.isFinite(n)) return "—";
  for (const [unit, size] of BYTE_UNITS) if (Math.abs(n) >= size) return `${num(n / size, 2)} ${unit}`;
  return `${num(n)} B`;
}
/** Tick labels: as few digits as the tick step needs. */
export function tickLabel(ns: number, step: number): string {
  const [div, unit] = step >= 1e8 ? [1e9, "s"] : step >= 1e5 ? [1e6, "ms"] : step >= 1e2 ? [1e3, "µs"] : [1, "ns"];
  const nd = Math.max(0, Math.min(3, -Math.floor(Math.log10(step / div) + 1e-9)));
  return (ns / div).toFixed(nd) + " " + unit;
}
export function dur(ns: number): string {
  if (ns >= 1e9) return num(ns / 1e9, 3) + " s";
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
/** Prose from the report (findings, notes) with each label kept on the line of its value:
 * a no-break space between a number and its unit ("44 %", "2.82 ms", "1.50 GiB") and after
 * "stage", "rank", "step", "window" before a number, so "stage 1" and "44 %" never wrap apart. */
export function glue(text: string): string {
  return text
    .replace(/(\d) (%|[kMGT]?i?B(?:\/s)?|[nµm]?s|GB\/s|TFLOP\/s|GFLOP|W)(?![\w])/g, "$1\u00a0$2")
    .replace(/\b(stage|stages|rank|ranks|step|steps|window|GPU|device|stream) (\d)/gi, "$1\u00a0$2");
}
