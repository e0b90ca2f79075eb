"""Find traces under a logdir, organised as torch-tb-profiler did: run -> worker -> span.

A run is a directory holding trace files (its path relative to the logdir); a file
``{worker}.{span}.pt.trace.json[.gz]`` belongs to ``worker`` and ``span``; other
``*.json[.gz]`` traces are a worker of their own. A TensorRT engine is one entry: trex-named
files (``<engine>.profile.json``, ...) by engine, and a folder of trtexec outputs under other
names (``profile.json``, ``layer_info.json``, ``trt.out``) as the folder itself, read whole.

:class:`Logdir` caches the scan: a request re-lists only when a scanned directory's mtime
changed (a file or folder was added, removed or renamed: new traces show up without a
restart) or the listing is older than ``RESCAN_S`` (sizes of files still being written);
while one thread rescans, the others answer from the previous listing. At most ``MAX_FILES``
files are listed; the listing says when there were more.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from stepscope.formats.kinds import (
    ANY_NAME,
    TB_NAME,
    TREX_NAME,
    TREX_PREFERENCE,
    TRTEXEC_HINT,
    listed_name,
)

# Which names are listed is the input-kind registry's (formats.kinds) to say.
MAX_DEPTH = 6
MAX_FILES = 10_000
RESCAN_S = 5.0  # a full rescan at least this often, even when no directory changed


@dataclass(frozen=True)
class TraceFile:
    id: str  # path relative to the logdir, '/'-separated: the only handle the API accepts
    run: str
    worker: str
    span: str
    path: str  # absolute (a folder for a trtexec output folder)
    size: int
    kind: str = "trace"  # trace | nsys | tensorrt: what Compare may put side by side
    mtime: float = 0.0  # seconds since the epoch (the newest file's, for a folder)

    @property
    def time(self) -> float:
        """When it was captured: torch's ``{worker}.{span}`` names carry the epoch in ms
        (tensorboard_trace_handler), more reliable than an mtime a copy resets; else mtime."""
        if self.span.isdigit() and 12 <= len(self.span) <= 14:
            return int(self.span) / 1000.0
        return self.mtime


@dataclass(frozen=True)
class Listing:
    files: tuple[TraceFile, ...]
    truncated: bool  # more than MAX_FILES trace files: only the first MAX_FILES are listed
    dirs: tuple[tuple[str, int], ...] = ()  # (directory, mtime_ns) scanned: the change check
    at: float = 0.0  # time.monotonic() of the scan
    by_id: dict[str, TraceFile] = field(default_factory=dict, compare=False)


def discover(root: str) -> list[TraceFile]:
    """Every trace file under ``root`` (a directory) or ``root`` itself (a file)."""
    return list(scan(root).files)


def scan(root: str, limit: int = MAX_FILES) -> Listing:
    """List ``root``: at most ``limit`` trace files, and whether there were more."""
    base = Path(root).resolve()
    if base.is_file():
        files = (_entry(base.parent, base),) if listed_name(base.name) else ()
        return _listing(files, False, ())
    found: list[TraceFile] = []
    dirs: list[tuple[str, int]] = []
    for dirpath, dirnames, filenames in os.walk(base, followlinks=False):
        dirs.append((dirpath, _mtime(dirpath)))
        rel_depth = len(Path(dirpath).relative_to(base).parts)
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".")) \
            if rel_depth < MAX_DEPTH else []
        names = sorted(filenames)
        outputs = trtexec_outputs(dirpath, dirs[-1][1], tuple(
            n for n in names if TRTEXEC_HINT.match(n) and not TREX_NAME.match(n)))
        if outputs:  # one entry for the folder; its trtexec files are that entry
            if len(found) >= limit:
                return _listing(tuple(found), True, tuple(dirs))
            found.append(_folder_entry(base, Path(dirpath), outputs))
            names = [n for n in names if n not in outputs]
        for name in trt_representatives(names):
            p = Path(dirpath) / name
            if listed_name(name) and not p.is_symlink():
                if len(found) >= limit:
                    return _listing(tuple(found), True, tuple(dirs))
                found.append(_entry(base, p))
    return _listing(tuple(found), False, tuple(dirs))


def _listing(files: tuple[TraceFile, ...], truncated: bool,
             dirs: tuple[tuple[str, int], ...]) -> Listing:
    return Listing(files, truncated, dirs, time.monotonic(), {f.id: f for f in files})


def _mtime(path: str) -> int:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return -1


class Logdir:
    """The cached listing of one logdir (thread-safe; see the module docstring)."""

    def __init__(self, root: str, limit: int = MAX_FILES, rescan_s: float = RESCAN_S) -> None:
        self.root = root
        self.limit = limit
        self.rescan_s = rescan_s
        self._lock = threading.Lock()
        self._listing: Listing | None = None

    def listing(self) -> Listing:
        current = self._listing
        if current is not None and self._fresh(current):
            return current
        if current is None:
            self._lock.acquire()
        elif not self._lock.acquire(blocking=False):
            return current  # another thread is rescanning: answer from the last listing
        try:
            if self._listing is not current and self._listing is not None:
                return self._listing  # rescanned while we waited
            self._listing = scan(self.root, self.limit)
            return self._listing
        finally:
            self._lock.release()

    def _fresh(self, listing: Listing) -> bool:
        if time.monotonic() - listing.at >= self.rescan_s:
            return False
        return all(_mtime(d) == m for d, m in listing.dirs)


def trt_representatives(names: list[str]) -> list[str]:
    """``names`` with each TensorRT engine's files reduced to one (its profile, else graph...)."""
    engines: dict[str, list[str]] = {}
    out: list[str] = []
    for n in names:
        m = TREX_NAME.match(n)
        if m:
            engines.setdefault(m.group("engine"), []).append(n)
        else:
            out.append(n)
    for engine, files in engines.items():
        out.append(min(files, key=lambda n: TREX_PREFERENCE.index(n[len(engine) + 1:])))
    return sorted(out)


