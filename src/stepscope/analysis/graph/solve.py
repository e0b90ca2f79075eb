"""Longest paths over the chains-and-cross-edges graph, without a loop per node.

Along one chain, t_i = max(t_{i-1} + w_i, c_i), where c_i is the best arrival over the
cross edges into node i (or its anchor). With S_i the chain's prefix sum of weights this
is t_i = S_i + max_{j<=i}(c_j - S_j): a cumulative sum and a running maximum, for all
chains at once (segments kept apart by an offset per segment). The cross edges are then
relaxed from the new times and the chains solved again, until nothing changes: the number
of rounds is the number of times the longest path changes chain, plus one.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from stepscope.analysis.graph.native import longest_native
from stepscope.errors import UsageError

I64 = npt.NDArray[np.int64]
B = npt.NDArray[np.bool_]

SPAN = 1 << 40  # ns (~18 min): the longest window the offsets below keep exact
NEG = -(1 << 41)  # "unreached"
_OFFSET = 1 << 43  # per segment; 2**63 / 2**43 = 1M segments


@dataclass(frozen=True)
class Solution:
    t: I64  # per node: longest-path value (NEG when unreached)
    entry: I64  # per chain position: position where the path enters this chain segment
    via: I64  # per node: cross edge giving its arrival, -1 (anchor or chain)
    pos: I64  # per node: its chain position
    rounds: int  # solve rounds (1: the native pass, in topological order)


def longest(order: I64, first: B, w: I64, xs: I64, xd: I64, xw: I64, anchor: I64,
            max_rounds: int = 100_000, check_span: bool = True,
            identity: bool = False, start: I64 | None = None) -> Solution:
    """``identity``: ``order`` is ``arange(n)`` (the slices of :func:`longest_sliced`), so
    node ids are chain positions and no gather or scatter is needed. ``start``: the first
    round's arrivals are taken from these times (see :func:`verified`)."""
    n = len(anchor)
    m = len(order)
    if check_span and m and (int(np.abs(anchor[anchor > NEG]).max(initial=0)) > SPAN):
        raise UsageError("window longer than 18 minutes: choose a shorter one with --window")
    # (temporaries are dropped, and arrays updated in place, as soon as they can be: on
    # the replay graph of a 1 GB trace each of them is ~28 MB)
    offset = np.cumsum(first) - 1  # the segment of each position ...
    offset *= _OFFSET  # ... times the per-segment offset
    s = np.cumsum(np.where(first, 0, w))
    start_pos = np.maximum.accumulate(np.where(first, np.arange(m), 0))
    s -= s[start_pos]
    del start_pos
    shift = offset - s  # a = c - s + offset for reached nodes
    low = offset + 2 * NEG  # unreached
    if identity:
        pos = order
    else:
        pos = np.empty(n, dtype=np.int64)
        pos[order] = np.arange(m)
    t = np.full(n, NEG, dtype=np.int64) if start is None else start
    # arrivals over the cross edges (NEG from unreached sources: they raise nothing)
    src = t[xs]
    arr = np.where(src > NEG, src + xw, NEG) if start is not None else None
    a = low
    rounds = 0
    while True:
        rounds += 1
        c = anchor.copy()
        if arr is not None and len(arr):
            np.maximum.at(c, xd, arr)
        cpos = c if identity else c[order]
        del c
        a = cpos + shift  # np.where(cpos > NEG, cpos + shift, low), in place
        np.copyto(a, low, where=cpos <= NEG)
        del cpos
        new = np.maximum.accumulate(a)
        new -= offset
        unreached = new <= NEG // 2  # np.where(new > NEG // 2, new + s, NEG), in place
        new += s
        new[unreached] = NEG
        del unreached
        if identity:
            t = new
        else:
            t = np.full(n, NEG, dtype=np.int64)
            t[order] = new
        del new
        # done when no cross edge would raise its destination: the next round's arrivals
        # lie between this round's and these times, which the chains then reproduce
        src = t[xs]
        arr = np.where(src > NEG, src + xw, NEG)
        if not (arr > t[xd]).any() or rounds >= max_rounds:
            break
    del offset, s, shift, low
    # enter at the latest position that raised the running maximum (chain preferred on
    # ties: a strict rise is needed)
    run = np.maximum.accumulate(a)
    rise = first.copy()
    if m:  # a rise over the running maximum before it (none before the first position)
        rise[0] |= a[0] > np.iinfo(np.int64).min
        rise[1:] |= a[1:] > run[:-1]
    del run, a
    entry = np.maximum.accumulate(np.where(rise, np.arange(m), 0))
    return Solution(t, entry, _via(t, xs, xd, xw, anchor), pos, rounds)


