"""torch's native profiler chatter is filtered from fd 2; everything else passes, in order."""

from __future__ import annotations

import os
import subprocess
import sys

from stepscope.capture.native_noise import is_noise

USDT = b"USDT:2026-11-23 07:44:40 5537:5537 SyncActivityProfilerHandler.cpp:52] profiler_start"
STAGE = b"STAGE:2026-11-23 07:45:30 5994:5994 SyncActivityProfilerHandler.cpp:51] Completed"
ALLOC = (b"[W1123 07:44:40.748727204 CPUAllocator.cpp:245] Memory block of unknown size was "
         b"allocated before the profiling started, profiler results will not include it")


def test_noise_patterns() -> None:
    assert is_noise(USDT) and is_noise(STAGE) and is_noise(ALLOC)
    assert not is_noise(b"Traceback (most recent call last):")
    assert not is_noise(b"USDT: my own message")
    assert not is_noise(b"[W1123 07:44:40 foo.cpp:1] another warning")


def test_filter_keeps_order_and_drops_only_noise() -> None:
    # A child process: fd 2 must be a real descriptor we can inspect afterwards.
    code = (
        "import os, sys\n"
        "from stepscope.capture.native_noise import quiet_native_profiler\n"
        "with quiet_native_profiler():\n"
        f"    os.write(2, {USDT!r} + b'\\n')\n"
        "    os.write(2, b'user line 1\\n')\n"
        f"    os.write(2, {ALLOC!r} + b'\\n')\n"
        "    print('user line 2', file=sys.stderr, flush=True)\n"
        "    os.write(2, b'no newline at the end')\n"
        "print('after', file=sys.stderr)\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, env=env,
                         timeout=60, check=True)
    assert out.stderr.decode() == "user line 1\nuser line 2\nno newline at the endafter\n"
