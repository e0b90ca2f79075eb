import { useState } from "preact/hooks";
import type { PageProps } from "../pageProps";
import { Table, timeCol, type Column } from "../table";
import { num, sourceLink } from "../format";
import type { Config } from "../types";

type Op = Record<string, any>;
const COLS: Column<Op>[] = [
  { key: "name", label: "operator", value: (r) => r.name },
  { key: "input_shape", label: "input shape", value: (r) => r.input_shape ?? "" },
  { key: "calls", label: "calls", num: true, value: (r) => r.calls, render: (r) => num(r.calls) },
  // four totals of the same operators: one unit for all of them
  timeCol("host_self_us", "host self", "op"),
  timeCol("host_total_us", "host total", "op"),
  timeCol("device_self_us", "device self", "op"),
  timeCol("device_total_us", "device total", "op"),
  { key: "tc_eligible", label: "TC eligible", value: (r) => (r.tc_eligible ? "yes" : "") },
];

function stackCol(config: Config): Column<Op> {
  return { key: "call_stack", label: "call stack", value: (r) => r.call_stack ?? "", render: (r) => (
    <ul class="stack">{(r.call_stack ?? "").split(";").filter(Boolean).map((f: string, i: number) => {
      const link = sourceLink(f, config.source_link, config.path_map);
      return <li key={i}>{link ? <a href={link}>{f}</a> : f}</li>;
    })}</ul>) };
}

export function Operators({ report, config }: PageProps) {
  const [group, setGroup] = useState<"name" | "shape" | "stack">("name");
  const rows = group === "name" ? report.operators : group === "shape" ? report.operators_by_shape : (report.operators_by_stack ?? []);
  const base = COLS.filter((c) => c.key !== "input_shape");
  const cols = group === "name" ? base : group === "shape" ? COLS : [base[0], stackCol(config), ...base.slice(1)];
  return (
    <div class="page" id="page-operators">
      <h2>Operators</h2>
      <label>group by <select id="op-group" value={group} onChange={(e) => setGroup((e.target as HTMLSelectElement).value as any)}>
        <option value="name">name</option><option value="shape">name + input shape</option><option value="stack">name + call stack</option></select></label>
      <Table key={group} id="operators-table" rows={rows} cols={cols} searchKey={(r) => r.name} initialSort="device_self_us" />
    </div>
  );
}
