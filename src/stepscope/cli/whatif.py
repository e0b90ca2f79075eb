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
from stepscope.analysis.graph.transforms import NAMES, parse
from stepscope.analysis.graph.whatif import Replayer
from stepscope.analysis.graph.window import find, step_windows
from stepscope.errors import TraceFormatError
from stepscope.formats import load_trace
from stepscope.report.json.critical import whatif_json
from stepscope.report.json.render import strict_json
from stepscope.report.text.findings import render_whatif


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", help="one trace (Kineto JSON or nsys export)")
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
