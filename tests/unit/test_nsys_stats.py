"""nsys stats summaries on synthetic exports: statistics, NVTX projection, OS runtime."""

from __future__ import annotations

import statistics
from pathlib import Path

import numpy as np
import pytest
from tests.nsys_builders import TID, NsysBuilder

from stepscope.analysis.nsight.stats import nsys_stats
from stepscope.analysis.trace.groupstats import group_stats
from stepscope.formats import load_trace


def test_group_stats_match_statistics() -> None:
    rng = np.random.default_rng(1)
    keys = rng.integers(0, 5, 500)
    vals = rng.integers(1, 10_000, 500)
    st = group_stats(keys, vals)
    for i, k in enumerate(st.keys.tolist()):
        v = vals[keys == k].tolist()
        assert st.count[i] == len(v) and st.total[i] == sum(v)
        assert st.median[i] == pytest.approx(statistics.median(v))
        assert st.stddev[i] == pytest.approx(statistics.stdev(v))
        assert (st.minimum[i], st.maximum[i]) == (min(v), max(v))
    one = group_stats(np.array([3]), np.array([7]))
    assert one.stddev[0] == 0.0 and one.median[0] == 7.0


def test_projection_osrt_and_styles(tmp_path: Path) -> None:
    b = NsysBuilder()
    # outer range with two launches, inner range with one; another thread's range sees none
    b.nvtx("outer", 0, 1_000)
    b.nvtx("inner", 100, 300)
    b.launch("cudaLaunchKernel", 150, 10, kernel="k1", k_ts=2_000, k_dur=100)
    b.launch("cudaLaunchKernel", 500, 10, kernel="k2", k_ts=2_200, k_dur=300)
    b.nvtx("other thread", 0, 1_000, tid=TID + 5)
    b.nvtx("async", 400, 900, style="startend", domain="lib", end_tid=TID + 1)
    b.osrt("poll", 0, 100)
    b.osrt("poll", 200, 300)
    b.osrt("read", 600, 10)
    s = nsys_stats(load_trace(str(b.write(tmp_path / "p.sqlite")), use_cache=False))
    proj = {r.name: r for r in s.nvtx_gpu_proj_sum}
    assert set(proj) == {"outer", "inner", "lib:async"}
    assert (proj["outer"].total_proj_ns, proj["outer"].total_gpu_ops) == (500, 2)
    assert (proj["inner"].total_proj_ns, proj["inner"].total_gpu_ops) == (100, 1)
    assert proj["lib:async"].style == "StartEnd" and proj["lib:async"].total_gpu_ops == 1
    assert proj["outer"].total_range_ns == 1_000
    assert (proj["outer"].avg_range_lvl, proj["outer"].avg_num_child) == (0.0, 1.0)
    assert (proj["inner"].avg_range_lvl, proj["inner"].avg_num_child) == (1.0, 0.0)
    osrt = {r.name: r for r in s.osrt_sum}
    assert (osrt["poll"].count, osrt["poll"].total, osrt["poll"].med) == (2, 400, 200.0)
    assert s.osrt_sum[0].name == "poll"
    assert osrt["poll"].time_pct == pytest.approx(100 * 400 / 410)
    styles = {r.name: r.style for r in s.nvtx_sum}
    assert styles["lib:async"] == "StartEnd" and styles["outer"] == "PushPop"


def test_nccl_sum_from_the_nccl_domain(tmp_path: Path) -> None:
    b = NsysBuilder()
    b.nvtx("ncclAllReduce", 0, 100, domain="NCCL")
    b.nvtx("ncclAllReduce", 200, 500, domain="NCCL")
    b.nvtx("forward", 0, 1_000)
    s = nsys_stats(load_trace(str(b.write(tmp_path / "n.sqlite")), use_cache=False))
    assert [(r.name, r.count, r.total) for r in s.nccl_sum] == [("NCCL:ncclAllReduce", 2, 400)]
    assert s.nccl_sum[0].time_pct == 100.0


def test_nvtx_levels_nested_and_per_thread(tmp_path: Path) -> None:
    from stepscope.analysis.events.nvtx_tree import nvtx_levels

    b = NsysBuilder()
    b.nvtx("a", 0, 100)  # level 0, children b, d
    b.nvtx("b", 10, 50)  # level 1, child c
    b.nvtx("c", 20, 30)  # level 2
    b.nvtx("d", 60, 90)  # level 1
    b.nvtx("e", 95, 200, tid=TID + 1)  # another thread: level 0
    b.nvtx("f", 120, 130)  # after a ended: level 0
    t = load_trace(str(b.write(tmp_path / "l.sqlite")), use_cache=False)
    level, kids = nvtx_levels(t)
    by = {t.name(int(n)): (int(lv), int(k)) for n, lv, k in zip(t.nvtx.name, level, kids,
                                                                  strict=True)}
    assert by == {"a": (0, 2), "b": (1, 1), "c": (2, 0), "d": (1, 0), "e": (0, 0),
                  "f": (0, 0)}
