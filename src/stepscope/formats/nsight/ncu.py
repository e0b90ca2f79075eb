"""Nsight Compute CSV exports (``ncu --csv``, ``--page details`` or ``--page raw``).

Both pages start with the identification columns (ID, Process ID, Process Name, Host Name,
Kernel Name, then Context, Stream and, since 2021, Block Size, Grid Size, Device, CC; old
versions have Kernel Time). ``details`` has one row per (kernel, section, metric) plus rule
rows (Rule Name, Rule Type, Rule Description, Estimated Speedup Type, Estimated Speedup);
``raw`` has one row per kernel, one column per metric, and a units row under the header.
Lines before the header (``==PROF==`` messages, the program's own output) are skipped.
Values may carry thousands separators; units scale them (ns/us/ms, byte/Kbyte/...).
"""

from __future__ import annotations

import csv
import io
import math
import re
from collections import Counter
from collections.abc import Iterable
from typing import Any

from stepscope.errors import TraceFormatError, one_line
from stepscope.model.ncu import NcuKernel, NcuReport, NcuRule

ID_COLS = ("ID", "Process ID", "Process Name", "Host Name", "Kernel Name")

_TIME = {"ns": 1.0, "nsecond": 1.0, "us": 1e3, "usecond": 1e3, "ms": 1e6, "msecond": 1e6,
         "s": 1e9, "second": 1e9}
_BYTES = {"byte": 1, "kbyte": 1e3, "mbyte": 1e6, "gbyte": 1e9, "kib": 1024, "mib": 1 << 20,
          "kb": 1e3, "mb": 1e6}

# details-page metric names and raw-page metric ids -> NcuKernel fields
DETAILS = {
    "Duration": "duration_ns",
    "Compute (SM) Throughput": "sm_throughput_pct",
    "SM [%]": "sm_throughput_pct",
    "Memory Throughput": "memory_throughput_pct",
    "Memory [%]": "memory_throughput_pct",
    "DRAM Throughput": "dram_throughput_pct",
    "L1/TEX Cache Throughput": "l1_throughput_pct",
    "L2 Cache Throughput": "l2_throughput_pct",
    "Achieved Occupancy": "achieved_occupancy_pct",
    "Theoretical Occupancy": "theoretical_occupancy_pct",
    "Registers Per Thread": "registers_per_thread",
}
RAW = {
    "gpu__time_duration.sum": "duration_ns",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed": "sm_throughput_pct",
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed": "memory_throughput_pct",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed": "dram_throughput_pct",
    "l1tex__throughput.avg.pct_of_peak_sustained_active": "l1_throughput_pct",
    "lts__throughput.avg.pct_of_peak_sustained_elapsed": "l2_throughput_pct",
    "sm__warps_active.avg.pct_of_peak_sustained_active": "achieved_occupancy_pct",
    "sm__maximum_warps_per_active_cycle_pct": "theoretical_occupancy_pct",
    "launch__registers_per_thread": "registers_per_thread",
}
SHARED = ("Static Shared Memory Per Block", "Dynamic Shared Memory Per Block",
          "launch__shared_mem_per_block_static", "launch__shared_mem_per_block_dynamic")
LIMITS = {
    "Block Limit Registers": "registers", "Block Limit Shared Mem": "shared memory",
    "Block Limit Warps": "warps", "Block Limit SM": "blocks", "Block Limit Barriers": "barriers",
    "launch__occupancy_limit_registers": "registers",
    "launch__occupancy_limit_shared_mem": "shared memory",
    "launch__occupancy_limit_warps": "warps", "launch__occupancy_limit_blocks": "blocks",
    "launch__occupancy_limit_barriers": "barriers",
}
_TENSOR = re.compile(r"pipe_tensor.*pct|tensor.*pipe.*%|Tensor.*Pipe", re.IGNORECASE)


def _number(value: str, unit: str = "") -> float | None:
    v = value.strip().replace(",", "")
    if not v or v.lower() in ("n/a", "nan"):
        return None
    try:
        x = float(v)
    except ValueError:
        return None
    if not math.isfinite(x):  # "1e400", "inf": no measurement (and no Infinity in JSON)
        return None
    u = unit.strip().lower().split("/")[0]
    if u in _TIME:
        return x * _TIME[u]
    if u in _BYTES:
        return x * _BYTES[u]
    return x


def _header_index(lines: list[str]) -> int:
    for i, line in enumerate(lines):
        if line.startswith('"ID",') or line.startswith("ID,"):
            return i
    return -1


def read_ncu(data: bytes | memoryview, path: str) -> NcuReport:
    """Parse an ``ncu --csv`` export; raises TraceFormatError with a one-line message."""
    text = bytes(data).decode("utf-8", "replace")
    lines = text.splitlines()
    start = _header_index(lines)
    if start < 0:
        raise TraceFormatError(f"{path}: not an Nsight Compute CSV export (no \"ID\",\"Process "
                               "ID\",... header line; export with `ncu --csv --page details`)")
    try:
        rows = list(csv.reader(io.StringIO("\n".join(lines[start:]))))
    except csv.Error as exc:
        raise TraceFormatError(f"{path}: malformed Nsight Compute CSV ({one_line(str(exc))})"
                               ) from None
    header = [h.strip() for h in rows[0]]
    if tuple(header[: len(ID_COLS)]) != ID_COLS:
        raise TraceFormatError(f"{path}: unexpected Nsight Compute CSV header "
                               f"({one_line(', '.join(header[:6]), 120)}...)")
    body = [r for r in rows[1:] if r]
    skipped: Counter[str] = Counter()
    if "Metric Name" in header:
        kernels = _details(header, body, skipped)
        page = "details"
    else:
        kernels = _raw(header, body, skipped)
        page = "raw"
    if not kernels:
        why = "; ".join(f"{n:,} {r}" for r, n in sorted(skipped.items()))
        raise TraceFormatError(f"{path}: Nsight Compute CSV export without any kernel row"
                               + (f" ({why})" if why else ""))
    return NcuReport(path=path, page=page, kernels=tuple(kernels), skipped=dict(skipped))


