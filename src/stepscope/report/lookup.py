"""Look-ups over a timeline index for the dashboard: search hits in time order, and an
event's context (the ranges that enclose it, the operator that launched a kernel).

The stack of an event is every range of its thread that encloses it, outermost first:
the operators of its own row and the Python frames of the thread's Python row (Kineto
records ``with_stack`` frames as ``python_function`` ranges, which nest the operators they
called). A kernel's launching operator is the innermost operator (not a Python frame, not
a runtime call) that encloses the runtime call whose correlation id the kernel carries:
that is the operator PyTorch was running when it called ``cudaLaunchKernel``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from stepscope.model.trace import HOST_PYTHON
from stepscope.report.timeline import T_DEVICE, T_HOST, T_RUNTIME, TimelineIndex

I64 = npt.NDArray[np.int64]
MAX_HITS = 1000  # search hits listed (the count covers all)
MAX_STACK = 200  # enclosing ranges listed


def search_hits(tl: TimelineIndex, text: str, limit: int = MAX_HITS) -> dict[str, Any]:
    """Events whose name contains ``text`` (case-insensitive), earliest first."""
    needle = text.lower()
    ids = [k for k, s in enumerate(tl.trace.strings) if needle in s.lower()]
    mask = np.isin(tl.name, np.asarray(ids, np.int32)) if ids else np.zeros(tl.n, bool)
    hits = np.flatnonzero(mask)
    hits = hits[np.argsort(tl.ts[hits], kind="stable")][:limit]
    names = np.unique(tl.name[hits])
    return {
        "names": ids, "count": int(mask.sum()), "first": hits.tolist(),
        "hits": {"id": hits.tolist(), "row": tl.row[hits].tolist(),
                 "depth": tl.depth[hits].tolist(), "ts": (tl.ts[hits] - tl.origin).tolist(),
                 "dur": tl.dur[hits].tolist(), "name": tl.name[hits].tolist()},
        "strings": {str(int(k)): tl.trace.name(int(k)) for k in names},
    }


def thread_rows(tl: TimelineIndex, row: int) -> list[int]:
    """The rows of the thread that ``row`` belongs to (its operators' and its Python row)."""
    r = tl.rows[row]
    if r.kind == "python":
        return [row] + ([r.of] if r.of >= 0 else [])
    if r.kind == "thread":
        return [row] + [p.id for p in tl.rows if p.kind == "python" and p.of == row]
    return [row]


def enclosing(tl: TimelineIndex, i: int) -> I64:
    """Flat indices of the ranges of ``i``'s thread that enclose it, outermost first."""
    t0, t1 = int(tl.ts[i]), int(tl.end[i])
    parts = []
    for row in thread_rows(tl, int(tl.row[i])):
        lo, hi = int(tl.row_lo[row]), int(tl.row_hi[row])
        a = lo + int(np.searchsorted(tl.ts[lo:hi], t0 - int(tl.row_maxdur[row])))
        b = lo + int(np.searchsorted(tl.ts[lo:hi], t0, side="right"))
        idx = np.arange(a, b, dtype=np.int64)
        parts.append(idx[(tl.end[a:b] >= t1) & (idx != i)])
    found = np.concatenate(parts) if parts else np.empty(0, np.int64)
    # outermost first: earlier start, then longer
    return found[np.lexsort((-tl.dur[found], tl.ts[found]))]


def _is_python(tl: TimelineIndex, idx: I64) -> npt.NDArray[np.bool_]:
    out = np.zeros(len(idx), bool)
    host = tl.table[idx] == T_HOST
    out[host] = tl.trace.host.kind[tl.src[idx[host]]] == HOST_PYTHON
    return out


def _brief(tl: TimelineIndex, j: int) -> dict[str, Any]:
    return {"id": j, "name": tl.trace.name(int(tl.name[j])), "row": int(tl.row[j]),
            "depth": int(tl.depth[j]), "ts": int(tl.ts[j] - tl.origin), "dur": int(tl.dur[j])}


def launching_op(tl: TimelineIndex, i: int) -> dict[str, Any] | None:
    """For a device op or a runtime call: the innermost operator around the launch."""
    t = int(tl.table[i])
    launch = int(tl.partner[i]) if t == T_DEVICE else i if t == T_RUNTIME else -1
    if launch < 0:
        return None
    around = enclosing(tl, launch)
    ops = around[(tl.table[around] == T_HOST) & ~_is_python(tl, around)]
    return _brief(tl, int(ops[-1])) if len(ops) else None


def context(tl: TimelineIndex, i: int) -> dict[str, Any]:
    """What the details panel shows beyond the event's own fields."""
    around = enclosing(tl, i)[-MAX_STACK:]
    py = _is_python(tl, around)
    stack = [{**_brief(tl, int(j)), "python": bool(p)}
             for j, p in zip(around.tolist(), py.tolist(), strict=True)]
    launch = int(tl.partner[i]) if int(tl.table[i]) == T_DEVICE else -1
    return {"stack": stack, "launched_by": launching_op(tl, i),
            "launch": _brief(tl, launch) if launch >= 0 else None}