def verified(order: I64, first: B, w: I64, xs: I64, xd: I64, xw: I64, anchor: I64,
             guess: I64) -> Solution | None:
    """The solution, if it is ``guess``: one round from ``guess`` gives ``guess`` back and
    raises no node. The recurrence t_i = max(anchor_i, t_j + w_ji over its in-edges) has one
    solution on a DAG, so a guess that satisfies it is the longest paths (the unmodified
    replay reproduces the recorded times: one round instead of a solve). Where the native
    pass is built, it solves instead and compares (the same answer, cheaper than a round)."""
    native = _native(order, first, w, xs, xd, xw, anchor)
    if native is not None:  # solved in one pass: the guess is right or it is not
        return native if np.array_equal(native.t, guess) else None
    sol = longest(order, first, w, xs, xd, xw, anchor, max_rounds=1, start=guess)
    return sol if np.array_equal(sol.t, guess) and _settled(sol.t, xs, xd, xw) else None


def _native(order: I64, first: B, w: I64, xs: I64, xd: I64, xw: I64,
            anchor: I64) -> Solution | None:
    """:func:`longest`'s solution by the native pass (longest.c), or None where it is not
    built or declines (then numpy solves)."""
    got = longest_native(order, first, w, xs, xd, xw, anchor)
    if got is None:
        return None
    t, entry = got
    pos = np.empty(len(anchor), dtype=np.int64)
    pos[order] = np.arange(len(order))
    return Solution(t, entry, _via(t, xs, xd, xw, anchor), pos, 1)


def _settled(t: I64, xs: I64, xd: I64, xw: I64) -> bool:
    src = t[xs]
    return not ((src > NEG) & (src + xw > t[xd])).any()


def backtrack(sol: Solution, order: I64, xs: I64, end_node: int) -> tuple[I64, I64]:
    """The path ending at ``end_node``: the chain positions whose in-edge it uses, and
    the cross edges it takes. One step per change of chain."""
    chain_pos: list[I64] = []
    cross: list[int] = []
    v = end_node
    for _ in range(len(order) + 1):
        p = int(sol.pos[v])
        j = int(sol.entry[p])
        if p > j:
            chain_pos.append(np.arange(j + 1, p + 1, dtype=np.int64))
        u = int(order[j])
        x = int(sol.via[u])
        if x < 0:
            break
        cross.append(x)
        v = int(xs[x])
    pos = np.concatenate(chain_pos) if chain_pos else np.empty(0, np.int64)
    return pos, np.asarray(cross, dtype=np.int64)


MAX_SLICES = 4096  # a slice costs a few numpy calls: cap their number on huge traces
MIN_SLICE = 2048  # positions: smaller slices join the next (see longest_sliced)
MAX_SLICE = 1 << 16  # positions: longer stretches without a wait are cut by time as well


