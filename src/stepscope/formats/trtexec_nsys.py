"""Read what the TensorRT kernel->layer mapping needs from an Nsight Systems SQLite export.

Self-contained over sqlite3 (tables as nsys names them: NVTX_EVENTS, CUPTI_ACTIVITY_KIND_KERNEL,
CUPTI_ACTIVITY_KIND_RUNTIME, StringIds) so it does not depend on the general nsys reader.
TensorRT emits one NVTX range per layer around the layer's launches (engine built with
--profilingVerbosity=detailed or layer_names_only, nsys run with -t cuda,nvtx).
"""

from __future__ import annotations

import os
import sqlite3

import numpy as np
import numpy.typing as npt

from stepscope.errors import TraceFormatError, TraceSourceError
from stepscope.model.tensorrt import LayerKernelTrace

REQUIRED = ("NVTX_EVENTS", "CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_RUNTIME")


def _columns(con: sqlite3.Connection, table: str) -> set[str]:
    return {str(r[1]) for r in con.execute(f"PRAGMA table_info({table})")}


def read_layer_kernels(path: str) -> LayerKernelTrace:
    if not os.path.isfile(path):
        raise TraceSourceError(f"{path}: no such file")
    try:
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        tables = {
            str(r[0]) for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")
        }
    except sqlite3.DatabaseError as exc:
        raise TraceFormatError(f"{path}: not an nsys SQLite export ({exc})") from None
    try:
        missing = [t for t in REQUIRED if t not in tables]
        if missing:
            raise TraceFormatError(
                f"{path}: nsys export lacks {', '.join(missing)} (profile with nsys -t cuda,nvtx)"
            )
        strings: dict[int, str] = {}
        if "StringIds" in tables:
            strings = {int(i): str(v) for i, v in con.execute("SELECT id, value FROM StringIds")}
        ncols = _columns(con, "NVTX_EVENTS")
        text = "text" if "text" in ncols else "NULL"
        text_id = "textId" if "textId" in ncols else "NULL"
        rows = con.execute(
            f"SELECT start, end, globalTid, {text}, {text_id} FROM NVTX_EVENTS "
            "WHERE end IS NOT NULL AND end > start ORDER BY start"
        ).fetchall()
        kcols = _columns(con, "CUPTI_ACTIVITY_KIND_KERNEL")
        kname = next((c for c in ("shortName", "demangledName", "mangledName") if c in kcols), None)
        if kname is None:
            raise TraceFormatError(f"{path}: kernel table has no name column")
        krows = con.execute(
            f"SELECT start, end, correlationId, {kname} FROM CUPTI_ACTIVITY_KIND_KERNEL "
            "ORDER BY start"
        ).fetchall()
        lrows = con.execute(
            "SELECT correlationId, start, globalTid FROM CUPTI_ACTIVITY_KIND_RUNTIME "
            "ORDER BY correlationId"
        ).fetchall()
    except sqlite3.DatabaseError as exc:
        raise TraceFormatError(f"{path}: cannot read the nsys export ({exc})") from None
    finally:
        con.close()

    def ints(rows: list[tuple[object, ...]], i: int) -> npt.NDArray[np.int64]:
        return np.array([r[i] if r[i] is not None else -1 for r in rows], dtype=np.int64)

    def nvtx_name(r: tuple[object, ...]) -> str:
        if r[3] is not None:
            return str(r[3])
        return strings.get(int(r[4]), "") if isinstance(r[4], int) else ""

    return LayerKernelTrace(
        path=path,
        range_names=tuple(nvtx_name(r) for r in rows),
        range_start=ints(rows, 0),
        range_end=ints(rows, 1),
        range_tid=ints(rows, 2),
        kernel_names=tuple(
            strings.get(int(r[3]), str(r[3])) if isinstance(r[3], int) else str(r[3]) for r in krows
        ),
        kernel_start=ints(krows, 0),
        kernel_end=ints(krows, 1),
        kernel_corr=ints(krows, 2),
        launch_corr=ints(lrows, 0),
        launch_start=ints(lrows, 1),
        launch_tid=ints(lrows, 2),
    )
