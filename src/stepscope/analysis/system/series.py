"""A monitored run joined to a trace's report: the verdict and the per-tick series the
dashboard's System page draws, averaged into at most ``POINTS`` buckets per series."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from stepscope.analysis.system.verdict import Verdict, verdict
from stepscope.model.system import SystemSamples

POINTS = 400  # buckets per series: a sparkline or a chart, not every tick of a long run
# scalar series drawn (name -> unit), in docs/monitor.md's meanings
SERIES = {
    "cpu": "%", "main_cpu": "%", "workers_cpu": "%", "others_cpu": "%", "iowait": "%",
    "main_rss": "B", "workers_rss": "B", "disk_read": "B/s", "disk_write": "B/s",
    "net_recv": "B/s", "net_sent": "B/s", "tree_read": "B/s",
}
GPU_SERIES = {"gpu_util": "%", "gpu_mem_util": "%", "gpu_mem_used": "B", "gpu_power": "W",
              "gpu_sm_active": "%", "gpu_tensor_active": "%", "gpu_dram_bw": "%"}
PHASES = ("data", "forward", "backward", "optimizer", "sync", "collective")


@dataclass(frozen=True)
class SystemRun:
    """A monitor output found beside a trace (``path``: its samples file)."""

    path: str
    samples: SystemSamples
    verdict: Verdict


def system_run(samples: SystemSamples, path: str) -> SystemRun:
    return SystemRun(path, samples, verdict(samples))


def _buckets(n: int, points: int) -> tuple[int, int]:
    size = max(1, math.ceil(n / points))
    return size, math.ceil(n / size) if n else 0


def _mean(values: np.ndarray, size: int, m: int) -> list[float | None]:
    """Bucket means ignoring NaN; None for an empty bucket."""
    pad = np.full(size * m, np.nan)
    pad[: len(values)] = values
    blocks = pad.reshape(m, size)
    ok = ~np.isnan(blocks)
    count = ok.sum(axis=1)
    total = np.where(ok, blocks, 0.0).sum(axis=1)
    return [round(float(s / c), 3) if c else None
            for s, c in zip(total.tolist(), count.tolist(), strict=True)]


def _floats(values: list[object]) -> np.ndarray:
    return np.array([np.nan if v is None else float(v)  # type: ignore[arg-type]
                     for v in values], dtype=np.float64)


def chart_series(samples: SystemSamples, points: int = POINTS) -> dict[str, object]:
    """``{t_s, bucket_s, series: {name: {unit, values}}}``: each value the mean of a bucket of
    ticks; phases as the share (%) of each bucket's wall time the main thread spent in them."""
    t = _floats(samples.series("t"))
    n = len(t)
    size, m = _buckets(n, points)
    out: dict[str, dict[str, object]] = {}
    if n == 0:
        return {"t_s": [], "bucket_s": 0.0, "series": out}
    for name, unit in SERIES.items():
        col = samples.series(name)
        if len(col) == n:
            out[name] = {"unit": unit, "values": _mean(_floats(col), size, m)}
    for name, unit in GPU_SERIES.items():
        rows = samples.series(name)
        if len(rows) != n or not rows or not isinstance(rows[0], list):
            continue
        width = max(len(r) for r in rows)
        for g in range(width):
            per_gpu = _floats([r[g] if g < len(r) else None for r in rows])
            if not np.isnan(per_gpu).all():
                out[f"gpu{g}_{name.removeprefix('gpu_')}"] = {"unit": unit,
                                                              "values": _mean(per_gpu, size, m)}
    # phases: cumulative seconds -> share of each bucket's wall time. The hooks add a call's
    # time when it returns, so a 0.3 s wait lands in one 0.1 s tick; a call ending at T that
    # lasted L ran over [T - L, T]: the latest cumulative curve of slope <= 1 through the
    # counts, W(t_i) = t_i + max over j >= i of (C_j - t_j), puts it there.
    edges = np.minimum(np.arange(0, m + 1) * size, n - 1)
    span = np.diff(t[edges])
    for phase in PHASES:
        col = samples.series(f"phase_{phase}")
        if len(col) != n or not any(col):
            continue
        counted = np.nan_to_num(_floats(col))
        spread = t + np.maximum.accumulate((counted - t)[::-1])[::-1]
        cum = spread[edges]
        share = np.where(span > 0, 100.0 * np.diff(cum) / np.where(span > 0, span, 1.0), np.nan)
        out[f"{phase}_pct"] = {"unit": "%", "values": [
            None if math.isnan(v) else round(min(100.0, max(0.0, v)), 3) for v in share.tolist()]}
    starts = t[np.arange(m) * size]
    return {"t_s": [round(float(x), 3) for x in starts.tolist()],
            "bucket_s": round(size / samples.hz, 3) if samples.hz > 0 else 0.0, "series": out}
