"""Per-GPU readings of AMD GPUs through AMD SMI (the ``amdsmi`` Python package), when it
is installed and no NVIDIA GPU answered NVML. Same columns as ``nvml.GPU_METRICS``;
what AMD SMI does not give stays NaN (PCIe/XGMI rates, GPM-like SM metrics, throttle).

- ``util`` (%): ``amdsmi_get_gpu_activity()["gfx_activity"]``, the graphics/compute
  engine's busy share, the counterpart of NVML's utilisation;
- ``mem_util`` (%): ``["umc_activity"]``, the memory controller's busy share;
- ``mem_used`` (bytes): ``amdsmi_get_gpu_vram_usage()["vram_used"]``, documented in
  MB (MiB: the library divides bytes by 2**20);
- ``power`` (W): ``amdsmi_get_power_info()``: ``current_socket_power`` (MI300 and later)
  or ``average_socket_power`` (earlier); an unsupported field reads "N/A" or UINT32_MAX;
- ``sm_clock`` (MHz): ``amdsmi_get_clock_info(GFX)["clk"]``.
"""

from __future__ import annotations

import contextlib
import math
from typing import Any

from stepscope.capture.monitor.nvml import GPU_METRICS

_UNSUPPORTED = (1 << 32) - 1  # UINT32_MAX: "not supported" in AMD SMI structs


class AmdGpus:
    """Open AMD SMI once; ``read(dt)`` -> one dict of ``GPU_METRICS`` per GPU."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self._smi: Any = None
        self._handles: list[Any] = []
        try:
            import amdsmi
        except ImportError:
            return
        try:
            amdsmi.amdsmi_init()
            handles = list(amdsmi.amdsmi_get_processor_handles())
        except Exception:  # no driver, no GPU: simply no GPUs
            return
        self._smi = amdsmi
        for handle in handles:
            info = _try(amdsmi.amdsmi_get_gpu_asic_info, handle) or {}
            self.names.append(str(info.get("market_name") or "AMD GPU"))
            self._handles.append(handle)

    def close(self) -> None:
        if self._smi is not None:
            with contextlib.suppress(Exception):
                self._smi.amdsmi_shut_down()
            self._smi = None

    def read(self, dt: float) -> list[dict[str, float]]:
        return [self._read_one(handle) for handle in self._handles]

    def _read_one(self, handle: Any) -> dict[str, float]:
        smi = self._smi
        out = dict.fromkeys(GPU_METRICS, math.nan)
        activity = _try(smi.amdsmi_get_gpu_activity, handle) or {}
        out["util"] = _number(activity.get("gfx_activity"))
        out["mem_util"] = _number(activity.get("umc_activity"))
        vram = _try(smi.amdsmi_get_gpu_vram_usage, handle) or {}
        out["mem_used"] = _number(vram.get("vram_used")) * float(1 << 20)
        power = _try(smi.amdsmi_get_power_info, handle) or {}
        watts = _number(power.get("current_socket_power"))
        out["power"] = watts if not math.isnan(watts) else _number(
            power.get("average_socket_power"))
        clk_type = getattr(getattr(smi, "AmdSmiClkType", None), "GFX", None)
        if clk_type is not None:
            clock = _try(smi.amdsmi_get_clock_info, handle, clk_type) or {}
            out["sm_clock"] = _number(clock.get("clk"))
        return out


def _try(fn: Any, *args: Any) -> Any:
    try:
        return fn(*args)
    except Exception:  # AmdSmiLibraryException (not supported, VM guest): absent
        return None


def _number(value: Any) -> float:
    """A reading as a float; "N/A", None and UINT32_MAX (unsupported) as NaN."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return math.nan
    return math.nan if value == _UNSUPPORTED else float(value)
