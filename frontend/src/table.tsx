import { useMemo, useState } from "preact/hooks";
import type { ComponentChildren } from "preact";
import { timeUnit } from "./format";

/** `time`: `value` is µs, shown in one unit for the column, picked from all its rows (not the
 * filtered ones, so a search never changes it); the header gets the unit: "total ms". */
export interface Column<T> { key: string; label: string; num?: boolean; time?: boolean; value: (r: T) => any; render?: (r: T) => ComponentChildren; }

/** A µs column whose row field is `key`. */
export const timeCol = <T extends Record<string, any>>(key: string, label: string): Column<T> =>
  ({ key, label, num: true, time: true, value: (r) => r[key] });

/** Sortable, searchable table. Cell text goes through Preact, which escapes it. `limit`: render
 * only the first rows after sorting and searching (runs of thousands of ranks stay fast). */
export function Table<T>({ rows, cols, id, searchKey, initialSort, limit }: {
  rows: T[]; cols: Column<T>[]; id: string; searchKey?: (r: T) => string; initialSort?: string; limit?: number;
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
  const units = useMemo(() => cols.map((c) => (c.time ? timeUnit(rows.map(c.value)) : null)), [rows, cols]);
  return (
    <div class="table-wrap">
      {searchKey && <input class="search" id={`${id}-search`} placeholder="search by name…" value={filter}
        onInput={(e) => setFilter((e.target as HTMLInputElement).value)} />}
      <span class="count">{limit != null && shown.length > limit ? `first ${limit} of ${shown.length} rows (sort or search to see others)` : `${shown.length} rows`}</span>
      <table id={id}>
        <thead><tr>{cols.map((c, j) => (
          <th key={c.key} class={c.num ? "num" : ""} data-key={c.key}
            onClick={() => setSort({ key: c.key, desc: sort.key === c.key ? !sort.desc : true })}>
            {units[j] ? `${c.label} ${units[j]!.label}` : c.label}{sort.key === c.key ? (sort.desc ? " ▼" : " ▲") : ""}
          </th>))}</tr></thead>
        <tbody>{(limit != null ? shown.slice(0, limit) : shown).map((r, i) => (
          <tr key={i}>{cols.map((c, j) => <td key={c.key} class={c.num ? "num" : ""} data-key={c.key}>
            {c.render ? c.render(r) : units[j] ? units[j]!.fmt(c.value(r)) : c.value(r)}</td>)}</tr>
        ))}</tbody>
      </table>
    </div>
  );
}
