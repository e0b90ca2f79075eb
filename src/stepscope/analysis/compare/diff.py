"""Compare two runs: what changed in the step time, where, and is it more than noise.

The diff works on ``RunSummary`` values — per-step step times and breakdowns plus
per-run operator, kernel, GPU and finding tables — so any source that can produce one
plugs in: a trace, a saved ``stepscope.report/1`` JSON, several captures pooled, or (later)
a multi-rank Run. Definitions: docs/diff.md.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from stepscope.analysis.compare.significance import (
    ALPHA,
    MIN_STEPS,
    Significance,
    compare_rows,
    compare_samples,
)
from stepscope.analysis.trace.breakdown import CATEGORIES
from stepscope.classify import names
from stepscope.units import count

UNCHANGED_PCT = 2.0  # without per-step samples: |change| below this is "unchanged"
Series = tuple[float, ...]  # one value per step
GPU_METRICS = ("utilization_pct", "sm_efficiency_pct", "achieved_occupancy_pct", "tensor_core_pct")


# ---------------------------------------------------------------- inputs


@dataclass(frozen=True)
class ItemSummary:
    """One operator or kernel of one run; times are totals over the run's analysed steps."""

    name: str
    calls: int
    host_us: float  # operators: host total (inclusive) time; kernels: 0
    device_us: float  # GPU time (kernels: their own; operators: of the kernels they launched)
    shape: str | None = None
    # µs in each analysed step (from a trace or a --save-baseline file): GPU time and, for
    # operators, host total time; None: no samples, the row is not tested
    per_step: Series | None = None
    host_per_step: Series | None = None

    def series(self, metric: str) -> Series | None:
        """The per-step samples of ``metric`` ("device" | "host")."""
        return self.per_step if metric == "device" else self.host_per_step


@dataclass(frozen=True)
class FindingSummary:
    id: str
    title: str
    severity: str
    saving_us: float


@dataclass(frozen=True)
class RunSummary:
    """Everything the diff needs from one run."""

    label: str  # path(s) as the user gave them
    kind: str  # "trace" | "report" | "traces" (several captures pooled) | "ranks" (one job)
    steps: tuple[str, ...]
    step_us: tuple[float, ...]
    category_us: dict[str, tuple[float, ...]]  # category -> µs in each step
    operators: tuple[ItemSummary, ...]
    operators_by_shape: tuple[ItemSummary, ...]
    kernels: tuple[ItemSummary, ...]
    gpu: dict[str, dict[str, float | None]]  # device id -> metric -> value
    findings: tuple[FindingSummary, ...]
    complete: bool = True  # False: operator/kernel tables were cut to a report's --top N
    profiler_steps: bool = True
    devices: tuple[str, ...] = ()
    world_size: int | None = None
    warnings: tuple[str, ...] = ()
    rank: int | None = None
    ranks: int = 1  # ranks combined into this summary

    @property
    def n_steps(self) -> int:
        return len(self.step_us)


