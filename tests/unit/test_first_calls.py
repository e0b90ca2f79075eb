"""warmup.first_calls leaves out the (operator, shapes) groups with no call of ``min_ns``
before sorting: the result must be that of judging every group."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from stepscope.analysis.events import intervals as iv
from stepscope.analysis.events.warmup import FIRST_CALL_RATIO, first_calls


def every_group(host: Any, ops: np.ndarray, min_ns: int) -> list[int]:
    """The definition, group by group over all of ``ops`` (no waits)."""
    out = []
    keys = sorted({(int(host.name[i]), int(host.input_dims[i])) for i in ops})
    for k in keys:
        calls = sorted((int(host.ts[i]), n, int(i)) for n, i in enumerate(ops)
                       if (int(host.name[i]), int(host.input_dims[i])) == k)
        durs = [float(host.dur[i]) for _, _, i in calls]
        if len(durs) >= 2 and durs[0] >= min_ns and \
                durs[0] >= FIRST_CALL_RATIO * float(np.median(durs[1:])):
            out.append(calls[0][2])
    return sorted(out)


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(-1, 2), st.integers(0, 10_000),
                          st.sampled_from([1, 5, 50, 99, 100, 101, 999, 1000, 5000])),
                min_size=0, max_size=40),
       st.sampled_from([1, 100, 1000]))
def test_first_calls_equal_judging_every_group(rows: list[tuple[int, int, int, int]],
                                               min_ns: int) -> None:
    name, dims, ts, dur = (np.array([r[k] for r in rows], dtype=np.int64) for k in range(4))
    host = SimpleNamespace(name=name.astype(np.int32), input_dims=dims.astype(np.int32),
                           ts=ts, dur=dur, end=ts + dur)
    ops = np.arange(len(rows), dtype=np.int64)
    got = first_calls(SimpleNamespace(host=host), ops, min_ns, iv.EMPTY)  # type: ignore[arg-type]
    assert got.tolist() == every_group(host, ops, min_ns)
