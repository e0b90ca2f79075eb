"""The dependency graph of a run of ranks (docs/whatif.md, "A run of ranks").

Every rank's replay graph (build.py; on CPU with its backend's collective work, hostcomm.py)
is laid side by side on one clock, and each collective matched across ranks
(analysis/distributed/collectives.py, passed in as :class:`Joins`) becomes one joint event:
every member's start arrives at it (``kinds.ARRIVE``), it lasts the call's transfer time (the
shortest duration among the members: the last to arrive waits for nobody), and its end
releases every member's end (``kinds.RELEASE``). A member's own time is the transfer too, so
no rank's collective can end before the last rank has arrived plus the transfer. Solved as
one graph (solve.py), the longest path crosses ranks where a rank waited for another.

Clocks: ranks' traces each have their own clock (Kineto's times are per process). A
collective completes on all its members together, so each rank's clock is shifted to make
the matched calls end together: the median, over the calls it shares with a rank already
placed, of the difference of their ends (the first rank is the reference; ranks reached
through no shared call keep the wall clock, ``baseTimeNanoseconds``). The replay then
reproduces the recorded times (each member's recorded end is the last arrival plus the
transfer, up to that median).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from stepscope.analysis.events.links import Links
from stepscope.analysis.graph import kinds as K
from stepscope.analysis.graph.build import Graph, build
from stepscope.analysis.graph.critical import PATH_EVENTS, PathEvent, TopRows, path_events
from stepscope.analysis.graph.hostcomm import wire
from stepscope.analysis.graph.solve import (
    NEG,
    SPAN,
    Solution,
    backtrack,
    longest_sliced,
    verified,
)
from stepscope.analysis.graph.transforms import Edit, Transform
from stepscope.analysis.graph.whatif import CATEGORY_KEYS, _first_node
from stepscope.analysis.graph.window import Window
from stepscope.errors import UsageError
from stepscope.model.trace import Trace

I64 = npt.NDArray[np.int64]
B = npt.NDArray[np.bool_]


@dataclass(frozen=True)
class RankInput:
    rank: int
    trace: Trace
    links: Links
    windows: list[Window]  # the rank's analysed steps (step_windows(..., device_end=True))


@dataclass(frozen=True)
class Joins:
    """Collective calls matched across ranks, one row per member: the call's index in
    ``labels``, the member's index in the inputs, and the call's start and duration in that
    rank's trace (ns, the trace's clock)."""

    call: I64
    member: I64
    start: I64
    dur: I64
    labels: tuple[str, ...]  # per call: what it is ("allreduce #3", ...)


@dataclass(frozen=True)
class RankStep:
    rank: int
    step_ns: int  # replayed mean step of the rank
    steps: int


@dataclass(frozen=True)
class RunTiming:
    step_ns: int  # the slowest rank's replayed step
    slowest_rank: int
    ranks: tuple[RankStep, ...]
    by_category_ns: dict[str, int]  # along the run's longest path, per step of its end rank


@dataclass(frozen=True)
class RunPathEvent:
    event: PathEvent
    rank: int  # the rank the event ran on (for a joint collective: the rank it released)
    waited_on_rank: int | None  # joint collectives: the member that arrived last


@dataclass(frozen=True)
class CollectiveWait:
    label: str
    rank: int  # the rank whose path continues after the collective
    waited_on_rank: int  # the last to arrive
    wait_ns: int  # how long ``rank``'s member had been in the call when the last arrived


@dataclass(frozen=True)
class RunPath:
    timing: RunTiming
    length_ns: int  # the path, first node to last, per step of its end rank
    end_rank: int  # the rank whose event ends the path
    runs_through_rank: int  # the rank holding most of the path's own time (the straggler)
    by_rank_ns: dict[int, int]  # the path's time on each rank's events, per step
    waits: tuple[CollectiveWait, ...]  # collectives where the path changes rank, in time order
    events: tuple[RunPathEvent, ...]  # by time on the path, largest first
    joined_calls: int  # collectives joined across ranks in the graph
    clock_offsets_ns: dict[int, int]  # per rank: added to its trace's times
    clock_source: dict[int, str]  # per rank: "collectives" | "wall clock" | "reference"


@dataclass(frozen=True)
class RunReplay:
    before: RunTiming
    after: RunTiming
    touched: tuple[int, ...]  # per transform, summed over ranks


def _work_rows(trace: Trace, start: I64, dur: I64) -> I64:
    """Host rows of the calls' backend ranges (CPU runs): same start and duration."""
    host = trace.host
    lo = np.searchsorted(host.ts, start, side="left")
    hi = np.searchsorted(host.ts, start, side="right")
    lc = np.minimum(lo, max(len(host) - 1, 0))
    one = (hi - lo == 1) & (host.dur[lc] == dur) if len(host) else np.zeros(len(lo), bool)
    rows = [lo[one]]
    for i in np.flatnonzero(hi - lo > 1).tolist():  # ranges starting together: rare
        hit = np.flatnonzero(host.dur[lo[i]:hi[i]] == dur[i])
        if len(hit):
            rows.append(np.array([lo[i] + hit[0]], dtype=np.int64))
    return np.unique(np.concatenate(rows)).astype(np.int64)