def combine_ranks(ranks: Sequence[RunSummary], label: str) -> RunSummary:
    """One rank summary per rank of a job as one run, step by step (steps matched by name).

    A step of the job lasts as long as its slowest rank (everyone waits for it at the next
    collective), and its breakdown is that rank's, so categories still sum to the step time.
    Operator and kernel totals are per-rank means; GPU metrics are kept per rank
    (device ``"R:D"``); findings are the union (largest saving per rule).
    """
    if len(ranks) == 1:
        return ranks[0]
    common = [s for s in ranks[0].steps if all(s in r.steps for r in ranks[1:])]
    if not common:
        raise ValueError("the ranks' traces share no step (ProfilerStep#N) to align")
    pos = [{s: i for i, s in enumerate(r.steps)} for r in ranks]
    step_us: list[float] = []
    cats: dict[str, list[float]] = {c: [] for c in CATEGORIES}
    for s in common:
        durations = [r.step_us[p[s]] for r, p in zip(ranks, pos, strict=True)]
        slow = int(np.argmax(durations))
        step_us.append(durations[slow])
        for c in CATEGORIES:
            series = ranks[slow].category_us.get(c, ())
            cats[c].append(series[pos[slow][s]] if series else 0.0)
    n = float(len(ranks))

    def items(get: str) -> tuple[ItemSummary, ...]:
        out = []
        for (name, shape), group in _by_item([getattr(r, get) for r in ranks]).items():
            out.append(
                ItemSummary(
                    name=name,
                    shape=shape,
                    calls=round(sum(it.calls for _, it in group) / n),
                    # per rank, scaled to the aligned steps
                    host_us=sum(it.host_us * len(common) / ranks[i].n_steps for i, it in group) / n,
                    device_us=sum(
                        it.device_us * len(common) / ranks[i].n_steps for i, it in group
                    ) / n,
                    per_step=_rank_mean(group, "device", pos, common),
                    host_per_step=_rank_mean(group, "host", pos, common),
                )
            )
        return tuple(out)

    gpu = {
        f"{r.rank if r.rank is not None else i}:{dev}": metrics
        for i, r in enumerate(ranks)
        for dev, metrics in r.gpu.items()
    }
    return RunSummary(
        label=label,
        kind="ranks",
        steps=tuple(common),
        step_us=tuple(step_us),
        category_us={c: tuple(v) for c, v in cats.items()},
        operators=items("operators"),
        operators_by_shape=items("operators_by_shape"),
        kernels=items("kernels"),
        gpu=gpu,
        findings=_largest_findings(ranks),
        complete=all(r.complete for r in ranks),
        profiler_steps=all(r.profiler_steps for r in ranks),
        devices=ranks[0].devices,
        world_size=ranks[0].world_size,
        warnings=tuple(w for r in ranks for w in r.warnings),
        ranks=len(ranks),
    )


def pool(runs: Sequence[RunSummary], label: str) -> RunSummary:
    """Several captures of one workload as one run: steps concatenated, tables summed."""
    if len(runs) == 1:
        return runs[0]

    def items(get: str) -> tuple[ItemSummary, ...]:
        tables: list[Sequence[ItemSummary]] = [getattr(r, get) for r in runs]
        device, host = _joined_series(runs, tables, "device"), _joined_series(runs, tables, "host")
        return tuple(
            ItemSummary(
                name=name,
                shape=shape,
                calls=sum(g.calls for _, g in group),
                host_us=sum(g.host_us for _, g in group),
                device_us=sum(g.device_us for _, g in group),
                per_step=None if device is None else device[(name, shape)],
                host_per_step=None if host is None else host[(name, shape)],
            )
            for (name, shape), group in _by_item(tables).items()
        )

    return RunSummary(
        label=label,
        kind="traces",
        steps=tuple(f"{i}:{s}" for i, r in enumerate(runs) for s in r.steps),
        step_us=tuple(v for r in runs for v in r.step_us),
        category_us={
            c: tuple(v for r in runs for v in r.category_us.get(c, ())) for c in CATEGORIES
        },
        operators=items("operators"),
        operators_by_shape=items("operators_by_shape"),
        kernels=items("kernels"),
        gpu=_mean_gpu(runs),
        findings=_largest_findings(runs),
        complete=all(r.complete for r in runs),
        profiler_steps=all(r.profiler_steps for r in runs),
        devices=runs[0].devices,
        world_size=runs[0].world_size,
        warnings=tuple(w for r in runs for w in r.warnings),
    )


def _by_item(
    tables: Sequence[Sequence[ItemSummary]],
) -> dict[tuple[str, str | None], list[tuple[int, ItemSummary]]]:
    """Rows of several runs' tables by (name, shape), each with the index of its run."""
    acc: dict[tuple[str, str | None], list[tuple[int, ItemSummary]]] = {}
    for i, table in enumerate(tables):
        for it in table:
            acc.setdefault((it.name, it.shape), []).append((i, it))
    return acc


