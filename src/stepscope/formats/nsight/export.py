"""``.nsys-rep`` reports: exported to SQLite with ``nsys export`` when nsys is installed."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile

from stepscope.errors import TraceFormatError, one_line


def export_command(report: str, output: str) -> list[str]:
    return ["nsys", "export", "--type", "sqlite", "--force-overwrite", "true",
            "--output", output, report]


def export_sqlite(report: str, path: str, workdir: str | None = None) -> str:
    """Export ``report`` (a local file) to a SQLite file and return its path.

    Without ``nsys`` on PATH the error says how to export by hand.
    """
    nsys = shutil.which("nsys")
    if nsys is None:
        raise TraceFormatError(
            f"{path}: an Nsight Systems report; nsys is not on PATH to export it: run "
            f"`nsys export --type sqlite --output report.sqlite {os.path.basename(path)}` "
            "and give stepscope the .sqlite file")
    out_dir = workdir or tempfile.mkdtemp(prefix="stepscope-nsys-")
    output = os.path.join(out_dir, os.path.basename(report) + ".sqlite")
    cmd = export_command(report, output)
    cmd[0] = nsys
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=3600, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        raise TraceFormatError(f"{path}: nsys export failed ({exc})") from None
    if res.returncode != 0 or not os.path.exists(output):
        msg = one_line(res.stderr or res.stdout or f"exit code {res.returncode}", 200)
        raise TraceFormatError(f"{path}: nsys export failed ({msg})")
    return output
