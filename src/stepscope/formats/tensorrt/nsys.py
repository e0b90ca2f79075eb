"""Read what the TensorRT kernel->layer mapping needs from an Nsight Systems SQLite export.

Self-contained over sqlite3 (tables as nsys names them: NVTX_EVENTS, CUPTI_ACTIVITY_KIND_KERNEL,
CUPTI_ACTIVITY_KIND_RUNTIME, StringIds) so it does not depend on the general nsys reader.
TensorRT emits one NVTX range per layer around the layer's launches (nsys run with
``-t cuda,nvtx``): its text is the layer name, or with ``--profilingVerbosity=detailed`` the
layer's JSON description (``ProfilingVerbosity`` documents NVTX annotations as following the
engine's verbosity), whose ``Name`` is taken. Names are interned in SQL, so rows come back
as plain integers and turn into numpy columns without a Python loop per event.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3

import numpy as np
import numpy.typing as npt

from stepscope.errors import TraceFormatError, TraceSourceError
from stepscope.io.source import sqlite_uri
from stepscope.model.tensorrt import LayerKernelTrace

REQUIRED = ("NVTX_EVENTS", "CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_RUNTIME")
I64 = npt.NDArray[np.int64]


def _columns(con: sqlite3.Connection, table: str) -> set[str]:
    return {str(r[1]) for r in con.execute(f"PRAGMA table_info({table})")}


def _ints(rows: list[tuple[int, ...]], width: int) -> I64:
    if not rows:
        return np.zeros((0, width), dtype=np.int64)
    return np.array(rows, dtype=np.int64).reshape(len(rows), width)


_NAME_FIELD = re.compile(r'"Name"\s*:\s*"(.*?)"\s*,\s*"LayerType"', re.DOTALL)


def layer_of_range(text: str) -> str:
    """The layer an NVTX range names: its text, or the ``Name`` of a detailed JSON text.

    TensorRT does not escape quotes in layer names (as in --exportLayerInfo), so a JSON
    text that does not parse falls back to the span between ``"Name":"`` and ``","LayerType"``.
    """
    if not text.lstrip().startswith("{"):
        return text
    try:
        doc = json.loads(text)
    except ValueError:
        m = _NAME_FIELD.search(text)
        return m.group(1) if m else text
    name = doc.get("Name") if isinstance(doc, dict) else None
    return name if isinstance(name, str) else text


def _by_layer(texts: tuple[str, ...], index: I64) -> tuple[tuple[str, ...], I64]:
    """Range texts -> layer names; texts naming the same layer share one index."""
    names = [layer_of_range(t) for t in texts]
    unique = tuple(sorted(set(names)))
    pos = {n: i for i, n in enumerate(unique)}
    remap = np.array([pos[n] for n in names], dtype=np.int64)
    return unique, remap[index] if len(index) else index


def read_layer_kernels(path: str) -> LayerKernelTrace:
    if not os.path.isfile(path):
        raise TraceSourceError(f"{path}: no such file")
    try:
        con = sqlite3.connect(sqlite_uri(path), uri=True)
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
        has_strings = "StringIds" in tables
        ncols = _columns(con, "NVTX_EVENTS")
        parts = []
        if "text" in ncols:
            parts.append("n.text")
        if "textId" in ncols and has_strings:
            parts.append("(SELECT value FROM StringIds s WHERE s.id = n.textId)")
        name = f"COALESCE({', '.join(parts)}, '')" if parts else "''"
        ranges = (
            f"SELECT n.start AS s, n.end AS e, COALESCE(n.globalTid, -1) AS t, {name} AS nm "
            "FROM NVTX_EVENTS n WHERE n.end IS NOT NULL AND n.end > n.start"
        )
        range_names = tuple(
            str(r[0]) for r in con.execute(f"SELECT DISTINCT nm FROM ({ranges}) ORDER BY nm")
        )
        rrows = con.execute(
            f"SELECT s, e, t, DENSE_RANK() OVER (ORDER BY nm) - 1 FROM ({ranges}) ORDER BY s"
        ).fetchall()
        kcols = _columns(con, "CUPTI_ACTIVITY_KIND_KERNEL")
        kname = next((c for c in ("shortName", "demangledName", "mangledName") if c in kcols), None)
        if kname is None:
            raise TraceFormatError(f"{path}: kernel table has no name column")
        krows = con.execute(
            f"SELECT start, end, COALESCE(correlationId, -1), COALESCE({kname}, -1) "
            "FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY start"
        ).fetchall()
        lrows = con.execute(
            "SELECT COALESCE(correlationId, -1), start, COALESCE(globalTid, -1) "
            "FROM CUPTI_ACTIVITY_KIND_RUNTIME ORDER BY correlationId"
        ).fetchall()
        k = _ints(krows, 4)
        kid, kinv = np.unique(k[:, 3], return_inverse=True)
        strings: dict[int, str] = {}
        if has_strings and len(kid):
            con.execute("CREATE TEMP TABLE _ids (id INTEGER PRIMARY KEY)")
            con.executemany("INSERT INTO _ids VALUES (?)", ((int(i),) for i in kid))
            strings = {
                int(i): str(v)
                for i, v in con.execute(
                    "SELECT s.id, s.value FROM StringIds s JOIN _ids USING (id)"
                )
            }
    except (sqlite3.DatabaseError, ValueError) as exc:
        raise TraceFormatError(f"{path}: cannot read the nsys export ({exc})") from None
    finally:
        con.close()
    r = _ints(rrows, 4)
    lr = _ints(lrows, 3)
    layer_names, range_layer = _by_layer(range_names, r[:, 3].copy())
    return LayerKernelTrace(
        path=path,
        range_names=layer_names,
        range_name=range_layer,
        range_start=r[:, 0].copy(),
        range_end=r[:, 1].copy(),
        range_tid=r[:, 2].copy(),
        kernel_names=tuple(strings.get(int(i), f"<string {int(i)}>") for i in kid),
        kernel_name=kinv.astype(np.int64).reshape(-1),
        kernel_start=k[:, 0].copy(),
        kernel_end=k[:, 1].copy(),
        kernel_corr=k[:, 2].copy(),
        launch_corr=lr[:, 0].copy(),
        launch_start=lr[:, 1].copy(),
        launch_tid=lr[:, 2].copy(),
    )
