"""Level-of-detail lookup for the timeline: for any window and pixel width, the events wide
enough to draw one by one and the rest summed per (row, depth, pixel), in time bounded by
the answer's size rather than the trace's.

Events are grouped by duration level ``l = floor(log2(dur ns))``; inside a level they are
sorted by start, so the events of a level overlapping a window are one ``searchsorted``
away (a level-``l`` event lasts less than ``2**(l+1)`` ns, which bounds how early it can
start). A query ``ns_px`` ns per pixel wide, with ``L = floor(log2(ns_px))``:

* levels above ``L`` are wider than a pixel: drawn one by one (at most ~2 per pixel per
  row and depth, since same-depth events do not overlap);
* level ``L`` straddles the pixel: each of its events is compared with ``ns_px``;
* levels below ``L`` are narrower than a pixel and only summed. Zoomed in (few events in the
  window) they are summed from the events, exactly as the in-memory index always did;
  zoomed out they come from a pyramid built once: for each bin size ``2**b``, the count and
  total duration of the events shorter than ``2**b`` per (start bin, row, depth), bin-major,
  so a window is one contiguous slice. A bin is placed at the pixel of its start, so a
  pyramid answer differs from the event-by-event sum by under one pixel at the window's
  edges and in where inside a pixel an event started (the drawn shading is the same).

Everything is numpy over whole levels; Python loops run over the ~40 levels, never events.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

I64 = npt.NDArray[np.int64]

# Pyramid bins start at ~FINE mean event spacings: below that a window holds so few events
# (~FINE per pixel on average) that summing them directly is as fast as reading cells.
FINE = 64
DEPTH_BITS = 15  # depth is int16 (clipped at 32767)
_SLICE = 1 << 20  # events binned at a time while the pyramid is built


@dataclass(frozen=True)
class Cells:
    """Sums of the events shorter than ``2**b`` ns per (start bin, row, depth), bin-major."""

    key: I64  # bin << rd_bits | row << DEPTH_BITS | depth, sorted
    count: I64
    busy: I64  # summed duration (ns)


@dataclass(frozen=True)
class Answer:
    """Flat indices of the events drawn one by one, and the per-pixel sums of the rest."""

    events: I64
    agg_row: I64
    agg_depth: I64
    agg_px: I64
    agg_count: I64
    agg_busy: I64


class Lod:
    """The duration-level index and pyramid over a timeline's flat event columns."""

    def __init__(self, ts: I64, dur: I64, row: npt.NDArray[Any], depth: npt.NDArray[Any],
                 origin: int, n_rows: int) -> None:
        self.ts, self.dur, self.row, self.depth = ts, dur, row, depth
        self.origin = origin
        self.n = n = len(ts)
        self.rd_bits = DEPTH_BITS + max(1, int(n_rows).bit_length())
        level = _level(dur)
        # One sort by (level, start): start relative to the origin fits in 56 bits (2.2 years).
        # Built in place: this index is made for traces of tens of millions of events.
        key = ts - origin
        span = int(key.max()) + 1 if n else 1
        np.minimum(key, (1 << 56) - 1, out=key)
        high = level.astype(np.int64)
        high <<= 56
        key |= high
        del high
        order = np.argsort(key)
        del key
        self.lts: I64 = ts[order]
        self.level_off: I64 = np.searchsorted(level[order], np.arange(66)).astype(np.int64)
        self.max_level = int(level.max()) if n else -1
        del level
        self.perm: npt.NDArray[Any] = order.astype(np.int32) if n < 2**31 else order
        del order
        self.cells: dict[int, Cells] = {}
        if n:
            self._pyramid(span)

    def _rd(self, idx: I64) -> I64:
        rd: I64 = (self.row[idx].astype(np.int64) << DEPTH_BITS) | \
            np.minimum(self.depth[idx], (1 << DEPTH_BITS) - 1).astype(np.int64)
        return rd

    def _pyramid(self, span: int) -> None:
        first = max(0, int(np.log2(max(1.0, span / self.n * FINE))))
        top = max(first, int(span).bit_length())
        if (span >> first) >= 1 << (63 - self.rd_bits):  # cannot pack: no pyramid, direct sums
            return
        lo = int(self.level_off[min(first, 65)])
        cells = self._binned(0, lo, first)  # every event shorter than 2**first
        self.cells[first] = cells
        mask = (1 << self.rd_bits) - 1
        for b in range(first + 1, top + 1):
            # coarsen the previous level's bins and add the events of level b-1
            coarse = (((cells.key >> self.rd_bits) >> 1) << self.rd_bits) | (cells.key & mask)
            new = self._binned(int(self.level_off[b - 1]), int(self.level_off[b]), b)
            cells = _sum(np.concatenate((coarse, new.key)),
                         np.concatenate((cells.count, new.count)),
                         np.concatenate((cells.busy, new.busy)))
            self.cells[b] = cells

    def _binned(self, lo: int, hi: int, b: int) -> Cells:
        """Cells of the events perm[lo:hi] in bins of 2**b ns, summed a slice at a time
        (the cells are far fewer than the events: peak memory follows the slice)."""
        parts: list[Cells] = []
        for a in range(lo, hi, _SLICE):
            idx = self.perm[a:min(hi, a + _SLICE)]
            key = self.ts[idx] - self.origin
            key >>= b
            key <<= self.rd_bits
            key |= self._rd(idx)
            parts.append(_sum(key, np.ones(len(idx), np.int64), self.dur[idx]))
        if len(parts) == 1:
            return parts[0]
        return _sum(np.concatenate([c.key for c in parts] or [np.empty(0, np.int64)]),
                    np.concatenate([c.count for c in parts] or [np.empty(0, np.int64)]),
                    np.concatenate([c.busy for c in parts] or [np.empty(0, np.int64)]))

    def nbytes(self) -> int:
        """Bytes this index holds beyond the timeline's own columns."""
        return self.perm.nbytes + self.lts.nbytes + sum(
            c.key.nbytes + c.count.nbytes + c.busy.nbytes for c in self.cells.values())

    def _in_level(self, level: int, t0: int, t1: int) -> I64:
        """Flat indices of the level's events overlapping [t0, t1)."""
        lo, hi = int(self.level_off[level]), int(self.level_off[level + 1])
        if hi == lo:
            return np.empty(0, np.int64)
        seg = self.lts[lo:hi]
        a = lo + int(np.searchsorted(seg, max(t0 - (2 << level), -(1 << 62)), side="right"))
        b = lo + int(np.searchsorted(seg, t1))
        idx = self.perm[a:b]
        found: I64 = idx[self.ts[idx] + self.dur[idx] > t0]
        return found

    def query(self, start: int, end: int, width: int) -> Answer:
        """The window [origin+start, origin+end) drawn ``width`` px wide."""
        t0, t1 = self.origin + start, self.origin + end
        ns_px = (end - start) / width
        top = int(np.log2(ns_px)) if ns_px >= 1 else -1
        wide: list[I64] = []
        narrow: list[I64] = []
        for level in range(max(top, 0), self.max_level + 1):
            idx = self._in_level(level, t0, t1)
            if level == top:
                short = self.dur[idx] < ns_px
                narrow.append(idx[short])
                idx = idx[~short]
            wide.append(idx)
        # the pyramid level with the largest bins still no wider than a pixel: it sums the
        # events shorter than its bins; those between its bins and the pixel come one by one
        built = [b for b in self.cells if b <= top]
        top_cells = max(built) if built else 0
        cells = self.cells[top_cells] if built else None
        narrow += [self._in_level(level, t0, t1)
                   for level in range(top_cells, min(top, self.max_level + 1))]
        small = np.concatenate(narrow) if narrow else np.empty(0, np.int64)
        px = np.clip(((self.ts[small] - t0) / ns_px).astype(np.int64), 0, width - 1)
        keys = [(self._rd(small) * (width + 1)) + px]
        counts = [np.ones(len(small), np.int64)]
        busys = [self.dur[small]]
        if cells is not None:
            top = top_cells
            b_lo = max(0, t0 - self.origin) >> top
            b_hi = max(0, t1 - 1 - self.origin) >> top
            a = int(np.searchsorted(cells.key, b_lo << self.rd_bits))
            b = int(np.searchsorted(cells.key, (b_hi + 1) << self.rd_bits))
            key = cells.key[a:b]
            bin_start = (key >> self.rd_bits) << top
            cpx = np.clip(((bin_start + self.origin - t0) / ns_px).astype(np.int64), 0,
                          width - 1)
            keys.append((key & ((1 << self.rd_bits) - 1)) * (width + 1) + cpx)
            counts.append(cells.count[a:b])
            busys.append(cells.busy[a:b])
        summed = _sum(np.concatenate(keys), np.concatenate(counts), np.concatenate(busys))
        rd = summed.key // (width + 1)
        events = np.sort(np.concatenate([np.empty(0, np.int64), *wide])).astype(np.int64)
        return Answer(events, rd >> DEPTH_BITS, rd & ((1 << DEPTH_BITS) - 1),
                      summed.key % (width + 1), summed.count, summed.busy)


def _level(dur: I64) -> npt.NDArray[np.int8]:
    """floor(log2(max(dur, 1))): exact for every int64 below 2**53 ns (104 days)."""
    _, exp = np.frexp(np.maximum(dur, 1).astype(np.float64))
    level: npt.NDArray[np.int8] = np.clip(exp - 1, 0, 64).astype(np.int8)
    return level


def _sum(key: I64, count: I64, busy: I64) -> Cells:
    """Rows with equal keys summed, sorted by key."""
    if not len(key):
        return Cells(key, count, busy)
    order = np.argsort(key)  # equal keys are summed: their order does not matter
    key, count, busy = key[order], count[order], busy[order]
    first = np.flatnonzero(np.concatenate(([True], key[1:] != key[:-1])))
    return Cells(key[first], np.add.reduceat(count, first), np.add.reduceat(busy, first))
