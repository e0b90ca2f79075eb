"""The what-if validation (docs/whatif.md, "Validation"): predicted vs measured fixed runs.

For each before/after pair, the what-if of the fix is replayed on the "before" trace
(``stepscope whatif BEFORE --apply ... --format json``) and its predicted step is compared
with the measured step of the "after" run:

    error = |predicted - measured| / |measured - before|

where ``before`` and ``measured`` are the mean ProfilerStep windows of the two traces as
``stepscope`` measures steps (analysis/events/steps.py). The goal is <= 15 % per pair.

Pairs: the CPU captures committed under tests/data/whatif (benchmarks/whatif/
capture_pairs.py made them; pairs.json lists them) and the Kineto ResNet-50
num_workers 0 -> 4 pair of ../shared/traces (read in place, never copied).

    python benchmarks/whatif/validate.py                      # table; JSON with --json FILE
    python benchmarks/whatif/validate.py --pairs loader_io,resnet50_workers --json out.json

The prediction comes from ``predict`` (the CLI above, run in this process: the stepscope
on this interpreter's path; point PYTHONPATH at another checkout to validate its engine).
Without a ``whatif`` command the measured figures are printed with no prediction (exit
1); nothing is ever estimated here.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import io
import json
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "data" / "whatif"
SHARED_TRACES = Path(os.environ.get("STEPSCOPE_SHARED_TRACES", ROOT.parent / "shared" / "traces"))
GOAL_PCT = 15.0
SCHEMA = "stepscope.whatif-validation/1"


@dataclass(frozen=True)
class Pair:
    name: str
    what: str
    apply: tuple[str, ...]
    before: tuple[Path, ...]  # traces of the slow run (several files: one window each)
    after: tuple[Path, ...]  # traces of the fixed run
    rule: str = ""
    # the capture's repeats (run.json): each repeat's mean step, µs
    before_repeats_us: tuple[float, ...] = ()
    after_repeats_us: tuple[float, ...] = ()


@dataclass(frozen=True)
class WhatIf:
    """What the engine says for one trace: the JSON of ``stepscope whatif`` (whatif/1)."""

    before_us: float
    after_us: float
    before_by_category_us: dict[str, float] = field(default_factory=dict)
    after_by_category_us: dict[str, float] = field(default_factory=dict)
    applied: tuple[Any, ...] = ()


class EngineUnavailable(Exception):
    """This stepscope has no what-if engine (no ``whatif`` command)."""


class PredictionError(Exception):
    """The engine refused this pair (one line: its message)."""


Predictor = Callable[[Path, Sequence[str]], WhatIf]


# --------------------------------------------------------------------------- the engine

def engine_available() -> bool:
    """Whether the stepscope on this interpreter's path has the ``whatif`` command."""
    from stepscope.cli.main import COMMANDS

    return "whatif" in COMMANDS


def parse_whatif(doc: dict[str, Any]) -> WhatIf:
    """The figures this harness uses from a ``stepscope.whatif/1`` document."""
    if doc.get("schema") != "stepscope.whatif/1":
        raise PredictionError(f"unexpected schema {doc.get('schema')!r}")
    before, after = doc["before"], doc["after"]
    return WhatIf(float(before["step_us"]), float(after["step_us"]),
                  dict(before.get("by_category_us", {})), dict(after.get("by_category_us", {})),
                  tuple(doc.get("applied", ())))


def predict(trace: Path, apply: Sequence[str]) -> WhatIf:
    """The engine's what-if of ``apply`` on ``trace``: ``stepscope whatif ... --format json``
    run in this process (its exit status and output as a user would get them)."""
    if not engine_available():
        raise EngineUnavailable("this stepscope has no `whatif` command")
    from stepscope.cli.main import main as stepscope_main

    argv = ["whatif", str(trace), "--format", "json"]
    for a in apply:
        argv += ["--apply", a]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = stepscope_main(argv)
    if code != 0:
        lines = err.getvalue().strip().splitlines() or [f"exit {code}"]
        raise PredictionError(lines[-1])
    return parse_whatif(json.loads(out.getvalue()))


