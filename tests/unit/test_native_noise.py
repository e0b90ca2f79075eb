"""torch's native profiler chatter is filtered from fd 2; everything else passes, in order."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings

from stepscope.capture.native_noise import is_noise, quiet_native_profiler

USDT = b"USDT:2026-11-23 07:44:40 5537:5537 SyncActivityProfilerHandler.cpp:52] profiler_start"
STAGE = b"STAGE:2026-11-23 07:45:30 5994:5994 SyncActivityProfilerHandler.cpp:51] Completed"
ALLOC = (b"[W1123 07:44:40.748727204 CPUAllocator.cpp:245] Memory block of unknown size was "
         b"allocated before the profiling started, profiler results will not include it")

# The CUDA build of torch on a machine with no usable driver (35: cudaErrorInsufficientDriver):
# libkineto's LOG(ERROR) from DeviceProperties.cpp when the profiler starts, in kineto's prefix.
NO_GPU = (b"ERROR:2026-11-24 08:14:02 25311:25311 DeviceProperties.cpp:47] "
          b"gpuGetDeviceCount failed with code 35")
NO_GPU_OLD = (b"ERROR:2025-02-03 10:01:12 811:811 CuptiActivityApi.cpp:91] "
              b"cudaGetDeviceCount failed with code 35")


def test_noise_patterns() -> None:
    assert is_noise(USDT) and is_noise(STAGE) and is_noise(ALLOC)
    assert is_noise(NO_GPU) and is_noise(NO_GPU_OLD) and is_noise(NO_GPU + b"\r")
    assert not is_noise(b"ERROR:2026-11-24 08:14:02 1:1 Foo.cpp:1] CUPTI_ERROR_NOT_INITIALIZED")
    assert not is_noise(b"my code: gpuGetDeviceCount failed with code 35")
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
        f"    os.write(2, {NO_GPU!r} + b'\\n')\n"
        "    print('user line 2', file=sys.stderr, flush=True)\n"
        "    os.write(2, b'no newline at the end')\n"
        "print('after', file=sys.stderr)\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, env=env,
                         timeout=60, check=True)
    assert out.stderr.decode() == "user line 1\nuser line 2\nno newline at the endafter\n"


def test_cuda_initialization_warning_is_ignored_inside_only() -> None:
    # torch/cuda/__init__.py's text when the CUDA build finds no driver it can use.
    text = ("CUDA initialization: The NVIDIA driver on your system is too old (found version "
            "11040). Please update your GPU driver ... (Triggered internally at "
            "/pytorch/c10/cuda/CUDAFunctions.cpp:119.)")
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        with quiet_native_profiler():
            warnings.warn(text, UserWarning, stacklevel=1)
            warnings.warn("the user's own warning", UserWarning, stacklevel=1)
        warnings.warn(text, UserWarning, stacklevel=1)
    assert [str(w.message) for w in seen] == ["the user's own warning", text]
