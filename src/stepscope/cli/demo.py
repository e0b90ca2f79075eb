"""``stepscope demo``: profile a small training job, apply the advised fixes, compare.

The built-in workload has the two problems most often found in real training scripts:
a slow input pipeline in the training process and a host-device sync (``.item()``)
every step. Both runs are profiled and reported; then the throughput before and after.
"""

from __future__ import annotations

import argparse

from stepscope.cli.options import add_top, check_output_dir
from stepscope.errors import UsageError

HELP = "profile a built-in workload before and after the advised fixes"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--outdir", default="stepscope-logs/demo",
                        help="where the traces go (default: %(default)s)")
    parser.add_argument("--steps", type=int, default=8, metavar="N",
                        help="training steps per run; all but the first 2 are profiled "
                             "(default: %(default)s)")
    parser.add_argument("--batch-size", type=int, default=64, metavar="N",
                        help="samples per step (default: %(default)s)")
    parser.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto",
                        help="where the model trains (default: cuda when present)")
    parser.add_argument("--verbose", action="store_true",
                        help="also print both runs' whole reports")
    add_top(parser)


def run(args: argparse.Namespace) -> int:
    if args.steps < 3 or args.batch_size < 1:
        raise UsageError("stepscope demo: --steps must be >= 3 and --batch-size >= 1")
    check_output_dir("--outdir", args.outdir)  # not after the first of the two runs
    try:
        import torch
    except ImportError:
        raise UsageError("stepscope demo needs PyTorch: pip install 'stepscope[torch]'") from None
    if args.device == "cuda" and not torch.cuda.is_available():
        raise UsageError("stepscope demo: --device cuda, but torch sees no CUDA device")
    from stepscope.demo import run_demo

    run_demo(args.outdir, steps=args.steps, batch_size=args.batch_size,
             device=None if args.device == "auto" else args.device, quiet=False, top=args.top,
             verbose=args.verbose)
    return 0
