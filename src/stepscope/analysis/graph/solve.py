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
    rounds: int


def longest(order: I64, first: B, w: I64, xs: I64, xd: I64, xw: I64, anchor: I64,
            max_rounds: int = 100_000) -> Solution:
    n = len(anchor)
    m = len(order)
    if m and (int(np.abs(anchor[anchor > NEG]).max(initial=0)) > SPAN):
        raise UsageError("window longer than 18 minutes: choose a shorter one with --window")
    seg = np.cumsum(first) - 1
    w_eff = np.where(first, 0, w)
    s = np.cumsum(w_eff)
    start_pos = np.maximum.accumulate(np.where(first, np.arange(m), 0))
    s = s - s[start_pos]
    offset = seg.astype(np.int64) * _OFFSET
    pos = np.empty(n, dtype=np.int64)
    pos[order] = np.arange(m)
    t = np.full(n, NEG, dtype=np.int64)
    entry = np.arange(m)
    rounds = 0
    while True:
        rounds += 1
        c = anchor.copy()
        ok = t[xs] > NEG
        if ok.any():
            np.maximum.at(c, xd[ok], t[xs[ok]] + xw[ok])
        cpos = c[order]
        a = np.where(cpos > NEG, cpos - s, 2 * NEG) + offset
        run = np.maximum.accumulate(a)
        # enter at the latest position that raised the running maximum (chain preferred
        # on ties: a strict rise is needed)
        prev = np.concatenate(([np.iinfo(np.int64).min], run[:-1]))
        rise = first | (a > prev)
        entry = np.maximum.accumulate(np.where(rise, np.arange(m), 0))
        val = run - offset
        new = np.where(val > NEG // 2, val + s, NEG)
        t_new = np.full(n, NEG, dtype=np.int64)
        t_new[order] = new
        if np.array_equal(t_new, t) or rounds >= max_rounds:
            t = t_new
            break
        t = t_new
    via = np.full(n, -1, dtype=np.int64)
    ok = t[xs] > NEG
    arrive = np.where(ok, t[xs] + xw, NEG)
    best = np.full(n, NEG, dtype=np.int64)
    np.maximum.at(best, xd, arrive)
    hit = ok & (arrive == best[xd]) & (best[xd] > anchor[xd])
    via[xd[hit]] = np.flatnonzero(hit)
    return Solution(t, entry, via, pos, rounds)


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
