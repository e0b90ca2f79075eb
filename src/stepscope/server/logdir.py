"""Find traces under a logdir, organised as torch-tb-profiler did: run -> worker -> span.

A run is a directory holding trace files (its path relative to the logdir); a file
``{worker}.{span}.pt.trace.json[.gz]`` belongs to ``worker`` and ``span``; other
``*.json[.gz]`` traces are a worker of their own. The scan is cheap and runs on every
request, so traces written after the server started show up without a restart.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from stepscope.formats.kinds import ANY_NAME, TB_NAME, TREX_NAME, TREX_PREFERENCE, listed_name

# Which names are listed is the input-kind registry's (formats.kinds) to say.
MAX_DEPTH = 6
MAX_FILES = 10_000


@dataclass(frozen=True)
class TraceFile:
    id: str  # path relative to the logdir, '/'-separated: the only handle the API accepts
    run: str
    worker: str
    span: str
    path: str  # absolute
    size: int


def discover(root: str) -> list[TraceFile]:
    """Every trace file under ``root`` (a directory) or ``root`` itself (a file)."""
    base = Path(root).resolve()
    if base.is_file():
        return [_entry(base.parent, base)] if listed_name(base.name) else []
    found: list[TraceFile] = []
    for dirpath, dirnames, filenames in os.walk(base, followlinks=False):
        rel_depth = len(Path(dirpath).relative_to(base).parts)
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".")) \
            if rel_depth < MAX_DEPTH else []
        for name in trt_representatives(sorted(filenames)):
            p = Path(dirpath) / name
            if listed_name(name) and not p.is_symlink():
                found.append(_entry(base, p))
                if len(found) >= MAX_FILES:
                    return found
    return found


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


def _entry(base: Path, p: Path) -> TraceFile:
    rel = p.relative_to(base)
    run = "/".join(rel.parts[:-1]) or base.name
    engine = TREX_NAME.match(p.name)
    if engine:  # one entry per TensorRT engine, named after it
        return TraceFile(id="/".join(rel.parts), run=run, worker=engine.group("engine"),
                         span="", path=str(p), size=p.stat().st_size)
    m = TB_NAME.match(p.name) or ANY_NAME.match(p.name)
    assert m is not None
    span = m.groupdict().get("span") or ""
    return TraceFile(id="/".join(rel.parts), run=run, worker=m.group("worker"), span=span,
                     path=str(p), size=p.stat().st_size)


def runs_json(files: list[TraceFile]) -> list[dict[str, object]]:
    """The run -> worker -> span tree the page's selector shows."""
    runs: dict[str, dict[str, list[dict[str, object]]]] = {}
    for f in files:
        runs.setdefault(f.run, {}).setdefault(f.worker, []).append(
            {"span": f.span, "trace": f.id, "size": f.size})
    return [{"run": run, "workers": [{"worker": w, "spans": spans}
                                     for w, spans in workers.items()]}
            for run, workers in runs.items()]
