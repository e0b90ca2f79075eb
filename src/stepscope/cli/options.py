"""Options several subcommands share, defined once so their defaults and checks agree."""

from __future__ import annotations

import argparse
import math
import os
import sys

from stepscope.report import DEFAULT_TOP


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, got {value}")
    return value


def positive_float(text: str) -> float:
    """A finite number above zero (a bandwidth, a peak): not 0, negative, nan nor inf."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not (value > 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text}")
    return value


def add_top(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--top", type=positive_int, default=DEFAULT_TOP, metavar="N",
                        help="rows per table in the report (default: %(default)s)")


def tell_written(what: str, path: str) -> None:
    """``what: path`` on stderr, plain: a long path is not wrapped nor read as markup."""
    print(f"{what}: {path}", file=sys.stderr)


def check_output_dir(flag: str, folder: str) -> None:
    """Refuse a local output folder (``--logdir``, ``--outdir``) that cannot be written,
    before the work that fills it; URLs are left to the writer."""
    from stepscope.errors import UsageError
    from stepscope.io.output import unwritable
    from stepscope.io.source import is_url

    if is_url(folder):
        return
    problem = unwritable(os.path.join(folder, ".stepscope"))  # "" is the current folder
    if problem is not None:
        raise UsageError(f"{flag} {folder!r}: cannot write traces there ({problem})")
