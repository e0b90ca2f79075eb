"""Child side of ``stepscope run``: profile a script or module while running it as ``__main__``.

The parent starts ``python -c <bootstrap> [-m module | script] args...`` with the profiler
settings in ``STEPSCOPE_RUN_CONFIG`` (removed again here so processes the script starts
are not profiled), and reads back what was written from the manifest file named there.
"""

from __future__ import annotations

import dataclasses
import json
import os
import runpy
import sys
from types import TracebackType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from stepscope.capture.autostep import AutoProfiler, Outcome

CONFIG_ENV = "STEPSCOPE_RUN_CONFIG"


@dataclasses.dataclass(frozen=True)
class Target:
    module: str | None  # ``-m module``
    script: str | None
    args: list[str]


def parse_target(argv: list[str]) -> Target:
    if len(argv) >= 2 and argv[0] == "-m":
        return Target(argv[1], None, argv[2:])
    if argv and not argv[0].startswith("-"):
        return Target(None, argv[0], argv[1:])
    raise SystemExit("stepscope run: expected a script or -m module to run")


def main(argv: list[str]) -> int:
    settings = json.loads(os.environ.pop(CONFIG_ENV, "{}"))
    manifest = settings.pop("manifest", None)
    target = parse_target(argv)
    # Set before the profiler exists: the default run name comes from the script name.
    sys.argv = [target.module or target.script or "", *target.args]
    try:
        from stepscope.capture.autostep import AutoConfig, AutoProfiler
    except ImportError as exc:
        note = (f"cannot profile with {sys.executable}: {exc} "
                "(run it with the Python of your training environment)")
        if manifest:  # the parent says it, once (not "ended without stepscope finishing")
            with open(manifest, "w", encoding="utf-8") as fh:
                json.dump({"mode": "unknown", "traces": [], "note": note}, fh)
        else:
            print(f"stepscope run: {note}", file=sys.stderr)
        return 2
    from stepscope.capture.monitor.child import install_from_env
    from stepscope.capture.native_noise import quiet_native_profiler

    board = install_from_env()  # stepscope run --monitor: the monitor's phase hooks too
    if board is not None:
        board.add("running", 1)
    with quiet_native_profiler():
        return _profiled(target, AutoProfiler(AutoConfig(**settings)), manifest)


def _profiled(target: Target, auto: AutoProfiler, manifest: str | None) -> int:
    auto.install()
    try:
        return run_target(target)
    finally:
        _write_manifest(manifest, auto.finish())


def run_target(target: Target) -> int:
    """Run the program as ``__main__``: 0, or 1 after printing its traceback as Python
    would (SystemExit and KeyboardInterrupt go through)."""
    try:
        _run(target)
    except (SystemExit, KeyboardInterrupt):
        raise
    except BaseException as exc:
        # Show the traceback the script would have shown on its own, without our frames.
        # (The default hook prints exc.__traceback__ whatever it is passed.)
        tb = _user_frames(exc.__traceback__)
        sys.excepthook(type(exc), exc.with_traceback(tb), tb)
        return 1
    return 0


def _run(target: Target) -> None:
    if target.module is not None:
        runpy.run_module(target.module, run_name="__main__", alter_sys=True)
        return
    assert target.script is not None
    # What ``python script.py`` does: the script's folder comes first on the import path.
    sys.path[0] = os.path.dirname(os.path.abspath(target.script))
    runpy.run_path(target.script, run_name="__main__")


def _user_frames(tb: TracebackType | None) -> TracebackType | None:
    ours = (os.path.abspath(__file__), runpy.__file__)
    while tb is not None and (tb.tb_frame.f_code.co_filename in ours
                              or tb.tb_frame.f_code.co_filename == "<frozen runpy>"):
        tb = tb.tb_next
    return tb


def _write_manifest(path: str | None, outcome: Outcome) -> None:
    if not path:
        return
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(dataclasses.asdict(outcome), fh)
