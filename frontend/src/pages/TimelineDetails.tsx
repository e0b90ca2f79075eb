// The timeline's details panel: the event's fields with units, the operator that launched it,
// its flow partner and the ranges that enclose it (Python frames and operators, outermost first).
import type { PageProps } from "../pageProps";
import type { Brief, EventInfo, TimelineMeta } from "../types";
import { bytes, dur, num, sourceLink } from "../format";

const LABELS: Record<string, string> = {
  external_id: "External id", correlation: "correlation", registers: "registers / thread", shared_mem: "shared memory",
  blocks_per_sm: "blocks per SM", occupancy_pct: "est. achieved occupancy", bytes: "bytes", input_dims: "input dims",
  input_types: "input types", concrete_inputs: "concrete inputs", input_strides: "input strides", kind: "kind",
  pid: "pid", tid: "tid", device: "device", stream: "stream",
};

function bytesText(n: number): string {
  return Math.abs(n) < 1024 ? bytes(n) : `${bytes(n)} (${num(n)} B)`;
}

/** The event's own fields as rows [label, text]: grid/block as triples, bytes in units. */
export function fields(args: Record<string, unknown>): [string, string][] {
  const out: [string, string][] = [];
  const a = args as Record<string, any>;
  for (const [k, v] of Object.entries(a)) {
    if (k === "call_stack" || /^(grid|block)_[xyz]$/.test(k)) continue;
    let text = String(v);
    if ((k === "bytes" || k === "shared_mem") && typeof v === "number") text = bytesText(v);
    else if (k === "occupancy_pct" && typeof v === "number") text = `${v.toFixed(1)} %`;
    else if (k === "blocks_per_sm" && typeof v === "number") text = v.toFixed(2);
    out.push([LABELS[k] ?? k, text]);
  }
  for (const g of ["grid", "block"]) if (a[`${g}_x`] !== undefined) out.push([g, `[${a[`${g}_x`]}, ${a[`${g}_y`] ?? 1}, ${a[`${g}_z`] ?? 1}]`]);
  return out;
}

export function EventPanel({ ev, meta, config, onGo }: { ev: EventInfo; meta: TimelineMeta; config: PageProps["config"]; onGo: (b: Brief) => void }) {
  const recorded = typeof ev.args.call_stack === "string" ? (ev.args.call_stack as string).split(";").filter(Boolean) : [];
  const row = meta.rows[ev.row];
  const stack = ev.stack ?? [];
  const flow = ev.flow ? { ...ev.flow, depth: ev.launch?.depth ?? 0 } : null;
  const link = (b: Brief, text: string, id?: string) => <button id={id} onClick={() => onGo(b)}>{text}</button>;
  return (
    <div class="event-details-grid">
      <div>
        <h3 id="event-name">{ev.name}</h3>
        <table class="kv"><tbody>
          <tr><td>track</td><td>{row?.group} / {row?.label}</td></tr>
          <tr><td>start</td><td class="val">{dur(ev.ts)}</td></tr>
          <tr><td>duration</td><td class="val" id="event-dur">{dur(ev.dur)}</td></tr>
          <tr><td>depth</td><td class="val">{ev.depth}</td></tr>
          {fields(ev.args).map(([k, v]) => <tr key={k}><td>{k}</td><td class="val">{v}</td></tr>)}
        </tbody></table>
        {ev.launched_by && <p id="launched-by">launched by operator: {link(ev.launched_by, ev.launched_by.name, "follow-op")} ({dur(ev.launched_by.dur)})</p>}
        {flow && <p>flow: <button id="follow-flow" onClick={() => onGo({ ...flow, depth: ev.table === "device" ? (ev.launch?.depth ?? 0) : 0 })}>
          {ev.table === "device" ? "← go to launch" : "→ go to kernel"}: {ev.flow!.name}</button></p>}
      </div>
      <div>
        {stack.length > 0 && <div id="event-stack"><b>call stack</b> <span class="dim">(outermost first{stack.some((s) => s.python) ? `; ${stack.filter((s) => s.python).length} Python frames` : ""})</span>
          <ul class="event-stack">{stack.map((s) => {
            const src = s.python ? sourceLink(s.name, config.source_link, config.path_map) : null;
            return <li key={s.id} class={s.python ? "py" : ""}>{link(s, s.name)} {src && <a href={src} title="open the source">↗</a>}</li>;
          })}</ul></div>}
        {recorded.length > 0 && <div><b>recorded call stack</b><ul class="stack">{recorded.map((f, i) => {
          const l = sourceLink(f, config.source_link, config.path_map);
          return <li key={i}>{l ? <a href={l}>{f}</a> : f}</li>;
        })}</ul></div>}
      </div>
    </div>
  );
}
