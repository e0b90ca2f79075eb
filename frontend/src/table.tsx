import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import type { ComponentChildren } from "preact";
import { num, timeUnit, type TimeUnit } from "./format";

/** `time`: `value` is µs, shown in one unit picked from all its rows (not the filtered ones, so
 * a search never changes it); the header gets the unit: "total ms". Time columns sharing a
 * `unit` group (default: their own key) share one unit, picked from all of them: related
 * columns (mean | min | max) never read "µs | µs | ms". */
export interface Column<T> { key: string; label: string; num?: boolean; time?: boolean; unit?: string; value: (r: T) => any; render?: (r: T) => ComponentChildren; }

/** A µs column whose row field is `key`; `unit` names the group of related columns sharing one unit. */
export const timeCol = <T extends Record<string, any>>(key: string, label: string, unit?: string): Column<T> =>
  ({ key, label, num: true, time: true, unit, value: (r) => r[key] });

/** One unit per time column, shared within each column's `unit` group. */
export function columnUnits<T>(rows: T[], cols: Column<T>[]): (TimeUnit | null)[] {
  const groups = new Map<string, number[]>();
  for (const c of cols) {
    if (!c.time) continue;
    const g = c.unit ?? c.key, vals = groups.get(g) ?? [];
    for (const r of rows) vals.push(c.value(r));
    groups.set(g, vals);
  }
  const units = new Map([...groups].map(([g, v]) => [g, timeUnit(v)]));
  return cols.map((c) => (c.time ? units.get(c.unit ?? c.key)! : null));
}

/** Sortable, searchable table. Cell text goes through Preact, which escapes it. Headers stay in
 * view (the wrap scrolls, the header row is sticky); each header is a button (keyboard) and the
 * sorted one carries aria-sort. */
export function Table<T>({ rows, cols, id, searchKey, initialSort, caption, limit }: {
  rows: T[]; cols: Column<T>[]; id: string; searchKey?: (r: T) => string; initialSort?: string; caption?: string; limit?: number;
}) {
  const [sort, setSort] = useState<{ key: string; desc: boolean }>({ key: initialSort ?? "", desc: true });
  const [filter, setFilter] = useState("");
  const shown = useMemo(() => {
    let out = rows;
    if (filter && searchKey) { const f = filter.toLowerCase(); out = out.filter((r) => searchKey(r).toLowerCase().includes(f)); }
    const col = cols.find((c) => c.key === sort.key);
    if (col) {
      out = [...out].sort((a, b) => {
        const x = col.value(a), y = col.value(b);
        const c = typeof x === "number" && typeof y === "number" ? x - y : String(x ?? "").localeCompare(String(y ?? ""));
        return sort.desc ? -c : c;
      });
    }
    return out;
  }, [rows, cols, sort, filter]);
  const units = useMemo(() => columnUnits(rows, cols), [rows, cols]);
  const more = useSideScroll();
  return (
    <div class="table-block">
      {searchKey && <input class="search" id={`${id}-search`} placeholder="search by name…" aria-label="search rows by name" value={filter}
        onInput={(e) => setFilter((e.target as HTMLInputElement).value)} />}
      <span class="count">{limit != null && shown.length > limit ? `first ${num(limit)} of ${num(shown.length)} rows (sort or search to see others)` : `${num(shown.length)} row${shown.length === 1 ? "" : "s"}`}
        {more.state && <span class="scroll-cue" id={`${id}-scroll-cue`}> · wider than the page: scroll sideways {more.state === "left" ? "←" : "→"}</span>}</span>
      <div class="table-frame" data-more={more.state || undefined}>
      <div class="table-wrap" ref={more.ref}>
      <table id={id}>
        {caption && <caption class="sr-only">{caption}</caption>}
        <thead><tr>{cols.map((c, j) => {
          const on = sort.key === c.key;
          return (
            <th key={c.key} class={c.num ? "num" : ""} data-key={c.key} scope="col"
              aria-sort={on ? (sort.desc ? "descending" : "ascending") : undefined}>
              <button type="button" class="sort" onClick={() => setSort({ key: c.key, desc: on ? !sort.desc : true })}>
                {units[j] ? `${c.label} ${units[j]!.label}` : c.label}{on ? (sort.desc ? " ▼" : " ▲") : ""}
              </button>
            </th>);
        })}</tr></thead>
        <tbody>{(limit != null ? shown.slice(0, limit) : shown).map((r, i) => (
          <tr key={i}>{cols.map((c, j) => <td key={c.key} class={c.num ? "num" : ""} data-key={c.key}>
            {c.render ? c.render(r) : units[j] ? units[j]!.fmt(c.value(r)) : c.value(r)}</td>)}</tr>
        ))}</tbody>
      </table>
      </div>
      </div>
    </div>
  );
}

/** Which sides of a scrolling box hide content ("left", "right", "left right", ""), kept up to
 * date on scroll and resize: the cue that a wide table scrolls sideways. */
function useSideScroll() {
  const ref = useRef<HTMLDivElement>(null);
  const [state, setState] = useState("");
  useEffect(() => {
    const el = ref.current;
    if (!el) return;
    const update = () => {
      const left = el.scrollLeft > 1, right = el.scrollLeft + el.clientWidth < el.scrollWidth - 1;
      setState([left && "left", right && "right"].filter(Boolean).join(" "));
    };
    update();
    el.addEventListener("scroll", update, { passive: true });
    const ro = new ResizeObserver(update);
    ro.observe(el);
    if (el.firstElementChild) ro.observe(el.firstElementChild);
    return () => { el.removeEventListener("scroll", update); ro.disconnect(); };
  }, []);
  return { ref, state };
}