def _rank_mean(
    group: Sequence[tuple[int, ItemSummary]], metric: str, pos: Sequence[dict[str, int]],
    common: Sequence[str],
) -> Series | None:
    """An item's ``metric`` samples per aligned step: the mean over all ``len(pos)`` ranks
    (0 on a rank without the item); None unless every rank with the item has samples."""
    by_rank = {i: it.series(metric) for i, it in group}
    if any(v is None for v in by_rank.values()):
        return None
    return tuple(
        sum((by_rank[i] or ())[pos[i][s]] for i in by_rank) / len(pos) for s in common
    )


def _joined_series(
    runs: Sequence[RunSummary], tables: Sequence[Sequence[ItemSummary]], metric: str
) -> dict[tuple[str, str | None], Series] | None:
    """Per item, its ``metric`` samples of every run one after the other (0 in a run without
    the item); None unless every item of every run has samples."""
    known = [{(it.name, it.shape): it.series(metric) for it in table} for table in tables]
    if any(v is None for k in known for v in k.values()):
        return None
    keys = {key for k in known for key in k}
    return {
        key: tuple(
            v for r, k in zip(runs, known, strict=True) for v in (k.get(key) or (0.0,) * r.n_steps)
        )
        for key in keys
    }


def _largest_findings(runs: Sequence[RunSummary]) -> tuple[FindingSummary, ...]:
    """One finding per id over the runs: the one with the largest saving (the first on ties)."""
    out: dict[str, FindingSummary] = {}
    for r in runs:
        for f in r.findings:
            prev = out.get(f.id)
            if prev is None or f.saving_us > prev.saving_us:
                out[f.id] = f
    return tuple(out.values())


def _mean_gpu(runs: Sequence[RunSummary]) -> dict[str, dict[str, float | None]]:
    """Per device and metric, the mean over the captures that measured it."""
    out: dict[str, dict[str, float | None]] = {}
    for dev in sorted({d for r in runs for d in r.gpu}):
        out[dev] = {}
        for m in GPU_METRICS:
            vals = [v for r in runs if (v := r.gpu.get(dev, {}).get(m)) is not None]
            out[dev][m] = sum(vals) / len(vals) if vals else None
    return out


# ---------------------------------------------------------------- name matching

_WS = re.compile(r"\s+")


def normalise(name: str) -> str:
    """The key operators and kernels are matched by across runs.

    Whitespace collapsed, a leading ``void `` dropped; every DataLoader iterator
    (``enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__`` and the
    multi-process one) is the same ``enumerate(DataLoader).__next__``; ``ProfilerStep#N``
    is ``ProfilerStep#*``.
    """
    n = _WS.sub(" ", name).strip()
    if n.startswith("void "):
        n = n[5:]
    if names.is_dataloader(n) and n.startswith("enumerate(DataLoader)#"):
        return "enumerate(DataLoader).__next__"
    if names.is_profiler_step(n):
        return "ProfilerStep#*"
    return n


# ---------------------------------------------------------------- results


@dataclass(frozen=True)
class Change:
    """A per-step metric in both runs (µs unless the metric says otherwise)."""

    base: float
    new: float
    significance: Significance | None = None  # None: no per-step samples on both sides

    @property
    def delta(self) -> float:
        return self.new - self.base

    @property
    def pct(self) -> float | None:
        """Relative change in % of the base; None when the base is 0."""
        return None if self.base == 0 else 100.0 * self.delta / self.base

    @property
    def significant(self) -> bool | None:
        return None if self.significance is None else self.significance.significant


@dataclass(frozen=True)
class CategoryChange:
    name: str
    change: Change
    share_pct: float | None  # of the step-time change (the eight shares sum to 100)


