"""Facts about the running process that name and configure a capture: host, rank, devices."""

from __future__ import annotations

import os
import socket
import sys
from typing import Any


def hostname() -> str:
    # Only characters that are safe in a file name on every platform.
    raw = socket.gethostname() or "host"
    return "".join(c if c.isalnum() or c in "-." else "_" for c in raw)


def current_rank() -> int | None:
    """This process's rank under torch.distributed (or torchrun's env), else None."""
    dist = sys.modules.get("torch.distributed")
    # Only ask torch.distributed when the script already imported it: importing it here
    # would cost ~0.3 s for single-process users.
    if dist is not None and dist.is_available() and dist.is_initialized():
        return int(dist.get_rank())
    if int(os.environ.get("WORLD_SIZE", "1") or 1) > 1 and "RANK" in os.environ:
        return int(os.environ["RANK"])
    return None


def is_distributed() -> bool:
    return current_rank() is not None


def cuda_available() -> bool:
    torch = sys.modules.get("torch")
    return bool(torch is not None and torch.cuda.is_available())


def default_activities() -> list[Any]:
    """CPU always; CUDA (or XPU) when the device is really there, not just compiled in."""
    import torch
    from torch.profiler import ProfilerActivity

    profiler: Any = torch.profiler  # untyped in torch
    supported = profiler.supported_activities()
    chosen = [ProfilerActivity.CPU]
    if ProfilerActivity.CUDA in supported and torch.cuda.is_available():
        chosen.append(ProfilerActivity.CUDA)
    xpu = getattr(ProfilerActivity, "XPU", None)
    if xpu is not None and xpu in supported and _xpu_available(torch):
        chosen.append(xpu)
    return chosen


def _xpu_available(torch: Any) -> bool:
    xpu = getattr(torch, "xpu", None)
    return bool(xpu is not None and xpu.is_available())
