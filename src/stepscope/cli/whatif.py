"""``stepscope whatif TRACE --apply RULE_ID|TRANSFORM ...``: the step replayed with fixes
applied (docs/whatif.md)."""

from __future__ import annotations

import argparse
import sys

from rich.console import Console

from stepscope.analysis.events.links import Links
from stepscope.analysis.events.steps import find_steps
from stepscope.analysis.events.warmup import exclude_warmup, find_warmup
from stepscope.analysis.graph.fixes import RULE_TRANSFORMS, transform_for
from stepscope.analysis.graph.transforms import NAMES, Transform, parse
from stepscope.analysis.graph.whatif import Replayer
from stepscope.analysis.graph.window import find, step_windows
from stepscope.errors import TraceFormatError, UsageError
from stepscope.formats import load_trace
from stepscope.report.json.critical import run_whatif_json, whatif_json
from stepscope.report.json.render import strict_json
from stepscope.report.text.findings import render_whatif


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", help="one trace (Kineto JSON or nsys export), or a folder of "
                        "a run's rank traces: every rank replayed, collectives joined across "
                        "ranks; the run's step is the slowest rank's")
    parser.add_argument(
        "--apply", action="append", required=True, metavar="RULE_ID|TRANSFORM",
        help="a finding's rule id (" + ", ".join(sorted(RULE_TRANSFORMS)) + ") or a "
        "transform: " + ", ".join(NAMES) + " (drop_sync:PATTERN, scale_kernels:PATTERN=K, "
        "scale_kernels:tensor_cores); repeat to apply several together")
    parser.add_argument(
        "--window", default=None, metavar="NAME[#N]",
        help="replay the N-th (from 0) host range whose name contains NAME, e.g. "
        "ProfilerStep#2 or an annotation (default: every analysed step)")
    parser.add_argument("--format", choices=("text", "json"), default="text",
                        help="text: the table; json: the stepscope.whatif/1 document "
                        "(default: %(default)s)")
    parser.add_argument("--no-cache", action="store_true",
                        help="read the trace, not its cached Arrow copy")


def run(args: argparse.Namespace) -> int:
    from stepscope.formats import kinds

    specs = [transform_for(a) for a in args.apply]
    transforms = tuple(parse(s) for s in specs)  # a bad spec fails before reading
    kind = kinds.identify([args.path])
    if kind.pipeline(kinds.REPORT) == "ranks":
        if args.window:
            raise UsageError(f"{args.path}: --window replays one trace; a run of ranks is "
                             "replayed over its analysed steps")
        return _run(args, transforms)
    if kind.pipeline(kinds.REPORT) != "trace":
        raise TraceFormatError(f"{args.path}: whatif replays one trace (Kineto JSON or an "
                               "Nsight Systems export), not this input")
    trace = load_trace(args.path, use_cache=not args.no_cache)
    links = Links(trace)
    if args.window:
        windows = [find(trace, args.window)]
    else:
        steps = find_steps(trace, links)
        warm = find_warmup(trace, steps, links)
        windows = step_windows(exclude_warmup(steps, warm) if warm is not None else steps,
                               device_end=True)
    result = Replayer(trace, links, windows).run(transforms)
    applied = [{"apply": given, "transform": t.spec, "events": n}
               for given, t, n in zip(args.apply, transforms, result.touched, strict=True)]
    doc = whatif_json(result.before, result.after, applied, [w.label for w in windows])
    if args.format == "json":
        sys.stdout.write(strict_json(doc) + "\n")
    else:
        render_whatif(doc, Console(), section=False)
    return 0


def _run(args: argparse.Namespace, transforms: tuple[Transform, ...]) -> int:
    """A folder of rank traces: the run's graph (report/crossrank.py), replayed."""
    from stepscope.report.crossrank import run_graph
    from stepscope.report.run import find_run, rank_summaries, ranked_paths

    ok, failed = rank_summaries(find_run([args.path]), executor="serial",
                                use_cache=not args.no_cache)
    ranked, paths, _ = ranked_paths(ok)
    built = run_graph(paths, ranked, use_cache=not args.no_cache)
    if built.graph is None:
        raise UsageError(f"{args.path}: {built.note}")
    result = built.graph.replay(transforms)
    applied = [{"apply": given, "transform": t.spec, "events": n}
               for given, t, n in zip(args.apply, transforms, result.touched, strict=True)]
    doc = run_whatif_json(result, applied)
    notes = [f"skipped: {e}" for e in failed] + ([built.note] if built.note else [])
    if notes:
        doc["note"] = "; ".join(notes)
    if args.format == "json":
        sys.stdout.write(strict_json(doc) + "\n")
    else:
        render_whatif(doc, Console())
    return 0
