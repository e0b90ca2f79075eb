"""THE registry of input kinds: every input stepscope accepts, recognised in one place.

:func:`identify` is the one function that decides what an input is; ``report``, ``diff``,
``memory``, ``view``, the dashboard's logdir listing and :func:`stepscope.load` all ask it
(through :func:`identify`, :func:`content_kind` or :func:`listed_name`) and nothing else
sniffs. Each :class:`Kind` says in words what it is, and for each command which pipeline
(read -> analyse -> advise -> render) takes it; a command given a kind it has no pipeline
for refuses in one line that names the command that does take it.

The order, first match wins (what each test reads is in brackets):

 1. several paths [count]                                    RANK_FILES
 2. a local folder holding trtexec outputs [its files' heads]  TRTEXEC
 3. a local folder or a cloud prefix [listing]               TRACE_FOLDER
 4. ``*.nsys-rep`` / ``*.qdrep`` [name; binary, exported with nsys]  NSYS_REPORT
 5. ``*.engine`` / ``*.plan`` [name; a serialized engine]    TRT_ENGINE
 then by content, the first 64 KiB (inflated when gzip), in :func:`content_kind`:
 6. nothing but whitespace                                   EMPTY
 7. the SQLite header                                        NSYS_SQLITE
 8. a pickle (first byte 0x80)                               MEMORY_SNAPSHOT
 9. ``==PROF==`` or ncu's CSV header, named .csv/.log/.txt   NCU_CSV
10. JSON naming ``"schema": "stepscope.report/..."``          SAVED_REPORT
11. JSON naming ``"schema": "stepscope.*diff/..."``           SAVED_DIFF
12. JSON naming ``"schema": "stepscope.monitor/..."``         MONITOR
13. a trtexec JSON export or log (``formats.tensorrt.load.sniff``)  TRTEXEC
    (REMOTE_TRTEXEC for a URL: an engine's files are read from a local folder)
14. a JSON array of arrays, or HTML                          MEMORY_TIMELINE
15. any other JSON object or array                          KINETO
16. anything else                                           UNKNOWN

Why this order: names are only trusted where the content cannot be read cheaply (a folder,
an nsys report that needs ``nsys export``, a binary engine); everything else is recognised
by content, the most specific signature first. Our own JSON (10-12) and trtexec's (13)
are JSON too, so they come before the catch-all Kineto test (15); a memory timeline (14)
is a JSON array whose first element is an array, where a Kineto trace's is an object.
``UNKNOWN`` and ``EMPTY`` go to each command's default pipeline, whose reader says exactly
what is wrong (a truncated gzip, JSON that is not a trace, ...).

Adding a kind is one entry in ``KINDS`` (and one test in :func:`content_kind` or
:func:`identify`); its pipeline is one function in the command that takes it.
"""

from __future__ import annotations

import os
import re
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from stepscope.io.listing import COMPANION_NAMES
from stepscope.io.source import (
    head_of,
    is_url,
    local_path,
    read_source,
    read_url_head,
)

HEAD_BYTES = 65536  # what content_kind reads: ncu's CSV header can follow many ==PROF== lines
UTF8_BOM = b"\xef\xbb\xbf"
SQLITE_MAGIC = b"SQLite format 3\x00"
PICKLE_PROTO = b"\x80"
NSYS_REPORT_SUFFIXES = (".nsys-rep", ".qdrep")
TRT_ENGINE_SUFFIXES = (".engine", ".plan")
NCU_SUFFIXES = (".csv", ".csv.gz", ".log", ".txt")

# commands that take inputs
REPORT, DIFF, MEMORY, VIEW, SQL = "report", "diff", "memory", "view", "sql"


@dataclass(frozen=True)
class Kind:
    """One kind of input: what it is called, and which pipeline each command runs on it."""

    name: str
    words: str  # "a PyTorch profiler trace": how messages name it
    pipelines: dict[str, str] = field(default_factory=dict)  # command -> pipeline name
    use: str = ""  # the command to suggest when one without a pipeline for it is given it

    def pipeline(self, command: str) -> str | None:
        return self.pipelines.get(command)


def _kind(name: str, words: str, use: str = "", **pipelines: str) -> Kind:
    return Kind(name, words, dict(pipelines), use)


