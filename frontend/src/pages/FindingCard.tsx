import type { Config, Dict } from "../types";
import { glue, pct, sourceLink, timeUnit } from "../format";

export function FindingCard({ f, config, index }: { f: Dict; config: Config; index: number }) {
  return (
    <div class={`finding sev-${f.severity}`} data-id={f.id}>
      <h3><span class="idx">{index}.</span> <span class="title">{glue(f.title)}</span>
        <span class={`badge ${f.severity}`}>{f.severity}</span></h3>
      <Saving s={f.estimated_saving} />
      <p class="dim">estimate: {glue(f.estimated_saving.how)}</p>
      <ul>{(f.evidence as string[]).map((e, i) => <li key={i}>{glue(e)}</li>)}</ul>
      {f.source_lines.length > 0 && <div class="source"><b>source lines</b><ul>
        {(f.source_lines as string[]).map((s, i) => {
          const link = sourceLink(s, config.source_link, config.path_map);
          return <li key={i}>{link ? <a href={link}>{s}</a> : s}</li>;
        })}</ul></div>}
      <p class="fix"><b>fix:</b> {glue(f.fix.text)}</p>
      {f.fix.code && <pre class="code">{f.fix.code}</pre>}
      {f.references.length > 0 && <p class="dim">see {(f.references as string[]).join(", ")}</p>}
    </div>
  );
}

/** A replayed saving (docs/whatif.md) is a prediction: the step re-timed with the fix; a
 * bound is the rule's own ceiling ("up to"), where the graph cannot model the fix. */
function Saving({ s }: { s: Dict }) {
  const saving = s.us_per_step as number, u = timeUnit([saving]);
  const share = <>(<b class="saving-pct">{pct(s.pct_of_step)}</b> % of the step)</>;
  if (s.method === "replay" && s.predicted_step_us != null) {
    const after = s.predicted_step_us as number, before = after + saving, su = timeUnit([before, after]);
    return (
      <p class="saving" data-method="replay">saves <b class="saving-us">{u.fmt(saving)}</b> {u.label} per step {share}:
        predicted step <b class="saving-before">{su.fmt(before)}</b> → <b class="saving-after">{su.fmt(after)}</b> {su.label} (replayed)</p>);
  }
  return <p class="saving" data-method="bound">saves up to <b class="saving-us">{u.fmt(saving)}</b> {u.label} per step {share}</p>;
}

/** Every replayable fix applied together (the report's `whatif`): one predicted step, so the
 * findings' savings need not be added up. */
export function Together({ report }: { report: Dict }) {
  const w = report.whatif as Dict | null | undefined;
  if (!w) return null;
  const u = timeUnit([w.before.step_us, w.after.step_us]);
  const rules = (w.applied as Dict[]).flatMap((a) => a.rules as string[]);
  return (
    <p class="note" id="findings-together">With the {rules.length} replayed fixes together ({rules.join(", ")}) the
      predicted step is <b>{u.fmt(w.before.step_us)} → {u.fmt(w.after.step_us)}</b> {u.label} (−{pct(w.saving_pct)} %);
      the savings below are each fix alone and overlap.</p>);
}