@dataclass(frozen=True)
class ItemChange:
    kind: str  # "operator" | "operator_shape" | "kernel"
    name: str  # the normalised name
    shape: str | None
    status: str  # added | removed | slower | faster | unchanged
    metric: str  # "device" (GPU time) | "host" (host inclusive time)
    calls_base: int
    calls_new: int
    change: Change  # µs per step of ``metric``
    share_pct: float | None  # this item's change in % of the step-time change
    samples: tuple[tuple[float, ...], tuple[float, ...]] | None = None  # per-step, base/new


@dataclass(frozen=True)
class FindingChange:
    id: str
    title: str
    status: str  # new | resolved | persisting
    base_saving_us: float | None
    new_saving_us: float | None


@dataclass(frozen=True)
class GpuChange:
    device: str
    metric: str
    base: float | None
    new: float | None

    @property
    def delta(self) -> float | None:
        return None if self.base is None or self.new is None else self.new - self.base


@dataclass(frozen=True)
class SideInfo:
    label: str
    kind: str
    steps: int
    complete: bool
    ranks: int = 1


@dataclass(frozen=True)
class Diff:
    base: SideInfo
    new: SideInfo
    step: Change
    verdict: str  # regression | improvement | no significant change | not testable
    categories: tuple[CategoryChange, ...]
    operators: tuple[ItemChange, ...]
    operators_by_shape: tuple[ItemChange, ...]
    kernels: tuple[ItemChange, ...]
    findings: tuple[FindingChange, ...]
    gpu: tuple[GpuChange, ...]
    main_change: str | None  # the category that explains most of the step-time change
    alpha: float = ALPHA
    warnings: tuple[str, ...] = field(default_factory=tuple)


# ---------------------------------------------------------------- the diff


def _arr(v: Sequence[float]) -> np.ndarray:
    return np.asarray(v, dtype=np.float64)


def _share(delta: float, step_delta: float) -> float | None:
    return None if step_delta == 0 else 100.0 * delta / step_delta


def noise_verdict(ch: Change, alpha: float = ALPHA) -> str:
    """Why a change is or is not called real, in the same words in every table: the step,
    the categories, operators and kernels are judged by one test (``compare_rows``)."""
    s = ch.significance
    if s is None:
        pct = ch.pct
        if pct is not None and abs(pct) < UNCHANGED_PCT:
            return f"unchanged (|change| < {UNCHANGED_PCT:g} %; no per-step samples)"
        return "not noise-checked (no per-step samples)"
    if s.significant is None or s.p_value is None:
        return (f"not testable ({count(min(s.n_base, s.n_new), 'step')} in a run; "
                f"{MIN_STEPS} needed)")
    if s.significant:
        return f"significant (p = {s.p_value:.3g})"
    if s.p_value >= alpha:
        return f"within noise (p = {s.p_value:.3g})"
    return (f"within spread (p = {s.p_value:.3g}, but the medians differ by less than the "
            f"step-to-step spread, {s.noise:,.1f} µs)")


def _verdict(step: Change) -> str:
    sig = step.significance
    if sig is None or sig.significant is None:
        return "not testable"
    if not sig.significant:
        return "no significant change"
    return "regression" if step.delta > 0 else "improvement"


