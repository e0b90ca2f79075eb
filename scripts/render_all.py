"""Render every file and folder under a traces folder with the CLI, one output file per call.

Used to show that a refactor changes no output: run it before and after, then compare the
two folders (``diff -r BEFORE AFTER``). Each call's stdout, stderr and exit status are kept,
so error messages are compared too. Every call runs as its own process (as a user runs it),
at 80 columns, with a fresh Arrow cache for the whole run (each file is parsed once by the
reader under test, then read back from the cache by the calls after it).

    python scripts/render_all.py OUT_DIR [--traces ../shared/traces] [--jobs 2]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

SKIP_SUFFIXES = (".md",)


def inputs(root: Path) -> list[Path]:
    """Every file (not the docs) and every folder that holds files, sorted."""
    found: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        here = Path(dirpath)
        files = [here / n for n in sorted(filenames) if not n.endswith(SKIP_SUFFIXES)]
        if files and here != root:
            found.append(here)
        found.extend(files)
    return found


def calls(root: Path) -> list[tuple[str, list[str]]]:
    """(output name, stepscope arguments) for every rendering."""
    out: list[tuple[str, list[str]]] = []
    for path in inputs(root):
        rel = path.relative_to(root).as_posix()
        name = rel.replace("/", "__")
        p = str(path)
        out.append((f"{name}.report.json", ["report", p, "--format", "json"]))
        out.append((f"{name}.report.txt", ["report", p, "--view", "all"]))
        if path.is_file():
            out.append((f"{name}.memory.json", ["memory", p, "--format", "json"]))
            out.append((f"{name}.memory.txt", ["memory", p]))
    pairs = [("kineto_resnet50/num_workers_0", "kineto_resnet50/num_workers_4")]
    for a, b in pairs:
        if (root / a).exists() and (root / b).exists():
            tag = f"{a}--{b}".replace("/", "__")
            out.append((f"{tag}.diff.json", ["diff", str(root / a), str(root / b),
                                             "--format", "json"]))
            out.append((f"{tag}.diff.txt", ["diff", str(root / a), str(root / b)]))
    return out


def render(exe: list[str], args: list[str], dest: Path, env: dict[str, str]) -> None:
    proc = subprocess.run([*exe, *args], capture_output=True, env=env, timeout=900,
                          stdin=subprocess.DEVNULL)
    dest.write_bytes(proc.stdout + b"\n--- stderr ---\n" + proc.stderr
                     + f"\n--- exit {proc.returncode} ---\n".encode())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out")
    parser.add_argument("--traces", default=str(Path(__file__).resolve().parents[2] / "shared"
                                                / "traces"))
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    root = Path(args.traces).resolve()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    todo = calls(root)
    exe = [sys.executable, "-c", "from stepscope.cli.main import entry_point; entry_point()"]
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "COLUMNS": "80", "XDG_CACHE_HOME": cache, "NO_COLOR": "1"}
        # parse each input once (serially per file) before the parallel renderings
        with ThreadPoolExecutor(args.jobs) as pool:
            list(pool.map(lambda c: render(exe, c[1], out / c[0], env),
                          [c for c in todo if c[0].endswith(".report.json")]))
            list(pool.map(lambda c: render(exe, c[1], out / c[0], env),
                          [c for c in todo if not c[0].endswith(".report.json")]))
    digest = hashlib.sha256()
    for name, _ in todo:
        digest.update((out / name).read_bytes())
    print(f"{len(todo)} renderings in {out}; digest {digest.hexdigest()[:16]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
