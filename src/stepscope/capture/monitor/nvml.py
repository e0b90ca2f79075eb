"""Per-GPU readings through NVML (``nvidia-ml-py``, module ``pynvml``).

Every reading is optional: a query the driver or the GPU does not support
(``NVMLError``) leaves that metric absent (NaN), and a machine without NVML has no GPUs.

- ``util`` (%): ``nvmlDeviceGetUtilizationRates().gpu``, the share of the last sample
  period (1/6 s to 1 s, by product) in which at least one kernel ran; it says nothing of
  how many SMs were busy.
- ``mem_util`` (%): ``.memory`` of the same call, the share of that period in which the
  device memory was read or written: a coarse bandwidth signal.
- ``mem_used`` (bytes): ``nvmlDeviceGetMemoryInfo().used``.
- ``power`` (W), ``sm_clock`` (MHz), ``throttle`` (bit mask of
  ``nvmlClocksEventReason*``: power cap, thermal, ...).
- ``pcie_rx``/``pcie_tx``, ``nvlink_rx``/``nvlink_tx`` (bytes/s): deltas of the
  cumulative field values ``NVML_FI_DEV_PCIE_COUNT_{RX,TX}_BYTES`` and
  ``NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_{RX,TX}`` (KiB), read in one
  ``nvmlDeviceGetFieldValues`` call (``nvmlDeviceGetPcieThroughput`` blocks 20 ms per
  call, too slow at 10 Hz).
- GPM (Hopper and later, ``nvmlGpmQueryDeviceSupport``): ``sm_active`` (SM_UTIL: the
  share of SM cycles with a warp resident), ``sm_occupancy``, ``tensor_active``
  (ANY_TENSOR_UTIL) and ``dram_bw`` (DRAM_BW_UTIL, % of peak bandwidth), each computed
  by NVML between the previous tick's sample and this one's.
"""

from __future__ import annotations

import contextlib
import math
from typing import Any

GPU_METRICS = ("util", "mem_util", "mem_used", "power", "sm_clock", "throttle",
               "pcie_rx", "pcie_tx", "nvlink_rx", "nvlink_tx",
               "sm_active", "sm_occupancy", "tensor_active", "dram_bw")
NAN = math.nan
_FIELDS = (("pcie_rx", "NVML_FI_DEV_PCIE_COUNT_RX_BYTES", 1.0),
           ("pcie_tx", "NVML_FI_DEV_PCIE_COUNT_TX_BYTES", 1.0),
           ("nvlink_rx", "NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX", 1024.0),
           ("nvlink_tx", "NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX", 1024.0))
_GPM = (("sm_active", "NVML_GPM_METRIC_SM_UTIL"),
        ("sm_occupancy", "NVML_GPM_METRIC_SM_OCCUPANCY"),
        ("tensor_active", "NVML_GPM_METRIC_ANY_TENSOR_UTIL"),
        ("dram_bw", "NVML_GPM_METRIC_DRAM_BW_UTIL"))


