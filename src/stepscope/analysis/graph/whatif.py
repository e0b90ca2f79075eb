"""Replays: the window's graph re-timed as recorded, then with transformations applied
(docs/whatif.md). "Before" is the unmodified replay, which reproduces the trace's times;
"after" keeps every duration and dependency the transformations leave."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from stepscope.analysis.events.links import Links
from stepscope.analysis.graph import kinds as K
from stepscope.analysis.graph.build import Graph, Index, build
from stepscope.analysis.graph.critical import path_breakdown
from stepscope.analysis.graph.solve import NEG, longest_sliced, verified
from stepscope.analysis.graph.transforms import Edit, Transform
from stepscope.analysis.graph.window import Window
from stepscope.model.trace import Trace

I64 = npt.NDArray[np.int64]

CATEGORY_KEYS = (*K.CATEGORIES, "other")  # other: window start to the path's first event


@dataclass(frozen=True)
class Timing:
    step_ns: int
    by_category_ns: dict[str, int]


@dataclass(frozen=True)
class WindowReplay:
    window: Window
    before: Timing
    after: Timing
    touched: tuple[int, ...]  # per transform


def _anchor(g: Graph, xkeep: npt.NDArray[np.bool_]) -> I64:
    """Nodes with no incoming edge keep their recorded time; the others are placed by
    their dependencies."""
    n = 2 * g.events
    has_in = np.zeros(n, dtype=bool)
    has_in[g.order[~g.first]] = True
    has_in[g.xd[xkeep]] = True
    return np.where(has_in, NEG, g.ts)


def _timing(trace: Trace, g: Graph, w: I64, xw: I64, xkeep: npt.NDArray[np.bool_],
            finish: list[tuple[I64, I64]], first_node: int, periods: int,
            as_recorded: bool = False) -> Timing:
    """Mean time per period from ``first_node``'s replayed time to the end of the last
    event, and its breakdown along the longest path (divided by ``periods``).
    ``as_recorded``: the unmodified graph, whose solution should be the recorded times
    (checked in one round; solved if not)."""
    xs, xd, xwk = g.xs[xkeep], g.xd[xkeep], xw[xkeep]
    anchor = _anchor(g, xkeep)
    sol = verified(g.order, g.first, w, xs, xd, xwk, anchor, g.ts) if as_recorded else None
    if sol is None:
        cuts = g.ts[xd[g.xkind[xkeep] == K.SYNC]]  # after each waiting call's end
        sol = longest_sliced(g.order, g.first, w, xs, xd, xwk, anchor, g.ts, cuts + 1)
    end = int(np.argmax(sol.t))
    last = int(sol.t[end])
    # the breakdown reads the kept cross edges by their index in the full arrays
    kept = np.flatnonzero(xkeep)
    via = (np.where(sol.via >= 0, kept[np.maximum(sol.via, 0)], -1) if len(kept)
           else np.full_like(sol.via, -1))  # no cross edges kept (a CPU-only trace): none used
    full = type(sol)(sol.t, sol.entry, via, sol.pos, sol.rounds)
    by, _, _ = path_breakdown(trace, g, full, end, w, xw, with_events=False)
    for start, dur in finish:  # work taken off the chains must still end in the step
        if len(start):
            last = max(last, int((sol.t[start] + dur).max()))
    begin = int(sol.t[first_node]) if first_node >= 0 else 0
    span = max(last - begin, 0)
    by["other"] = max(last - sum(by.values()), 0)  # before the path's first event
    # the path runs from the window start: what precedes the first step is not a step's
    if begin > 0:
        by["other"] = max(by["other"] - begin, 0)
        excess = sum(by.values()) - span
        if excess > 0:  # leading time of the path before the first step: take it off cpu
            by["cpu"] = max(by["cpu"] - excess, 0)
    return Timing(round(span / periods),
                  {k: round(v / periods) for k, v in by.items()})


def _first_node(g: Graph, start: int) -> int:
    """Start node of the first host event at or after ``start`` (ns, absolute)."""
    host = np.flatnonzero(g.fam != K.DEVICE)
    if len(host) == 0:
        return -1
    ts = g.ts[2 * host]
    after = host[ts >= start - g.t0]
    pick = after[np.argmin(g.ts[2 * after])] if len(after) else host[np.argmin(ts)]
    return int(2 * pick)


class Replayer:
    """One graph over consecutive windows (steps), replayed as recorded (``before``) and
    with any set of transformations (``run``): the device work of one step may still run
    when the next begins, as in the trace. A step's replayed time is the mean period from
    the first step's first host event to the end of the last event."""

    def __init__(self, trace: Trace, links: Links, windows: list[Window],
                 ix: Index | None = None) -> None:
        self.trace, self.links, self.periods = trace, links, max(len(windows), 1)
        self.window = Window(windows[0].label if len(windows) == 1 else
                             f"{windows[0].label} .. {windows[-1].label}",
                             windows[0].start, windows[-1].end)
        self.graph = build(trace, links, self.window.start, self.window.end, mode="replay",
                           ix=ix)
        self.first = _first_node(self.graph, self.window.start)
        self._before: Timing | None = None

    @property
    def before(self) -> Timing:
        """The unmodified replay, computed on first use (so that it can run beside the
        transformed ones: advice.replay); checked against the recorded times in one round."""
        if self._before is None:
            g = self.graph
            self._before = (self._timing(g.w, g.xw, np.ones(len(g.xs), dtype=bool), [], True)
                            if g.events else Timing(0, {k: 0 for k in CATEGORY_KEYS}))
        return self._before

    def _timing(self, w: I64, xw: I64, xkeep: npt.NDArray[np.bool_],
                finish: list[tuple[I64, I64]], as_recorded: bool = False) -> Timing:
        return _timing(self.trace, self.graph, w, xw, xkeep, finish, self.first, self.periods,
                       as_recorded)

    def run(self, transforms: tuple[Transform, ...]) -> WindowReplay:
        g = self.graph
        if g.events == 0 or not transforms:
            return WindowReplay(self.window, self.before, self.before,
                                tuple(0 for _ in transforms))
        after, touched = self.after(transforms)
        return WindowReplay(self.window, self.before, after, touched)

    def after(self, transforms: tuple[Transform, ...]) -> tuple[Timing, tuple[int, ...]]:
        """The replay with ``transforms`` applied, and what each touched; needs no
        ``before``. For a graph with events and at least one transform."""
        g = self.graph
        edit = Edit(g.w.copy(), g.xw.copy(), np.ones(len(g.xs), dtype=bool), [])
        touched = tuple(t.apply(self.trace, self.links, g, edit) for t in transforms)
        return self._timing(edit.w, edit.xw, edit.xkeep, edit.finish), touched


def what_if(trace: Trace, links: Links, windows: list[Window],
            transforms: tuple[Transform, ...]) -> WindowReplay:
    """The windows (steps) replayed together, before and after ``transforms``."""
    return Replayer(trace, links, windows).run(transforms)