def longest_sliced(order: I64, first: B, w: I64, xs: I64, xd: I64, xw: I64, anchor: I64,
                   node_time: I64, cuts: I64) -> Solution:
    """:func:`longest`, slice after slice of recorded time. The rounds of :func:`longest`
    are the changes of chain along the path, mostly device -> host at each
    synchronisation: cut after each waiting call's end (``cuts``), and each slice needs
    two or three rounds over its own nodes, the earlier slices' times being final. Edges
    run forward in recorded time; a node whose edge would cross back is moved to its
    source's slice."""
    n, m = len(anchor), len(order)
    if m and (int(np.abs(anchor[anchor > NEG]).max(initial=0)) > SPAN):
        raise UsageError("window longer than 18 minutes: choose a shorter one with --window")
    native = _native(order, first, w, xs, xd, xw, anchor)
    if native is not None:  # the same times, entries and edges in one pass (longest.c)
        return native
    # and every ~MAX_SLICE nodes of recorded time: a round over a slice that fits the CPU's
    # cache costs a fraction of one over millions of nodes (a graph without waits, e.g.
    # with drop_sync, would otherwise be solved in rounds over all of it)
    if m > MAX_SLICE:
        stride = max(m // (1 << 16), 1)  # the cut times from a sample of ~64 k node times
        sample = np.sort(node_time[::stride])
        per = max(MAX_SLICE // stride, 1)
        cuts = np.concatenate((cuts, sample[per::per]))
    cuts = np.unique(cuts)
    if len(cuts) > MAX_SLICES:
        cuts = cuts[np.linspace(0, len(cuts) - 1, MAX_SLICES).astype(np.int64)]
    if m == 0 or len(cuts) == 0:
        return longest(order, first, w, xs, xd, xw, anchor)
    sl = np.searchsorted(cuts, node_time, side="left").astype(np.int64)
    chain = np.cumsum(first) - 1
    for _ in range(m + 1):  # slices non-decreasing along chains and cross edges
        s_pos = sl[order]
        big = int(sl.max()) + 2  # per chain offset: the running max stays in its chain
        lifted = np.maximum.accumulate(s_pos + chain * big) - chain * big
        sl[order] = lifted
        back = sl[xs] > sl[xd]
        if not back.any():
            break
        np.maximum.at(sl, xd[back], sl[xs[back]])
    del chain, lifted, s_pos, back
    # a slice costs a few dozen numpy calls whatever its size: slices smaller than
    # MIN_SLICE positions join the next ones (a non-decreasing renumbering, so edges still
    # run forward); the rounds of a joined slice grow with the waits it holds, over few nodes
    sizes = np.bincount(sl[order], minlength=int(sl.max()) + 1)
    sl = ((np.cumsum(sizes) - sizes) // MIN_SLICE)[sl]
    pos = np.empty(n, dtype=np.int64)
    pos[order] = np.arange(m)
    s_pos = sl[order]
    last = int(s_pos.max())
    # slice numbers fit 16 bits (MAX_SLICES): numpy's stable sort is then a radix sort
    key = s_pos.astype(np.int16) if last < (1 << 15) else s_pos
    p_sort = np.argsort(key, kind="stable")  # positions by slice, chain order kept
    bounds = np.searchsorted(s_pos[p_sort], np.arange(last + 2))
    del key, s_pos
    x_sl = sl[xd]
    x_key = x_sl.astype(np.int16) if last < (1 << 15) else x_sl
    x_sort = np.argsort(x_key, kind="stable")
    x_bounds = np.searchsorted(x_sl[x_sort], np.arange(last + 2))
    t = np.full(n, NEG, dtype=np.int64)
    entry = np.arange(m)
    rounds = 0
    for k in range(last + 1):  # one iteration per slice, vectorised inside
        p = p_sort[bounds[k]:bounds[k + 1]]
        if len(p) == 0:
            continue
        nodes = order[p]
        sub_first = first[p].copy()
        # a chain continuing from the previous slice starts here with its carried time
        cont = np.ones(len(p), dtype=bool)
        cont[1:] = p[1:] != p[:-1] + 1
        cont &= ~first[p]
        sub_first |= cont
        a = anchor[nodes].copy()
        kind = np.zeros(len(p), dtype=np.int8)  # 0 anchor, 1 carried, 2 external edge
        ci = np.flatnonzero(cont)
        carried = t[order[p[ci] - 1]] + w[p[ci]]
        better = carried >= a[ci]
        a[ci[better]] = carried[better]
        kind[ci[better]] = 1
        xe = x_sort[x_bounds[k]:x_bounds[k + 1]]
        inner = xe[sl[xs[xe]] == k]
        outer = xe[sl[xs[xe]] < k]
        def local(v: I64, p: I64 = p) -> I64:  # nodes of this slice -> their sub index
            out: I64 = np.searchsorted(p, pos[v])
            return out
        if len(outer):
            arr = t[xs[outer]] + xw[outer]
            ok = t[xs[outer]] > NEG
            d = local(xd[outer])
            best = np.full(len(p), NEG, dtype=np.int64)
            np.maximum.at(best, d[ok], arr[ok])
            win = ok & (arr == best[d]) & (arr > a[d])
            a[d[win]] = arr[win]
            kind[d[win]] = 2
        sub = longest(np.arange(len(p)), sub_first, w[p], local(xs[inner]), local(xd[inner]),
                      xw[inner], a, check_span=False, identity=True)
        rounds = max(rounds, sub.rounds)
        t[nodes] = sub.t
        # entries back to global positions; a carried entry continues the previous slice's
        e_local = sub.entry
        glob = p[e_local]
        # (unless an edge inside the slice brought the entry's time)
        carried_entry = (kind[e_local] == 1) & (sub.via[e_local] < 0)
        glob = np.where(carried_entry, entry[np.maximum(p[e_local] - 1, 0)], glob)
        entry[p] = glob
    return Solution(t, entry, _via(t, xs, xd, xw, anchor), pos, rounds)


def _via(t: I64, xs: I64, xd: I64, xw: I64, anchor: I64) -> I64:
    """Per node, the cross edge its arrival comes from, as :func:`longest` picks it: of the
    edges with the latest arrival (from a reached source) the last, when that arrival
    beats the node's anchor; -1 otherwise. A function of the final times alone, so that
    the path does not depend on where the slices were cut."""
    src = t[xs]
    ok = src > NEG
    arr = np.where(ok, src + xw, NEG)
    best = np.full(len(t), NEG, dtype=np.int64)
    np.maximum.at(best, xd, arr)
    hit = ok & (arr == best[xd]) & (best[xd] > anchor[xd])
    via = np.full(len(t), -1, dtype=np.int64)
    via[xd[hit]] = np.flatnonzero(hit)
    return via