def _locate(g: Graph, fam: int, start: I64, dur: I64) -> I64:
    """The event of ``g`` (of family ``fam``) with each call's start and end, -1 if none."""
    ev = np.flatnonzero(g.fam == fam)
    out = np.full(len(start), -1, dtype=np.int64)
    if len(ev) == 0 or len(start) == 0:
        return out
    s = g.ts[2 * ev] + g.t0
    o = np.argsort(s, kind="stable")
    ev, s = ev[o], s[o]
    lo = np.searchsorted(s, start, side="left")
    hi = np.searchsorted(s, start, side="right")
    end = start + dur
    one = (hi - lo) == 1
    c = ev[np.minimum(lo, len(ev) - 1)]
    good = one & (g.ts[2 * c + 1] + g.t0 == end)
    out[good] = c[good]
    for i in np.flatnonzero(hi - lo > 1).tolist():  # equal starts: rare
        cand = ev[lo[i]:hi[i]]
        hit = cand[g.ts[2 * cand + 1] + g.t0 == end[i]]
        if len(hit):
            out[i] = hit[0]
    return out


CAUSAL_TOLERANCE_NS = 10_000  # clock resolution and the profiler's own jitter


def _clock_offsets(inputs: Sequence[RankInput], joins: Joins) -> tuple[I64, list[str]]:
    """Per input, the shift onto the run's clock (see the module doc)."""
    n, calls = len(inputs), len(joins.labels)
    base = np.array([int(i.trace.meta.base_time_ns or 0) for i in inputs], dtype=np.int64)
    wall = base - base[0]
    if calls == 0:
        return wall, ["reference"] + ["wall clock"] * (n - 1)
    # the wall clock is kept when no call ends on a rank before another rank started it
    s = joins.start + wall[joins.member]
    last = np.full(calls, np.iinfo(np.int64).min, dtype=np.int64)
    np.maximum.at(last, joins.call, s)
    first_end = np.full(calls, np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(first_end, joins.call, s + joins.dur)
    if int((last - first_end).max()) <= CAUSAL_TOLERANCE_NS:
        return wall, ["reference"] + ["wall clock"] * (n - 1)
    end = np.full((calls, n), np.nan)
    end[joins.call, joins.member] = (joins.start + joins.dur).astype(np.float64)
    off = wall.astype(np.float64)
    source = ["reference"] + ["wall clock"] * (n - 1)
    placed = np.zeros(n, dtype=bool)
    placed[0] = True
    for _ in range(n):  # one pass per rank placed
        grew = False
        for i in np.flatnonzero(~placed).tolist():
            for j in np.flatnonzero(placed).tolist():
                both = ~np.isnan(end[:, i]) & ~np.isnan(end[:, j])
                if both.any():
                    off[i] = float(np.median(end[both, j] + off[j] - end[both, i]))
                    placed[i], grew = True, True
                    source[i] = "collective ends"
                    break
        if not grew:
            break
    return np.rint(off).astype(np.int64), source


class RunGraph:
    """One graph over every rank's analysed steps, collectives joined across ranks."""

    def __init__(self, inputs: Sequence[RankInput], joins: Joins) -> None:
        if not inputs:
            raise UsageError("a run's graph needs at least one rank")
        self.inputs = list(inputs)
        self.labels = joins.labels
        self.offsets, self.clock_source = _clock_offsets(self.inputs, joins)
        graphs: list[Graph] = []
        located = np.full(len(joins.call), -1, dtype=np.int64)
        for i, inp in enumerate(self.inputs):
            sel = np.flatnonzero(joins.member == i)
            tr = inp.trace
            ws, we = inp.windows[0].start, inp.windows[-1].end
            on_host = not tr.has_gpu
            rows = _work_rows(tr, joins.start[sel], joins.dur[sel]) if on_host else None
            g = build(tr, inp.links, ws, we, mode="replay", extra_host=rows)
            if rows is not None and len(rows):
                host_ev = np.flatnonzero(g.fam == K.HOST)
                g = wire(g, host_ev[np.isin(g.row[host_ev], rows)])
            located[sel] = _locate(g, K.HOST if on_host else K.DEVICE, joins.start[sel],
                                   joins.dur[sel])
            graphs.append(g)
        # calls joined: two or more members in the graphs
        ok = located >= 0
        counts = np.bincount(joins.call[ok], minlength=len(joins.labels))
        ok &= counts[joins.call] >= 2
        call, member, ev = joins.call[ok], joins.member[ok], located[ok]
        start = joins.start[ok] + self.offsets[member]
        dur = joins.dur[ok]
        last = np.full(len(joins.labels), np.iinfo(np.int64).min, dtype=np.int64)
        np.maximum.at(last, call, start)
        # a member's own time is what it spent after the last arrival; the transfer is the
        # shortest of these (collectives.py's shortest duration when the members end
        # together: the last to arrive waited for nobody); the rest of a member's time is
        # kept on its release edge, so the recorded ends are reproduced
        post = np.clip(start + dur - last[call], 0, dur)
        transfer = np.full(len(joins.labels), np.iinfo(np.int64).max, dtype=np.int64)
        np.minimum.at(transfer, call, post)
        release = post - transfer[call]
        for i, g in enumerate(graphs):
            m = member == i
            if m.any():
                pos = np.empty(2 * g.events, dtype=np.int64)
                pos[g.order] = np.arange(len(g.order))
                w = g.w.copy()
                p_end = pos[2 * ev[m] + 1]
                # ranges with nested ops (gloo copies into the output inside its range) keep
                # their children's recorded offsets: only the tail after the last one shrinks
                own = g.order[p_end - 1] == 2 * ev[m]
                w[p_end] = np.where(own, post[m], np.minimum(w[p_end], post[m]))
                graphs[i] = dataclasses.replace(g, w=w)
        self.graphs = graphs
        self._assemble(call, member, ev, transfer, release)

    def _assemble(self, call: I64, member: I64, ev: I64, transfer: I64, release: I64) -> None:
        gs = self.graphs
        n_ev = np.array([g.events for g in gs], dtype=np.int64)
        self.eoff = np.concatenate(([0], np.cumsum(n_ev)))
        shift = np.array([g.t0 for g in gs], dtype=np.int64) + self.offsets
        t_zero = int(shift.min())
        self.t_zero = t_zero
        ts = np.concatenate([g.ts + (s - t_zero) for g, s in zip(gs, shift, strict=True)])
        # joint events: one per joined call, after every rank's events
        joint, c_idx = np.unique(call, return_inverse=True)
        n_j = len(joint)
        g_ev = self.eoff[member] + ev  # members as union events
        arrive = ts[2 * g_ev]
        last = np.full(n_j, NEG, dtype=np.int64)
        np.maximum.at(last, c_idx, arrive)
        base = int(self.eoff[-1])
        v = base + np.arange(n_j, dtype=np.int64)
        vt = np.empty(2 * n_j, dtype=np.int64)
        vt[0::2], vt[1::2] = last, last + transfer[joint]
        self.ts = np.concatenate((ts, vt))
        if len(self.ts) and int(self.ts.max()) > SPAN:
            raise UsageError("the run's steps span more than 18 minutes on the aligned "
                             "clock: choose fewer steps")
        noff = 2 * self.eoff
        vo = np.empty(2 * n_j, dtype=np.int64)
        vo[0::2], vo[1::2] = 2 * v, 2 * v + 1
        vf = np.zeros(2 * n_j, dtype=bool)
        vf[0::2] = True
        vw = np.zeros(2 * n_j, dtype=np.int64)
        vw[1::2] = transfer[joint]
        vk = np.full(2 * n_j, K.OPERATOR, dtype=np.int8)
        vk[0::2] = K.DEPENDENCY
        vown = np.full(2 * n_j, -1, dtype=np.int64)
        vown[1::2] = v
        self.order = np.concatenate([g.order + noff[i] for i, g in enumerate(gs)] + [vo])
        self.first = np.concatenate([g.first for g in gs] + [vf])
        self.base_w = [g.w for g in gs] + [vw]
        self.owner = np.concatenate([np.where(g.owner >= 0, g.owner + self.eoff[i], -1)
                                     for i, g in enumerate(gs)] + [vown])
        cat_v = np.full(2 * n_j, K.NO_CATEGORY, dtype=np.int8)
        cat_v[1::2] = K.COMMUNICATION
        self.cat = np.concatenate([g.cat for g in gs] + [cat_v])
        jx = len(g_ev)
        self.xs = np.concatenate([g.xs + noff[i] for i, g in enumerate(gs)]
                                 + [2 * g_ev, 2 * v[c_idx] + 1])
        self.xd = np.concatenate([g.xd + noff[i] for i, g in enumerate(gs)]
                                 + [2 * v[c_idx], 2 * g_ev + 1])
        self.xkind = np.concatenate([g.xkind for g in gs]
                                    + [np.full(jx, K.ARRIVE, np.int8),
                                       np.full(jx, K.RELEASE, np.int8)])
        self.xowner = np.concatenate([np.where(g.xowner >= 0, g.xowner + self.eoff[i], -1)
                                      for i, g in enumerate(gs)] + [v[c_idx], v[c_idx]])
        self.xcat = np.concatenate([g.xcat for g in gs]
                                   + [np.full(jx, K.NO_CATEGORY, np.int8),
                                      np.full(jx, K.COMMUNICATION, np.int8)])
        self.join_w = np.concatenate((np.zeros(jx, dtype=np.int64), release))
        self.xoff = np.concatenate(([0], np.cumsum([len(g.xs) for g in gs])))
        self.joint_call = joint
        self.joint_members = (c_idx, member)
        self.member_event = g_ev  # per member row: its event in the union
        self.joint_transfer = transfer[joint]
        # per rank: the node each step starts at, and its number of steps
        self.first_node = np.array([(_first_node(g, inp.windows[0].start) + noff[i])
                                    if g.events else -1
                                    for i, (g, inp) in enumerate(zip(gs, self.inputs,
                                                                     strict=True))],
                                   dtype=np.int64)
        self.periods = np.array([max(len(inp.windows), 1) for inp in self.inputs])
        self.node_rank = np.concatenate([np.full(2 * g.events, i, dtype=np.int64)
                                         for i, g in enumerate(gs)]
                                        + [np.full(2 * n_j, -1, dtype=np.int64)])
        self._before: tuple[RunTiming, Solution, I64] | None = None

    @property
    def joined_calls(self) -> int:
        return len(self.joint_call)

    def _edit(self, transforms: tuple[Transform, ...]) -> tuple[I64, I64, B, list[tuple[I64, I64]],
                                                               tuple[int, ...]]:
        ws, xws, keeps, finish = [], [], [], []
        touched = np.zeros(len(transforms), dtype=np.int64)
        for i, (g, inp) in enumerate(zip(self.graphs, self.inputs, strict=True)):
            e = Edit(g.w.copy(), g.xw.copy(), np.ones(len(g.xs), dtype=bool), [])
            for k, t in enumerate(transforms):
                touched[k] += t.apply(inp.trace, inp.links, g, e)
            ws.append(e.w)
            xws.append(e.xw)
            keeps.append(e.xkeep)
            finish += [(s + 2 * self.eoff[i], d) for s, d in e.finish]
        jx = len(self.join_w)
        w = np.concatenate([*ws, self.base_w[-1]])
        xw = np.concatenate([*xws, self.join_w])
        keep = np.concatenate([*keeps, np.ones(jx, dtype=bool)])
        return w, xw, keep, finish, tuple(int(x) for x in touched)

    def _solve(self, w: I64, xw: I64, keep: B, finish: list[tuple[I64, I64]],
               as_recorded: bool = False) -> tuple[RunTiming, Solution, I64]:
        n = len(self.ts)
        has_in = np.zeros(n, dtype=bool)
        has_in[self.order[~self.first]] = True
        has_in[self.xd[keep]] = True
        anchor = np.where(has_in, NEG, self.ts)
        xs, xd = self.xs[keep], self.xd[keep]
        sol = (verified(self.order, self.first, w, xs, xd, xw[keep], anchor, self.ts)
               if as_recorded else None)
        if sol is None:
            cuts = self.ts[xd[self.xkind[keep] == K.SYNC]] + 1  # after each waiting call's end
            sol = longest_sliced(self.order, self.first, w, xs, xd, xw[keep], anchor, self.ts,
                                 cuts)
        t = sol.t
        last = np.full(len(self.inputs), NEG, dtype=np.int64)
        ok = (self.node_rank >= 0) & (t > NEG)
        np.maximum.at(last, self.node_rank[ok], t[ok])
        for start, dur in finish:  # work taken off the chains must still end in the step
            if len(start):
                np.maximum.at(last, self.node_rank[start], t[start] + dur)
        steps = []
        for i, inp in enumerate(self.inputs):  # one per rank
            fn = int(self.first_node[i])
            begin = int(t[fn]) if fn >= 0 else 0
            span = max(int(last[i]) - begin, 0) if last[i] > NEG else 0
            steps.append(RankStep(inp.rank, round(span / int(self.periods[i])),
                                  int(self.periods[i])))
        slow = max(range(len(steps)), key=lambda k: (steps[k].step_ns, -k))
        # the breakdown of the run's longest path (kept edges mapped back to all edges)
        kept = np.flatnonzero(keep)
        via = np.where(sol.via >= 0, kept[np.maximum(sol.via, 0)], -1) if len(kept) else \
            np.full_like(sol.via, -1)
        full = Solution(t, sol.entry, via, sol.pos, sol.rounds)
        end = int(np.argmax(np.where(self.node_rank >= 0, t, NEG)))
        by = self._categories(full, end, w, xw)
        per = int(self.periods[self.node_rank[end]])
        fn = int(self.first_node[self.node_rank[end]])
        begin = int(t[fn]) if fn >= 0 else 0
        by["other"] = max(int(t[end]) - begin - sum(by.values()), 0)
        timing = RunTiming(steps[slow].step_ns, steps[slow].rank, tuple(steps),
                           {k: round(by.get(k, 0) / per) for k in CATEGORY_KEYS})
        return timing, full, np.asarray([end], dtype=np.int64)

    def _categories(self, sol: Solution, end: int, w: I64, xw: I64) -> dict[str, int]:
        pos, cross = backtrack(sol, self.order, self.xs, end)
        cat = np.concatenate((self.cat[pos], self.xcat[cross])).astype(np.int64)
        wt = np.concatenate((w[pos], xw[cross]))
        keep = cat >= 0
        by = np.bincount(cat[keep], weights=wt[keep], minlength=len(K.CATEGORIES))
        return {k: int(v) for k, v in zip(K.CATEGORIES, by.round().tolist(), strict=True)}

    def times(self, transforms: tuple[Transform, ...] = ()) -> I64:
        """Every node's replayed time (ns on the run's clock) with ``transforms``."""
        w, xw, keep, finish, _ = self._edit(transforms)
        return self._solve(w, xw, keep, finish)[1].t

    def before(self) -> RunTiming:
        if self._before is None:
            w, xw, keep, finish, _ = self._edit(())
            self._before = self._solve(w, xw, keep, finish, as_recorded=True)
        return self._before[0]

    def replay(self, transforms: tuple[Transform, ...]) -> RunReplay:
        """Every rank replayed with ``transforms`` applied to each; the run's step is the
        slowest rank's."""
        before = self.before()
        if not transforms:
            return RunReplay(before, before, ())
        w, xw, keep, finish, touched = self._edit(transforms)
        after, _, _ = self._solve(w, xw, keep, finish)
        return RunReplay(before, after, touched)

    def critical_path(self) -> RunPath:
        """The run's longest path as recorded: from the event that ends last, back through
        the ranks each collective waited on."""
        timing = self.before()
        assert self._before is not None
        _, sol, ends = self._before
        end = int(ends[0])
        w, xw, _, _, _ = self._edit(())
        pos, cross = backtrack(sol, self.order, self.xs, end)
        owners = np.concatenate((self.owner[pos], self.xowner[cross]))
        cat = np.concatenate((self.cat[pos], self.xcat[cross])).astype(np.int64)
        wt = np.concatenate((w[pos], xw[cross]))
        has = (owners >= 0) & (cat >= 0)
        n_all = len(self.ts) // 2
        per_ev = np.bincount(owners[has], weights=wt[has], minlength=n_all)
        end_rank = int(self.node_rank[end])
        per = int(self.periods[end_rank])
        ev_rank = self.node_rank[0::2]
        # joint events: the rank released (RELEASE edge on the path) and the last arrival
        released = np.full(n_all, -1, dtype=np.int64)
        waited_on = np.full(n_all, -1, dtype=np.int64)
        waits: list[CollectiveWait] = []
        kinds = self.xkind[cross]
        for k in np.flatnonzero(kinds == K.RELEASE).tolist():  # one per rank change
            v = int(self.xs[cross[k]]) // 2
            dst_rank = int(self.node_rank[self.xd[cross[k]]])
            src_rank = -1
            if k + 1 < len(cross) and kinds[k + 1] == K.ARRIVE:
                src_rank = int(self.node_rank[self.xs[cross[k + 1]]])
            released[v], waited_on[v] = dst_rank, src_rank
            if src_rank >= 0 and src_rank != dst_rank:
                mine = self._member_start(v, dst_rank)
                waits.append(CollectiveWait(
                    self._label(v), self.inputs[dst_rank].rank, self.inputs[src_rank].rank,
                    int(self.ts[2 * v] - mine)))
        by_rank: dict[int, int] = {}
        own = per_ev[: int(self.eoff[-1])]
        for i, inp in enumerate(self.inputs):  # one per rank
            by_rank[inp.rank] = round(float(own[self.eoff[i]:self.eoff[i + 1]].sum()) / per)
        through = max(by_rank, key=lambda r: (by_rank[r], -r))
        touched = np.flatnonzero(per_ev > 0)
        top = touched[np.argsort(-per_ev[touched], kind="stable")][:PATH_EVENTS]
        events = [self._path_event(int(e), int(per_ev[e]), int(ev_rank[e]), int(released[e]),
                                   int(waited_on[e])) for e in top.tolist()]
        fn = int(self.first_node[end_rank])
        length = int(sol.t[end]) - (int(sol.t[fn]) if fn >= 0 else 0)
        return RunPath(
            timing=timing, length_ns=round(length / per), end_rank=self.inputs[end_rank].rank,
            runs_through_rank=through, by_rank_ns=by_rank, waits=tuple(reversed(waits)),
            events=tuple(events), joined_calls=self.joined_calls,
            clock_offsets_ns={inp.rank: int(o) for inp, o in zip(self.inputs, self.offsets,
                                                                  strict=True)},
            clock_source={inp.rank: s for inp, s in zip(self.inputs, self.clock_source,
                                                        strict=True)})

    def _member_start(self, v: int, rank_idx: int) -> int:
        c_idx, member = self.joint_members
        j = v - int(self.eoff[-1])
        sel = np.flatnonzero((c_idx == j) & (member == rank_idx))
        xs = self.xs[int(self.xoff[-1]) + sel]  # the ARRIVE edges' sources
        return int(self.ts[xs].min()) if len(xs) else int(self.ts[2 * v])

    def _label(self, v: int) -> str:
        return self.labels[int(self.joint_call[v - int(self.eoff[-1])])]

    def _path_event(self, e: int, on_path: int, rank_idx: int, released: int,
                    waited_on: int) -> RunPathEvent:
        if rank_idx < 0:  # a joint collective: its transfer time, on the released rank's clock
            v = e
            rel = max(released, 0)
            at = int(self.ts[2 * v]) + self.t_zero - int(self.offsets[rel])
            ev = PathEvent(self._label(v), "collective", at,
                           int(self.ts[2 * v + 1] - self.ts[2 * v]), None, None, on_path,
                           "communication")
            return RunPathEvent(ev, self.inputs[rel].rank,
                                self.inputs[waited_on].rank if waited_on >= 0 else None)
        g, inp = self.graphs[rank_idx], self.inputs[rank_idx]
        local = np.array([e - int(self.eoff[rank_idx])], dtype=np.int64)
        rows = TopRows(g.fam[local], g.row[local], np.array([on_path], dtype=np.int64),
                       g.ev_cat[local])
        ev = path_events(inp.trace, rows)[0]
        return RunPathEvent(ev, inp.rank, None)
