"""``stepscope report PATH --html out.html``: one self-contained HTML file.

The dashboard's bundle (JS and CSS) and the data are inlined: the report JSON and a
bounded timeline summary (the ``TIMELINE_CAP`` longest events; the page states how many of
how many it keeps). It opens from file:// with no server and no network. The data sits in
a ``type="application/json"`` block with ``<``, ``>`` and ``&`` escaped, so no trace string
can end the block or become markup; the CSP admits only the inlined script, by its hash.
"""

from __future__ import annotations

import base64
import hashlib
import html
import os
import re
from pathlib import Path
from typing import Any

import msgspec

from stepscope.errors import StepscopeError
from stepscope.report.build import Report
from stepscope.report.counters import CounterTracks
from stepscope.report.timeline import TimelineIndex

TIMELINE_CAP = 100_000  # events kept in the report's timeline (about 4 MB of JSON)


class HtmlReportError(StepscopeError):
    pass


def _bundle() -> Path:
    from stepscope.report.bundle import find_bundle  # the one place that knows where it is

    found = find_bundle()
    if found is None:
        raise HtmlReportError("the front end is not built: run scripts/setup.sh "
                              "(npm ci + vite build) to write HTML reports")
    return found


def _safe_json(data: Any) -> str:
    raw = msgspec.json.encode(data).decode()
    for ch, esc in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"),
                    ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        raw = raw.replace(ch, esc)
    return raw


def render_page(data: dict[str, Any], *, title: str = "stepscope report") -> str:
    """The single-file page around ``data`` (what the front end's StaticSource reads).

    ``data`` holds ``report`` (a ``stepscope.report/1`` or ``stepscope.diff/1`` document),
    ``trace`` (a label), ``config`` and, for traces, ``timeline``.
    """
    bundle = _bundle()
    assets = bundle / "assets"
    js = (assets / "app.js").read_text(encoding="utf-8")
    css = (assets / "app.css").read_text(encoding="utf-8") if (assets / "app.css").exists() \
        else ""
    js = re.sub(r"</(script)", r"<\\/\1", js, flags=re.IGNORECASE)
    css = re.sub(r"</(style)", r"<\\/\1", css, flags=re.IGNORECASE)
    digest = base64.b64encode(hashlib.sha256(js.encode()).digest()).decode()
    csp = (f"default-src 'none'; script-src 'sha256-{digest}'; style-src 'unsafe-inline'; "
           "img-src data: blob:; connect-src 'none'; base-uri 'none'; form-action 'none'")
    return (
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<meta http-equiv=\"Content-Security-Policy\" content=\"{csp}\">"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
        f"<title>{html.escape(title)}</title>"
        f"<style>{css}</style></head><body><div id=\"app\"></div>"
        f"<script type=\"application/json\" id=\"stepscope-data\">{_safe_json(data)}</script>"
        f"<script type=\"module\">{js}</script></body></html>\n"
    )


def static_config(source_link: str = "vscode://file/{path}:{line}") -> dict[str, Any]:
    return {"source_link": source_link, "path_map": [], "mode": "static"}


def render_html(report: Report, *, timeline_cap: int = TIMELINE_CAP,
                source_link: str = "vscode://file/{path}:{line}") -> str:
    report_json = report.to_json()
    index = TimelineIndex(report.trace)
    timeline = index.summary(timeline_cap)
    timeline["steps"] = [
        {"name": s["name"], "start": round(s["start_us"] * 1000) - index.origin,
         "dur": round(s["duration_us"] * 1000)} for s in report_json["steps"]]
    # counter tracks (memory, report/counters.py) over the whole trace in 2000 bins; the
    # page resamples them onto each window as it does GPU utilisation
    tracks = CounterTracks(report.trace)
    timeline["tracks"] = tracks.meta()
    timeline["track_values"] = tracks.query(index.origin, index.finish, 2000)
    name = os.path.basename(report.trace.meta.path) or "trace"
    data = {"report": report_json, "trace": name, "timeline": timeline,
            "config": static_config(source_link)}
    return render_page(data, title=f"stepscope report: {name}")


def render_document(doc: dict[str, Any], label: str, *, title: str) -> str:
    """A page around a document without a timeline: a TensorRT report or a diff."""
    return render_page({"report": doc, "trace": label, "config": static_config()}, title=title)


def write_page(text: str, out: str) -> str:
    """Write a rendered page to ``out`` (parents made, all at once); returns ``out``."""
    from stepscope.io.output import write_atomic

    try:
        write_atomic(out, text.encode("utf-8"))
    except OSError as exc:
        raise HtmlReportError(f"{out}: cannot write the HTML report ({exc.strerror})") from exc
    return out


def check_html_output(out: str) -> None:
    """Refuse ``--html OUT`` before the analysis: no front end, or a path not writable."""
    from stepscope.io.output import unwritable

    _bundle()
    problem = unwritable(out)
    if problem is not None:
        raise HtmlReportError(f"{out or '--html'}: cannot write the HTML report ({problem})")


def write_html(report: Report, out: str, *, timeline_cap: int = TIMELINE_CAP) -> str:
    """Write the single-file report of a trace to ``out``; returns ``out``."""
    return write_page(render_html(report, timeline_cap=timeline_cap), out)