@lru_cache(maxsize=256)
def trtexec_outputs(folder: str, mtime_ns: int, hinted: tuple[str, ...]) -> frozenset[str]:
    """Which of the ``hinted`` files of ``folder`` are trtexec outputs (their first bytes say
    so). Cached per folder mtime: a rescan opens nothing while the folder is unchanged."""
    if not hinted:
        return frozenset()
    from stepscope.formats.tensorrt.load import is_trtexec_output

    return frozenset(n for n in hinted if not os.path.islink(os.path.join(folder, n))
                     and is_trtexec_output(os.path.join(folder, n)))


def _folder_entry(base: Path, folder: Path, outputs: frozenset[str]) -> TraceFile:
    rel = folder.relative_to(base)
    stats = [(folder / n).stat() for n in sorted(outputs)]
    return TraceFile(id="/".join(rel.parts) or ".", run="/".join(rel.parts[:-1]) or base.name,
                     worker=folder.name, span="", path=str(folder),
                     size=sum(st.st_size for st in stats), kind="tensorrt",
                     mtime=max(st.st_mtime for st in stats))


def _entry(base: Path, p: Path) -> TraceFile:
    rel = p.relative_to(base)
    run = "/".join(rel.parts[:-1]) or base.name
    st = p.stat()
    engine = TREX_NAME.match(p.name)
    if engine:  # one entry per TensorRT engine, named after it
        return TraceFile(id="/".join(rel.parts), run=run, worker=engine.group("engine"),
                         span="", path=str(p), size=st.st_size, kind="tensorrt",
                         mtime=st.st_mtime)
    m = TB_NAME.match(p.name) or ANY_NAME.match(p.name)
    assert m is not None
    span = m.groupdict().get("span") or ""
    return TraceFile(id="/".join(rel.parts), run=run, worker=m.group("worker"), span=span,
                     path=str(p), size=st.st_size,
                     kind="nsys" if p.name.endswith(".sqlite") else "trace", mtime=st.st_mtime)


def runs_json(files: list[TraceFile]) -> list[dict[str, object]]:
    """The run -> worker -> span tree the page's selector shows."""
    runs: dict[str, dict[str, list[dict[str, object]]]] = {}
    for f in files:
        runs.setdefault(f.run, {}).setdefault(f.worker, []).append(
            {"span": f.span, "trace": f.id, "size": f.size, "kind": f.kind,
             "time": round(f.time, 3)})
    return [{"run": run, "workers": [{"worker": w, "spans": spans}
                                     for w, spans in workers.items()]}
            for run, workers in runs.items()]
