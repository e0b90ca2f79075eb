// The run's critical path across ranks (`critical_path` of `stepscope report DIR`: every
// rank's replay graph, collectives joined at the last arrival; docs/whatif.md, "A run of
// ranks"): which rank the path runs through, where it changes rank, its longest events.
import { Table, timeCol, type Column } from "../table";
import { num, pctUnit, timeText } from "../format";

type K = Record<string, any>;

const WAITS: Column<K>[] = [
  { key: "collective", label: "collective", value: (r) => r.collective },
  { key: "rank", label: "rank that waited", num: true, value: (r) => r.rank },
  { key: "waited_on_rank", label: "waited on rank", num: true, value: (r) => r.waited_on_rank },
  timeCol("wait_us", "wait"),
];

const BY_RANK: Column<K>[] = [
  { key: "rank", label: "rank", num: true, value: (r) => r.rank, render: (r) => (r.rank < 0 ? "in no event (gaps between events, joined collectives)" : String(r.rank)) },
  timeCol("us", "time on the path per step"),
  { key: "pct", label: "% of the path", num: true, value: (r) => r.pct, render: (r) => r.pct.toFixed(2) },
];

const EVENTS: Column<K>[] = [
  { key: "name", label: "event", value: (r) => r.name },
  { key: "rank", label: "rank", num: true, value: (r) => r.rank },
  { key: "category", label: "category", value: (r) => r.category },
  timeCol("on_path_us", "on the path"),
];

export function RunPathView({ p }: { p: K }) {
  const length: number = p.length_us;
  const byRank = Object.entries(p.by_rank_us as Record<string, number>)
    .map(([rank, us]) => ({ rank: Number(rank), us, pct: length > 0 ? (100 * us) / length : 0 }))
    .filter((r) => r.us > 0).sort((a, b) => b.us - a.us);
  // the rest: the joined collectives themselves and time between events (no rank's event owns it)
  const joined = length - byRank.reduce((s, r) => s + r.us, 0);
  const rows = joined > 0.5 ? [...byRank, { rank: -1, us: joined, pct: (100 * joined) / length }] : byRank;
  const through = byRank.find((r) => r.rank === p.runs_through_rank);
  const cats = Object.entries(p.by_category_us as Record<string, number>).filter(([, us]) => us > 0)
    .sort((a, b) => b[1] - a[1]);
  return (
    <div id="run-path">
      <p id="run-path-summary"><span class="nowrap"><b>{timeText(length)}</b> per step</span> · <span class="nowrap">ends on rank {p.end_rank}</span>
        {through && <> · <span class="nowrap">runs through rank <b>{p.runs_through_rank}</b> ({pctUnit(through.pct)} of it)</span></>}
        {p.straggler != null && <> · <span class="nowrap">straggler: rank {p.straggler}</span> (the others' collectives wait for it)</>}
        {" · "}<span class="nowrap">slowest rank's replayed step {timeText(p.step_us)} (rank {p.slowest_rank})</span>
        {" · "}<span class="nowrap">{num(p.joined_collectives)} collectives joined</span></p>
      <p class="dim">{p.definition}. Time by category: {cats.map(([c, us]) => `${c} ${timeText(us)}`).join(" · ") || "—"}.</p>
      {p.note && <p class="note" role="note" id="run-path-note">{p.note}</p>}
      {p.waits.length > 0 && <><h4>Where the path changes rank</h4>
        <Table id="run-path-waits" rows={p.waits} cols={WAITS} /></>}
      <h4>Time on the path by rank</h4>
      <Table id="run-path-ranks" rows={rows} cols={BY_RANK} limit={20} />
      <h4>Longest events on the path</h4>
      <Table id="run-path-events" rows={p.events} cols={EVENTS} searchKey={(r) => r.name} limit={20} />
    </div>
  );
}