# Pipelines, by command (each command maps these names to its functions):
#   report: trace | ranks | tensorrt | ncu      diff: trace | report | folder | tensorrt
#   memory: snapshot | timeline                 view: trace | logdir
#   sql: trace | ranks | tensorrt (query/engine.py)
# report's "ranks" takes several traces: report/folder.py decides whether they are ranks
# of a job (the run view) or captures of one process (that process's findings).
RANK_FILES = _kind("rank_files", "several trace files", report="ranks", sql="ranks")
TRACE_FOLDER = _kind("trace_folder", "a folder of traces", report="ranks", diff="folder",
                     view="logdir", sql="ranks")
NSYS_REPORT = _kind("nsys_report", "an Nsight Systems report", report="trace", view="trace",
                    sql="trace")
NSYS_SQLITE = _kind("nsys_sqlite", "an Nsight Systems SQLite export", report="trace",
                    view="trace", sql="trace")
TRT_ENGINE = _kind("trt_engine", "a serialized TensorRT engine", diff="tensorrt")
TRTEXEC = _kind("trtexec", "a TensorRT engine export", "stepscope report", report="tensorrt",
                diff="tensorrt", view="tensorrt", sql="tensorrt")
# An engine's outputs are found beside each other, so they are read from local files only; a
# remote one goes to the trace reader, which says to download it.
REMOTE_TRTEXEC = _kind("remote_trtexec", "a TensorRT engine export (remote)", report="trace",
                       diff="tensorrt")
MEMORY_SNAPSHOT = _kind("memory_snapshot", "a CUDA memory snapshot", "stepscope memory",
                        memory="snapshot")
MEMORY_TIMELINE = _kind("memory_timeline", "a memory timeline", "stepscope memory",
                        memory="timeline")
NCU_CSV = _kind("ncu_csv", "an Nsight Compute export", report="ncu")
SAVED_REPORT = _kind("saved_report", "a saved stepscope report", "stepscope diff",
                     diff="report")
SAVED_DIFF = _kind("saved_diff", "a stepscope diff")
MONITOR = _kind("monitor", "a stepscope monitor file (the verdict of stepscope monitor)")
KINETO = _kind("kineto", "a PyTorch profiler trace", "stepscope report", report="trace",
               diff="trace", view="trace", sql="trace")
EMPTY = _kind("empty", "an empty file", report="trace", sql="trace")
# (report and sql: the trace reader says what is wrong; view would serve an empty page)
UNKNOWN = _kind("unknown", "a file stepscope cannot read", report="trace", sql="trace")

# every kind, in the documented order
KINDS: tuple[Kind, ...] = (RANK_FILES, TRTEXEC, REMOTE_TRTEXEC, TRACE_FOLDER, NSYS_REPORT,
                           TRT_ENGINE, EMPTY, NSYS_SQLITE, MEMORY_SNAPSHOT, NCU_CSV,
                           SAVED_REPORT, SAVED_DIFF, MONITOR, MEMORY_TIMELINE, KINETO,
                           UNKNOWN)


# ---------------------------------------------------------------- content


def _opening(head: bytes) -> bytes:
    return head.removeprefix(UTF8_BOM).lstrip()[:1]


def _first_element(head: bytes) -> bytes:
    """The first non-blank byte after a JSON array's opening bracket."""
    return head.removeprefix(UTF8_BOM).lstrip()[1:].lstrip()[:1]


def _ours(head: bytes, schema: bytes) -> bool:
    window = head[:8192]
    return b'"schema"' in window and schema in window


def content_kind(head: bytes | memoryview, name: str = "") -> Kind:
    """The kind of a file whose first bytes (inflated) are ``head``; ``name`` is its path."""
    from stepscope.formats.tensorrt.load import sniff as trtexec_sniff

    head = bytes(head[:HEAD_BYTES])
    if not head.strip():
        return EMPTY
    if head.startswith(SQLITE_MAGIC):
        return NSYS_SQLITE
    if head[:1] == PICKLE_PROTO:
        return MEMORY_SNAPSHOT
    if name.lower().endswith(NCU_SUFFIXES):
        text = head.decode("utf-8", "replace")
        if '"ID","Process ID","Process Name"' in text or text.lstrip().startswith("==PROF=="):
            return NCU_CSV
    if _ours(head, b"stepscope.report/"):
        return SAVED_REPORT
    if _ours(head, b"diff/"):
        return SAVED_DIFF
    if _ours(head, b"stepscope.monitor/"):
        return MONITOR
    if trtexec_sniff(head[:4096].decode("utf-8", "replace")) not in (None, "output"):
        return TRTEXEC
    opening = _opening(head)
    if opening == b"<" or (opening == b"[" and _first_element(head) == b"["):
        return MEMORY_TIMELINE
    if opening in (b"{", b"["):
        return KINETO
    return UNKNOWN