def _ident(row: dict[str, str]) -> dict[str, Any]:
    dev = row.get("Device", "").strip()
    return {
        "name": row.get("Kernel Name", ""),
        "block": row.get("Block Size") or None, "grid": row.get("Grid Size") or None,
        "device": int(dev) if dev.isdigit() else None, "compute_capability": row.get("CC") or None,
    }


def _build(kid: int, ident: dict[str, Any], metrics: Iterable[tuple[str, str, str]],
           rules: list[NcuRule], table: dict[str, str]) -> NcuKernel:
    fields: dict[str, Any] = {}
    shared = 0.0
    has_shared = False
    limits: dict[str, float] = {}
    all_metrics: dict[str, str] = {}
    for name, unit, value in metrics:
        all_metrics[name] = f"{value} {unit}".strip()
        target = table.get(name)
        if target is not None:
            x = _number(value, unit)
            if x is not None:
                fields[target] = int(x) if target == "registers_per_thread" else x
        elif name in SHARED:
            x = _number(value, unit)
            if x is not None:
                shared += x
                has_shared = True
        elif name in LIMITS:
            x = _number(value, unit)
            if x is not None:
                limits[LIMITS[name]] = x
        elif _TENSOR.search(name) and "tensor_pipe_pct" not in fields:
            x = _number(value, unit)
            if x is not None:
                fields["tensor_pipe_pct"] = x
    if has_shared:
        fields["shared_memory_bytes"] = int(shared)
    if limits:
        low = min(limits.values())
        fields["occupancy_limiter"] = ", ".join(sorted(k for k, v in limits.items() if v == low))
    return NcuKernel(id=kid, **ident, **fields, rules=tuple(rules), metrics=all_metrics)


def _kid(value: str) -> int | None:
    try:
        return int(value.strip().replace(",", ""))
    except ValueError:
        return None


# A bad row (cut short: a file still being written, a hand edit; or an ID that is not a
# number) is skipped and counted, never the whole export: each row stands alone.
TRUNCATED = "rows cut short (fewer columns than the header)"
BAD_ID = "rows whose ID is not a number"


def _details(header: list[str], body: list[list[str]],
             skipped: Counter[str]) -> list[NcuKernel]:
    order: list[int] = []
    idents: dict[int, dict[str, Any]] = {}
    metrics: dict[int, list[tuple[str, str, str]]] = {}
    rules: dict[int, list[NcuRule]] = {}
    for raw in body:
        if len(raw) < len(ID_COLS) + 3:
            skipped[TRUNCATED] += 1
            continue
        row = dict(zip(header, raw, strict=False))  # ncu leaves a trailing comma on some rows
        kid = _kid(row["ID"])
        if kid is None:
            skipped[BAD_ID] += 1
            continue
        if kid not in idents:
            order.append(kid)
            idents[kid] = _ident(row)
            metrics[kid], rules[kid] = [], []
        rule = (row.get("Rule Name") or "").strip()
        if rule:
            speedup = _number(row.get("Estimated Speedup") or "")
            rules[kid].append(NcuRule(
                name=rule, type=(row.get("Rule Type") or "").strip(),
                section=row.get("Section Name", ""), description=row.get("Rule Description", ""),
                speedup_type=(row.get("Estimated Speedup Type") or "").strip() or None,
                speedup_pct=speedup))
            continue
        name = row.get("Metric Name", "")
        if name:
            metrics[kid].append((name, row.get("Metric Unit", ""), row.get("Metric Value", "")))
    return [_build(k, idents[k], metrics[k], rules[k], DETAILS) for k in order]


def _raw(header: list[str], body: list[list[str]], skipped: Counter[str]) -> list[NcuKernel]:
    units: list[str] = [""] * len(header)
    if body and not body[0][0].strip().replace(",", "").isdigit():
        units = body[0] + [""] * (len(header) - len(body[0]))
        body = body[1:]
    out = []
    first_metric = len(ID_COLS)
    for raw in body:
        if len(raw) < len(ID_COLS):
            skipped[TRUNCATED] += 1
            continue
        row = dict(zip(header, raw, strict=False))
        kid = _kid(row["ID"])
        if kid is None:
            skipped[BAD_ID] += 1
            continue
        metrics = [(header[i], units[i], raw[i]) for i in range(first_metric, len(raw))
                   if i < len(header) and header[i] not in ("Context", "Stream", "Block Size",
                                                           "Grid Size", "Device", "CC",
                                                           "Kernel Time")]
        out.append(_build(kid, _ident(row), metrics, [], RAW))
    return out


def load_ncu(path: str, storage_options: dict[str, Any] | None = None) -> NcuReport:
    from stepscope.io.source import read_source

    return read_ncu(read_source(path, storage_options).data, path)
