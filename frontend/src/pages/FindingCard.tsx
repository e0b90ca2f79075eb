import type { Config, Dict } from "../types";
import { pct, sourceLink, timeUnit } from "../format";

export function FindingCard({ f, config, index }: { f: Dict; config: Config; index: number }) {
  const saving = f.estimated_saving.us_per_step, u = timeUnit([saving]);
  return (
    <div class={`finding sev-${f.severity}`} data-id={f.id}>
      <h3><span class="idx">{index}.</span> <span class="title">{f.title}</span>
        <span class={`badge ${f.severity}`}>{f.severity}</span></h3>
      <p class="saving">saves up to <b class="saving-us">{u.fmt(saving)}</b> {u.label} per step
        (<b class="saving-pct">{pct(f.estimated_saving.pct_of_step)}</b> % of the step)</p>
      <p class="dim">estimate: {f.estimated_saving.how}</p>
      <ul>{(f.evidence as string[]).map((e, i) => <li key={i}>{e}</li>)}</ul>
      {f.source_lines.length > 0 && <div class="source"><b>source lines</b><ul>
        {(f.source_lines as string[]).map((s, i) => {
          const link = sourceLink(s, config.source_link, config.path_map);
          return <li key={i}>{link ? <a href={link}>{s}</a> : s}</li>;
        })}</ul></div>}
      <p class="fix"><b>fix:</b> {f.fix.text}</p>
      {f.fix.code && <pre class="code">{f.fix.code}</pre>}
      {f.references.length > 0 && <p class="dim">see {(f.references as string[]).join(", ")}</p>}
    </div>
  );
}