def _match_items(
    kind: str,
    base: Sequence[ItemSummary],
    new: Sequence[ItemSummary],
    nb: int,
    nn: int,
    step_delta: float,
    alpha: float,
) -> tuple[ItemChange, ...]:
    def group(items: Sequence[ItemSummary]) -> dict[tuple[str, str | None], list[ItemSummary]]:
        out: dict[tuple[str, str | None], list[ItemSummary]] = {}
        for it in items:
            out.setdefault((normalise(it.name), it.shape), []).append(it)
        return out

    gb, gn = group(base), group(new)
    keys = sorted(set(gb) | set(gn), key=lambda k: (k[0], k[1] or ""))
    metrics = [_metric(gb.get(k, []), gn.get(k, [])) for k in keys]
    # the samples of the metric compared: a CPU-vs-GPU pair never mixes host and device time
    series = [
        (_summed_series(gb.get(k, []), nb, m), _summed_series(gn.get(k, []), nn, m))
        for k, m in zip(keys, metrics, strict=True)
    ]
    tested = [i for i, (sb, sw) in enumerate(series) if sb is not None and sw is not None]
    sigs: dict[int, Significance] = {}
    if tested:  # every row's test at once (no bootstrap per row: the test decides)
        rows_b = np.array([series[i][0] for i in tested], dtype=np.float64)
        rows_w = np.array([series[i][1] for i in tested], dtype=np.float64)
        sigs = dict(zip(tested, compare_rows(rows_b, rows_w, alpha=alpha), strict=True))
    rows = []
    for i, key in enumerate(keys):
        b, w = gb.get(key, []), gn.get(key, [])
        metric = metrics[i]
        tot_b, tot_w = _total(b, metric), _total(w, metric)
        sig = sigs.get(i)
        change = Change(tot_b / max(nb, 1), tot_w / max(nn, 1), sig)
        if not b or (tot_b == 0 and tot_w > 0):
            status = "added"
        elif not w or (tot_w == 0 and tot_b > 0):
            status = "removed"
        elif sig is not None and sig.significant is not None:
            direction = "slower" if change.delta > 0 else "faster"
            status = direction if sig.significant else "unchanged"
        elif change.pct is None or abs(change.pct) < UNCHANGED_PCT:
            status = "unchanged"
        else:
            status = "slower" if change.delta > 0 else "faster"
        sb, sw = series[i]
        rows.append(
            ItemChange(
                kind=kind,
                name=key[0],
                shape=key[1],
                status=status,
                metric=metric,
                calls_base=sum(x.calls for x in b),
                calls_new=sum(x.calls for x in w),
                change=change,
                share_pct=_share(change.delta, step_delta),
                samples=None if sb is None or sw is None else (sb, sw),
            )
        )
    rows.sort(key=lambda r: (-abs(r.change.delta), r.name, r.shape or ""))
    return tuple(rows)


def _total(items: Sequence[ItemSummary], metric: str) -> float:
    return sum(x.device_us if metric == "device" else x.host_us for x in items)


def _metric(base: Sequence[ItemSummary], new: Sequence[ItemSummary]) -> str:
    """GPU time when either run has some, else host time."""
    return "device" if _total(base, "device") > 0 or _total(new, "device") > 0 else "host"


def _summed_series(items: Sequence[ItemSummary], n: int, metric: str) -> Series | None:
    if n == 0:
        return None
    if not items:
        return (0.0,) * n
    series = [s for i in items if (s := i.series(metric)) is not None and len(s) == n]
    if len(series) != len(items):
        return None
    if len(series) == 1:
        return series[0]
    return tuple(float(v) for v in np.sum(series, axis=0))