class Gpus:
    """Open NVML once; ``read(dt)`` -> one dict of ``GPU_METRICS`` per GPU."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self._nv: Any = None
        self._handles: list[Any] = []
        self._counters: list[dict[str, float]] = []
        self._gpm: list[Any] = []  # per GPU: [previous sample, current sample] or None
        try:
            import pynvml
        except ImportError:
            return
        try:
            pynvml.nvmlInit()
            count = pynvml.nvmlDeviceGetCount()
        except Exception:  # no driver, no GPU: simply no GPUs
            return
        self._nv = pynvml
        for i in range(count):
            handle = pynvml.nvmlDeviceGetHandleByIndex(i)
            name = pynvml.nvmlDeviceGetName(handle)
            self.names.append(name.decode() if isinstance(name, bytes) else str(name))
            self._handles.append(handle)
            self._counters.append({})
            self._gpm.append(self._gpm_samples(handle))

    def _gpm_samples(self, handle: Any) -> Any:
        nv = self._nv
        try:
            if not nv.nvmlGpmQueryDeviceSupport(handle).isSupportedDevice:
                return None
            first = nv.nvmlGpmSampleAlloc()
            nv.nvmlGpmSampleGet(handle, first)
            return [first, nv.nvmlGpmSampleAlloc()]
        except Exception:
            return None

    def close(self) -> None:
        if self._nv is None:
            return
        for pair in self._gpm:
            for sample in pair or ():
                with contextlib.suppress(Exception):
                    self._nv.nvmlGpmSampleFree(sample)
        with contextlib.suppress(Exception):
            self._nv.nvmlShutdown()
        self._nv = None

    def read(self, dt: float) -> list[dict[str, float]]:
        return [self._read_one(i, dt) for i in range(len(self._handles))]

    def _read_one(self, i: int, dt: float) -> dict[str, float]:
        nv, handle = self._nv, self._handles[i]
        out = dict.fromkeys(GPU_METRICS, NAN)
        rates = _try(nv.nvmlDeviceGetUtilizationRates, handle)
        if rates is not None:
            out["util"], out["mem_util"] = float(rates.gpu), float(rates.memory)
        memory = _try(nv.nvmlDeviceGetMemoryInfo, handle)
        if memory is not None:
            out["mem_used"] = float(memory.used)
        power = _try(nv.nvmlDeviceGetPowerUsage, handle)
        if power is not None:
            out["power"] = power / 1000.0
        clock = _try(nv.nvmlDeviceGetClockInfo, handle, getattr(nv, "NVML_CLOCK_SM", 1))
        if clock is not None:
            out["sm_clock"] = float(clock)
        reasons = getattr(nv, "nvmlDeviceGetCurrentClocksEventReasons", None) or getattr(
            nv, "nvmlDeviceGetCurrentClocksThrottleReasons", None)
        if reasons is not None and (mask := _try(reasons, handle)) is not None:
            out["throttle"] = float(mask)
        self._read_fields(i, dt, out)
        self._read_gpm(i, out)
        return out

    def _read_fields(self, i: int, dt: float, out: dict[str, float]) -> None:
        nv = self._nv
        wanted = [(key, getattr(nv, name), scale) for key, name, scale in _FIELDS
                  if hasattr(nv, name)]
        if not wanted or not hasattr(nv, "nvmlDeviceGetFieldValues"):
            return
        values = _try(nv.nvmlDeviceGetFieldValues, self._handles[i], [f for _, f, _ in wanted])
        if values is None:
            return
        previous = self._counters[i]
        for (key, _, scale), value in zip(wanted, values, strict=False):
            if getattr(value, "nvmlReturn", 0) != 0:
                continue
            total = _field_number(value) * scale
            if key in previous and dt > 0 and total >= previous[key]:
                out[key] = (total - previous[key]) / dt
            previous[key] = total

    def _read_gpm(self, i: int, out: dict[str, float]) -> None:
        pair = self._gpm[i]
        if pair is None:
            return
        nv = self._nv
        try:
            nv.nvmlGpmSampleGet(self._handles[i], pair[1])
            request = nv.c_nvmlGpmMetricsGet_t()
            request.version = nv.NVML_GPM_METRICS_GET_VERSION
            request.numMetrics = len(_GPM)
            request.sample1, request.sample2 = pair[0], pair[1]
            for j, (_, name) in enumerate(_GPM):
                request.metrics[j].metricId = getattr(nv, name)
            result = nv.nvmlGpmMetricsGet(request)
            for j, (key, _) in enumerate(_GPM):
                metric = result.metrics[j]
                if getattr(metric, "nvmlReturn", 0) == 0:
                    out[key] = float(metric.value)
        except Exception:
            return
        finally:
            pair.reverse()  # this tick's sample is the next tick's start


def _try(fn: Any, *args: Any) -> Any:
    try:
        return fn(*args)
    except Exception:  # NVMLError_NotSupported and friends: the metric is absent
        return None


def _field_number(value: Any) -> float:
    """The number in an ``nvmlFieldValue_t`` whose union member ``valueType`` names."""
    kind = int(getattr(value, "valueType", 3))
    member = {0: "dVal", 1: "uiVal", 2: "ulVal", 3: "ullVal", 4: "sllVal", 5: "siVal"}.get(
        kind, "ullVal")
    return float(getattr(value.value, member))