# --------------------------------------------------------------------------- measuring

@functools.lru_cache(maxsize=64)
def _steps_ns(path: Path) -> tuple[int, ...]:
    """The steady steps' durations as the report takes them (analysis/suite.py): the
    ProfilerStep windows, less a warm-up stall's step (never one on these CPU traces)."""
    from stepscope import load
    from stepscope.analysis.events.links import Links
    from stepscope.analysis.events.steps import find_steps
    from stepscope.analysis.events.warmup import exclude_warmup, find_warmup

    trace = load(str(path))
    links = Links(trace)
    steps = find_steps(trace, links)
    warm = find_warmup(trace, steps, links)
    if warm is not None:
        steps = exclude_warmup(steps, warm)
    return tuple(s.duration for s in steps.steps)


def measured_step_us(traces: Sequence[Path]) -> tuple[float, int]:
    """Mean steady step over the traces (stepscope's steps, µs), and how many steps."""
    each = [d for path in traces for d in _steps_ns(path)]
    return sum(each) / len(each) / 1e3, len(each)


# --------------------------------------------------------------------------- the pairs

def fixture_pairs(root: Path = FIXTURES) -> list[Pair]:
    """The committed CPU pairs (pairs.json); rank 0's trace for a run of ranks."""
    index = json.loads((root / "pairs.json").read_text())
    pairs = []
    for name, p in index["pairs"].items():
        runs = [json.loads((root / p[side] / "run.json").read_text()) for side in
                ("before", "after")]
        pairs.append(Pair(
            name, p["what"], tuple(p["apply"]),
            (root / p["before"] / runs[0]["traces"][0],),
            (root / p["after"] / runs[1]["traces"][0],), p["rule"],
            tuple(runs[0]["repeats_step_us"]), tuple(runs[1]["repeats_step_us"])))
    return pairs


def shared_pairs(shared: Path = SHARED_TRACES) -> list[Pair]:
    """The Kineto ResNet-50 pair (V100, PyTorch 1.9): both windows of each run."""
    folder = shared / "kineto_resnet50"
    if not folder.is_dir():
        return []
    before = tuple(sorted((folder / "num_workers_0").glob("*.pt.trace.json.gz")))
    after = tuple(sorted((folder / "num_workers_4").glob("*.pt.trace.json.gz")))
    return [Pair("resnet50_workers", "torchvision ResNet-50 on a V100 (Kineto sample traces): "
                 "DataLoader num_workers 0 -> 4", ("drop_dataloader_wait",), before, after,
                 "input-pipeline")]


# --------------------------------------------------------------------------- validating

@dataclass(frozen=True)
class Row:
    pair: str
    apply: tuple[str, ...]
    before_us: float  # measured, the before trace(s)
    measured_us: float  # measured, the after trace(s)
    predicted_us: float | None  # the engine's after.step_us (mean over the before traces)
    engine_before_us: float | None  # the engine's before.step_us (same mean)
    error_pct: float | None  # |predicted - measured| / |measured - before|
    noise_pct: float | None  # uncertainty of the measured change, % of it (noise_pct())
    note: str = ""

    @property
    def change_us(self) -> float:
        return self.measured_us - self.before_us


def error_pct(predicted: float, measured: float, before: float) -> float | None:
    change = measured - before
    return None if change == 0 else 100.0 * abs(predicted - measured) / abs(change)


def noise_pct(pair: Pair, before: float, measured: float) -> float | None:
    """How reproducible the measured change is, as % of it: the capture keeps each run's
    fastest repeat, so its uncertainty is the gap to the second fastest (the larger of the
    two runs' gaps). None without repeats (the ResNet-50 pair) or without a change."""
    gaps = [sorted(r)[1] - sorted(r)[0] for r in (pair.before_repeats_us,
                                                   pair.after_repeats_us) if len(r) > 1]
    if not gaps or measured == before:
        return None
    return 100.0 * max(gaps) / abs(measured - before)