def diff_runs(base: RunSummary, new: RunSummary, *, alpha: float = ALPHA) -> Diff:
    """The diff of ``new`` against ``base`` (positive deltas: ``new`` takes longer)."""
    if base.n_steps == 0 or new.n_steps == 0:
        raise ValueError("a run without steps cannot be compared")
    if (base.ranks > 1) != (new.ranks > 1):
        multi, single = (base, new) if base.ranks > 1 else (new, base)
        raise ValueError(
            f"{multi.label} is a {multi.ranks}-rank job, {single.label} one process: give "
            "a folder of rank traces on both sides, or one rank's trace on both"
        )
    sb, sn = _arr(base.step_us), _arr(new.step_us)
    step = Change(float(sb.mean()), float(sn.mean()), compare_samples(sb, sn, alpha=alpha))
    cats = []
    for c in CATEGORIES:
        cb = _arr(base.category_us.get(c, (0.0,) * base.n_steps))
        cn = _arr(new.category_us.get(c, (0.0,) * new.n_steps))
        ch = Change(float(cb.mean()), float(cn.mean()), compare_samples(cb, cn, alpha=alpha))
        cats.append(CategoryChange(c, ch, _share(ch.delta, step.delta)))
    main = max(cats, key=lambda c: abs(c.change.delta))
    verdict = _verdict(step)
    warnings = list(base.warnings) + list(new.warnings)
    if base.devices and new.devices and base.devices != new.devices:
        warnings.append(
            f"the runs used different devices ({', '.join(base.devices)} vs "
            f"{', '.join(new.devices)}): kernel and GPU changes include the hardware change"
        )
    if bool(base.kernels) != bool(new.kernels):
        warnings.append(
            "only one run has GPU kernels: its kernel time has nothing to match in the other"
        )
    if base.profiler_steps != new.profiler_steps:
        warnings.append(
            "only one run has ProfilerStep ranges: the other is one whole-trace step, "
            "so per-step figures are not like for like"
        )
    if base.world_size != new.world_size and base.world_size and new.world_size:
        warnings.append(f"world sizes differ ({base.world_size} vs {new.world_size})")
    if base.ranks != new.ranks:
        warnings.append(
            f"the runs combine different numbers of ranks ({base.ranks} vs {new.ranks}): "
            "step times are the slowest rank's, operator/kernel times per-rank means"
        )
    for side in (base, new):
        if not side.complete:
            warnings.append(
                f"{side.label} is a saved report: operators and kernels beyond its rows count "
                "as absent (save baselines with `stepscope diff --save-baseline` or a large --top)"
            )
    nb, nn = base.n_steps, new.n_steps
    return Diff(
        base=SideInfo(base.label, base.kind, nb, base.complete, base.ranks),
        new=SideInfo(new.label, new.kind, nn, new.complete, new.ranks),
        step=step,
        verdict=verdict,
        categories=tuple(cats),
        operators=_match_items(
            "operator", base.operators, new.operators, nb, nn, step.delta, alpha
        ),
        operators_by_shape=_match_items(
            "operator_shape", base.operators_by_shape, new.operators_by_shape, nb, nn,
            step.delta, alpha,
        ),
        kernels=_match_items("kernel", base.kernels, new.kernels, nb, nn, step.delta, alpha),
        findings=_findings(base.findings, new.findings),
        gpu=_gpu(base.gpu, new.gpu),
        # no "main change" of a step time that did not change beyond noise
        main_change=main.name
        if main.change.delta != 0 and verdict != "no significant change"
        else None,
        alpha=alpha,
        warnings=tuple(warnings),
    )


def _findings(
    base: Sequence[FindingSummary], new: Sequence[FindingSummary]
) -> tuple[FindingChange, ...]:
    b = {f.id: f for f in base}
    w = {f.id: f for f in new}
    out = []
    for fid in list(b) + [i for i in w if i not in b]:
        fb, fw = b.get(fid), w.get(fid)
        status = "persisting" if fb and fw else ("resolved" if fb else "new")
        either = fw or fb
        title = either.title if either is not None else fid
        out.append(
            FindingChange(
                fid,
                title,
                status,
                fb.saving_us if fb else None,
                fw.saving_us if fw else None,
            )
        )
    order = {"new": 0, "resolved": 1, "persisting": 2}
    out.sort(key=lambda f: order[f.status])
    return tuple(out)


def _gpu(
    base: dict[str, dict[str, float | None]], new: dict[str, dict[str, float | None]]
) -> tuple[GpuChange, ...]:
    out = []
    for dev in sorted(set(base) | set(new)):
        for m in GPU_METRICS:
            out.append(GpuChange(dev, m, base.get(dev, {}).get(m), new.get(dev, {}).get(m)))
    return tuple(out)