def read_head(path: str, storage_options: dict[str, Any] | None = None,
              n: int = HEAD_BYTES) -> bytes:
    """The first ``n`` inflated bytes of a file or URL, without reading the whole of it.

    Anything unusual (a missing file, a gzip stream that does not inflate) goes through
    ``read_source``, so the error messages are the readers' own.
    """
    if is_url(path):
        return read_url_head(path, n, storage_options)
    local = local_path(path)
    try:
        with open(local, "rb") as fh:
            if fh.read(1):  # an empty file: read_source says so
                fh.seek(0)
                return head_of(fh, n)
    except (OSError, EOFError, zlib.error):
        pass
    return bytes(read_source(path, storage_options).data[:n])


# ---------------------------------------------------------------- paths


def _is_trtexec_folder(local: str) -> bool:
    from stepscope.formats.tensorrt.load import is_trtexec_output

    return is_trtexec_output(local)


def _is_prefix(path: str, storage_options: dict[str, Any] | None) -> bool:
    from stepscope.io.listing import is_run_location

    return is_run_location(path, storage_options)


def identify(paths: str | Sequence[str], storage_options: dict[str, Any] | None = None) -> Kind:
    """What the input ``paths`` is (one path or several); raises the reader's one-line error
    when a file cannot be read at all."""
    if not isinstance(paths, str):
        if len(paths) != 1:
            return RANK_FILES
        paths = paths[0]
    path = paths
    if not is_url(path) and os.path.isdir(local_path(path)):
        if not _is_trtexec_folder(local_path(path)):
            return TRACE_FOLDER
        from stepscope.formats.tensorrt.load import find_files

        find_files(path)  # a folder of two engines, or mixing traces in, is refused here
        return TRTEXEC
    if is_url(path) and _is_prefix(path, storage_options):
        return TRACE_FOLDER
    lower = path.lower()
    if lower.endswith(NSYS_REPORT_SUFFIXES):
        return NSYS_REPORT
    if lower.endswith(TRT_ENGINE_SUFFIXES):
        return TRT_ENGINE
    kind = content_kind(read_head(path, storage_options), path)
    return REMOTE_TRTEXEC if kind is TRTEXEC and is_url(path) else kind


def refusal(kind: Kind, path: str, command: str) -> str:
    """The one-line message for a command given a kind it has no pipeline for."""
    use = f" (use: {kind.use})" if kind.use else ""
    return f"{path}: {kind.words}, not an input of stepscope {command}{use}"


# ---------------------------------------------------------------- names (logdir listing)

# The dashboard lists a logdir by file name alone (it is scanned on every request, so its
# files are not opened): torch-tb-profiler's ``{worker}.{span}.pt.trace.json[.gz]``, any
# other ``*.json[.gz]`` or nsys ``*.sqlite``, and trex's names for one engine's trtexec outputs.
TB_NAME = re.compile(r"^(?P<worker>.+?)(?:\.(?P<span>\d+))?\.pt\.trace\.json(?:\.gz)?$")
ANY_NAME = re.compile(r"^(?P<worker>.+?)\.(?:json(?:\.gz)?|sqlite)$")
TREX_NAME = re.compile(r"^(?P<engine>.+?)\.(?P<kind>profile\.json|graph\.json|timing\.json|"
                       r"profile\.metadata\.json|build\.metadata\.json|metadata\.json)$")
TREX_PREFERENCE = ("profile.json", "graph.json", "timing.json", "profile.metadata.json",
                   "build.metadata.json", "metadata.json")


# trtexec's outputs under names of the user's choosing (``--exportProfile=profile.json``,
# ``--exportTimes=times.json``, ``--exportLayerInfo=layer_info.json``, a redirected log
# ``trt.out`` / ``trtexec.log``). A folder holding one is listed as ONE entry (the engine: all
# its files read together), when the file's first bytes confirm it (formats.tensorrt.load.sniff).
TRTEXEC_HINT = re.compile(r"^(?:.*[._-])?(?:profile|times|timing|layer_?info|graph|trtexec|trt)"
                          r"\.(?:json(?:\.gz)?|out|log)$", re.IGNORECASE)


def listed_name(name: str) -> bool:
    """Whether the logdir listing shows a file of this name."""
    return name not in COMPANION_NAMES and bool(TB_NAME.match(name) or ANY_NAME.match(name))
