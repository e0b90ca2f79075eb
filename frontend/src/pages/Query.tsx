// SQL over the trace's tables (docs/sql.md): an editor, the result as a table, and a bar chart
// of the first numeric column (labelled by the first text column). The server runs the query.
import { useEffect, useMemo, useState } from "preact/hooks";
import type { PageProps } from "../pageProps";
import { Table, type Column } from "../table";
import { Chart } from "../chart";

const EXAMPLE = "SELECT name, count(*) AS calls, sum(dur_us) AS total_us\nFROM kernels\nGROUP BY name\nORDER BY total_us DESC\nLIMIT 20";
const ENGINE_EXAMPLE = "SELECT name, type, precision, average_us\nFROM layers\nORDER BY average_us DESC\nLIMIT 20";
const BARS = 50; // the chart shows the first rows only

interface Result { columns: string[]; numeric: boolean[]; row_count: number; truncated: boolean; rows: any[][]; }
type Row = { i: number; v: any[] };

const cell = (v: any): string => (v == null ? "NULL" : typeof v === "object" ? JSON.stringify(v) : String(v));
const short = (s: string) => (s.length > 40 ? s.slice(0, 19) + "…" + s.slice(-19) : s);

function chartOption(r: Result | null): Record<string, unknown> | null {
  if (!r || r.rows.length === 0) return null;
  const num = r.numeric.indexOf(true);
  if (num < 0) return null;
  const label = r.numeric.indexOf(false);
  const rows = r.rows.slice(0, BARS);
  return {
    tooltip: { trigger: "axis" },
    grid: { left: 80, right: 20, top: 30, bottom: 90 },
    xAxis: { type: "category", data: rows.map((row, i) => (label >= 0 ? short(cell(row[label])) : String(i + 1))),
      axisLabel: { rotate: 40, fontSize: 10 } },
    yAxis: { type: "value", name: r.columns[num] },
    series: [{ type: "bar", name: r.columns[num], data: rows.map((row) => (row[num] == null ? null : Number(row[num]))) }],
  };
}

export function Query({ source, trace, report }: PageProps) {
  const [text, setText] = useState(report.tensorrt ? ENGINE_EXAMPLE : EXAMPLE);
  const [result, setResult] = useState<Result | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const run = async (query: string) => {
    if (!source.sql) return;
    setBusy(true);
    try {
      const r = await source.sql(trace, query);
      if (r.status !== 200) { setError(r.body?.error ?? `HTTP ${r.status}`); setResult(null); }
      else { setError(null); setResult(r.body as Result); }
    } catch (e) { setError(String(e)); setResult(null); } finally { setBusy(false); }
  };
  useEffect(() => { run(text); }, [trace]);
  const rows = useMemo<Row[]>(() => (result?.rows ?? []).map((v, i) => ({ i, v })), [result]);
  const cols = useMemo<Column<Row>[]>(() => (result?.columns ?? []).map((name, j) => ({
    key: `c${j}`, label: name, num: result!.numeric[j], value: (r: Row) => r.v[j], render: (r: Row) => cell(r.v[j]),
  })), [result]);
  const option = useMemo(() => chartOption(result), [result]);
  return (
    <div class="page" id="page-query">
      <h2>Query (SQL over this input's tables: {report.tensorrt ? "layers, findings" : "kernels, runtime, host_ops, links, steps, …"}; see docs/sql.md)</h2>
      <textarea id="query-text" aria-label="SQL query" rows={7} spellcheck={false} style="width: 100%; font-family: monospace"
        value={text} onInput={(e) => setText((e.target as HTMLTextAreaElement).value)}
        onKeyDown={(e) => { if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) { e.preventDefault(); run(text); } }} />
      <p><button id="query-run" disabled={busy} onClick={() => run(text)}>{busy ? "running…" : "Run (Ctrl+Enter)"}</button>
        {result && <span id="query-count"> {result.row_count} row{result.row_count === 1 ? "" : "s"}
          {result.truncated ? `, first ${result.rows.length} shown` : ""}</span>}</p>
      {error && <p class="error" id="query-error">{error}</p>}
      {option && <Chart option={option} height={300} id="query-chart" />}
      {result && <Table key={result.columns.join("\u0001")} id="query-table" rows={rows} cols={cols} />}
    </div>
  );
}