def validate_pair(pair: Pair, predictor: Predictor = predict) -> Row:
    before, _ = measured_step_us(pair.before)
    measured, _ = measured_step_us(pair.after)
    noise = noise_pct(pair, before, measured)
    try:
        whatifs = [predictor(path, pair.apply) for path in pair.before]
    except (EngineUnavailable, PredictionError) as e:
        return Row(pair.name, pair.apply, before, measured, None, None, None, noise, str(e))
    # one prediction per window; each window weighs as its measured steps do
    weights = [measured_step_us([p])[1] for p in pair.before]
    predicted = sum(w.after_us * n for w, n in zip(whatifs, weights, strict=True)) / sum(weights)
    engine_before = sum(w.before_us * n for w, n in zip(whatifs, weights, strict=True)) / sum(
        weights)
    return Row(pair.name, pair.apply, before, measured, predicted, engine_before,
               error_pct(predicted, measured, before), noise)


def validate(pairs: Sequence[Pair], predictor: Predictor = predict) -> list[Row]:
    return [validate_pair(p, predictor) for p in pairs]


def _ms(us: float | None) -> str:
    return "—" if us is None else f"{us / 1e3:.2f}"


def _pct(v: float | None) -> str:
    return "—" if v is None else f"{v:.0f}"


def table(rows: Sequence[Row]) -> str:
    head = ("pair", "what-if", "before ms", "replayed ms", "predicted ms", "measured ms",
            "change ms", "error %", "noise %")
    body = [(r.pair, "+".join(r.apply), _ms(r.before_us), _ms(r.engine_before_us),
             _ms(r.predicted_us), _ms(r.measured_us), f"{r.change_us / 1e3:+.2f}",
             _pct(r.error_pct), _pct(r.noise_pct)) for r in rows]
    widths = [max(len(str(x)) for x in col) for col in zip(head, *body, strict=True)]
    lines = ["  ".join(c.ljust(w) if i < 2 else c.rjust(w)
                       for i, (c, w) in enumerate(zip(line, widths, strict=True)))
             for line in (head, *body)]
    notes = [f"{r.pair}: {r.note}" for r in rows if r.note]
    return "\n".join(lines + notes)


def to_json(rows: Sequence[Row]) -> dict[str, Any]:
    return {"schema": SCHEMA, "goal_pct": GOAL_PCT,
            "pairs": [{**asdict(r), "apply": list(r.apply), "change_us": r.change_us}
                      for r in rows]}


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fixtures", type=Path, default=FIXTURES)
    ap.add_argument("--shared-traces", type=Path, default=SHARED_TRACES)
    ap.add_argument("--pairs", default="", help="comma-separated pair names (default: all)")
    ap.add_argument("--json", type=Path, help="also write the rows here")
    args = ap.parse_args(argv)
    try:
        pairs = fixture_pairs(args.fixtures) + shared_pairs(args.shared_traces)
    except (OSError, ValueError, KeyError) as e:  # a missing or malformed pairs.json/run.json
        print(f"validate.py: {args.fixtures}: cannot read the pairs ({e})", file=sys.stderr)
        return 2
    if args.pairs:
        wanted = args.pairs.split(",")
        unknown = sorted(set(wanted) - {p.name for p in pairs})
        if unknown:
            print(f"validate.py: unknown pairs {', '.join(unknown)} (known: "
                  f"{', '.join(p.name for p in pairs)})", file=sys.stderr)
            return 2
        pairs = [p for p in pairs if p.name in wanted]
    rows = validate(pairs)
    print(table(rows))
    if args.json:
        args.json.write_text(json.dumps(to_json(rows), indent=1) + "\n")
    return 0 if all(r.predicted_us is not None for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
