"""Starlette app factory: JSON API over the analyses plus the built front end.

No module-level state: everything lives in the app made by ``create_app``. The API only
accepts trace ids that discovery returned, so no request can name a file outside the
logdir; static files are served from the bundle folder by name, never by joined paths.
"""

from __future__ import annotations

import contextlib
import inspect
import ipaddress
import os
import socket
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
import pyarrow as pa
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import FileResponse, PlainTextResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from stepscope.report.bundle import find_bundle
from stepscope.report.counters import CounterTracks
from stepscope.report.lookup import context, search_hits
from stepscope.report.timeline import TimelineIndex
from stepscope.report.window_export import export_window
from stepscope.server.logdir import MAX_FILES, Logdir, TraceFile, runs_json
from stepscope.server.runs import RunStore, rank_files, run_location
from stepscope.server.store import Entry, TraceStore

CSP = ("default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
       "img-src 'self' data:; connect-src 'self'; font-src 'none'; object-src 'none'; "
       "base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
DEFAULT_SOURCE_LINK = "vscode://file/{path}:{line}"
MAX_WIDTH = 10_000
SQL_ROWS = 1000  # rows the Query page gets (the count says how many the query returned)
SQL_INPUTS = 4  # traces whose SQL tables stay built between queries


@dataclass(frozen=True)
class ViewConfig:
    root: str
    source_link: str = DEFAULT_SOURCE_LINK
    path_map: tuple[tuple[str, str], ...] = ()
    use_cache: bool = True
    bundle: Path | None = field(default=None)
    host: str = "127.0.0.1"  # the --host the server was started for (DNS-rebinding check)
    max_files: int = MAX_FILES  # the listing cap


class BadRequest(Exception):
    pass


class PastTheCap(Exception):
    """A trace id not listed because the logdir is larger than the listing cap (409)."""


def _json(data: Any, status: int = 200) -> Response:
    return Response(msgspec.json.encode(data), status_code=status,
                    media_type="application/json")


class _Headers:
    """Security headers on every response (the CSP forbids inline scripts and remote hosts)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def send_with(message: Any) -> None:
            if message["type"] == "http.response.start":
                headers = message.setdefault("headers", [])
                headers.append((b"content-security-policy", CSP.encode()))
                headers.append((b"x-content-type-options", b"nosniff"))
                headers.append((b"referrer-policy", b"no-referrer"))
            await send(message)

        await self.app(scope, receive, send_with)


LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "::1"})
WILDCARDS = frozenset({"0.0.0.0", "::", ""})


def host_name(header: str) -> str:
    """The name in a ``Host`` header, without port, brackets, trailing dot or case."""
    value = header.strip().lower()
    if value.startswith("["):  # [::1] or [::1]:6006
        end = value.find("]")
        return value[1:end] if end > 0 else ""
    if value.count(":") == 1:
        value = value.partition(":")[0]
    return value.rstrip(".")


def allowed_hosts(bind: str) -> Callable[[str], bool]:
    """Whether a ``Host`` name may reach the server started on ``--host bind``.

    DNS rebinding points an attacker's domain at 127.0.0.1 after the page loaded, so the
    browser sends that domain in ``Host``: only the loopback names and the bound address are
    accepted. An address literal cannot be rebound (the browser connected to that very
    address), so when the server listens on every interface (0.0.0.0, ::) any IP literal and
    this machine's name are accepted too.
    """
    names = set(LOOPBACK_NAMES) | {host_name(bind)}
    wildcard = bind.strip("[]") in WILDCARDS
    if wildcard:
        names |= {socket.gethostname().lower(), socket.getfqdn().lower()}

    def check(name: str) -> bool:
        if name in names:
            return True
        if wildcard:
            try:
                ipaddress.ip_address(name)
                return True
            except ValueError:
                return False
        return False

    return check


class _HostCheck:
    """403 for any request whose ``Host`` is not a name this server was started for."""

    def __init__(self, app: ASGIApp, bind: str) -> None:
        self.app = app
        self.check = allowed_hosts(bind)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            host = next((v.decode("latin-1") for k, v in scope.get("headers", [])
                         if k == b"host"), "")
            if not self.check(host_name(host)):
                response = PlainTextResponse(
                    "forbidden: unknown Host header (stepscope view answers only the "
                    "addresses it was started for; see --host)", 403)
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


NO_TIMELINE = "this run has no timeline (a TensorRT engine's outputs)"


def create_app(config: ViewConfig) -> Starlette:
    store = TraceStore(use_cache=config.use_cache)
    run_store = RunStore(use_cache=config.use_cache)
    bundle = config.bundle if config.bundle is not None else find_bundle()

    logdir = Logdir(config.root, limit=config.max_files)

    def files() -> dict[str, TraceFile]:
        return logdir.listing().by_id

    def trace_file(request: Request, param: str = "trace") -> TraceFile:
        tid = request.query_params.get(param)
        if not tid:
            raise BadRequest(f"missing parameter {param!r}")
        listing = logdir.listing()
        found = listing.by_id.get(tid)
        if found is None:
            if listing.truncated:
                raise PastTheCap(f"no trace {tid!r} among the {len(listing.files):,} listed: "
                                 f"the logdir holds more than {len(listing.files):,} trace "
                                 "files and only those are served; view a sub-folder "
                                 "(stepscope view RUN_DIR)")
            raise LookupError(f"no trace {tid!r} under the logdir")
        return found

    def ready(request: Request) -> tuple[Entry, Response | None]:
        entry = store.get(trace_file(request).path)
        if entry.state == "error":
            return entry, _json({"error": entry.error, **entry.progress()}, 422)
        if entry.state != "ready":
            return entry, _json(entry.progress(), 202)
        return entry, None

    def int_param(request: Request, name: str, default: int | None = None,
                  lo: int = -(2**62), hi: int = 2**62) -> int:
        raw = request.query_params.get(name)
        if raw is None:
            if default is None:
                raise BadRequest(f"missing parameter {name!r}")
            return default
        try:
            value = int(float(raw)) if raw.strip().lower() not in ("nan", "inf", "-inf") \
                else int("x")
        except (ValueError, OverflowError):
            raise BadRequest(f"parameter {name!r} must be an integer") from None
        if not lo <= value <= hi:
            raise BadRequest(f"parameter {name!r} out of range")
        return value

    async def api_config(request: Request) -> Response:
        return _json({"source_link": config.source_link,
                      "path_map": [list(p) for p in config.path_map], "mode": "server"})

    def api_runs(request: Request) -> Response:
        listing = logdir.listing()
        return _json({"root": Path(config.root).name, "runs": runs_json(list(listing.files)),
                      "truncated": listing.truncated, "listed": len(listing.files)})

    def api_progress(request: Request) -> Response:
        return _json(store.get(trace_file(request).path).progress())

    def api_report(request: Request) -> Response:
        entry, early = ready(request)
        return early or _json(entry.report)

    def window(request: Request) -> tuple[int, int]:
        start, end = int_param(request, "start"), int_param(request, "end")
        if end <= start:
            raise BadRequest("'end' must be greater than 'start'")
        return start, end

    def with_timeline(request: Request,
                      answer: Callable[[Entry, TimelineIndex], Response]) -> Response:
        """The answer over a loaded trace's timeline; 202/422 while loading or failed."""
        entry, early = ready(request)
        if early:
            return early
        if entry.timeline is None:
            raise LookupError(NO_TIMELINE)
        return answer(entry, entry.timeline)

    def api_timeline_meta(request: Request) -> Response:
        def answer(entry: Entry, tl: TimelineIndex) -> Response:
            if entry.report is None:
                raise LookupError(NO_TIMELINE)
            tracks = entry.counters or CounterTracks(tl.trace)
            return _json({**tl.meta(), "steps": _steps(entry.report, tl.origin),
                          "tracks": tracks.meta(), "notes": tracks.notes})

        return with_timeline(request, answer)

    def api_timeline(request: Request) -> Response:
        start, end = window(request)
        width = int_param(request, "width", 1000, 1, MAX_WIDTH)

        def answer(entry: Entry, tl: TimelineIndex) -> Response:
            got = tl.query(start, end, width)
            if entry.counters is not None:  # memory / monitor tracks beside GPU utilisation
                got["tracks"] = entry.counters.query(tl.origin + start, tl.origin + end,
                                                     max(1, width // 2))
            return _json(got)

        return with_timeline(request, answer)

    def api_event(request: Request) -> Response:
        i = int_param(request, "id", lo=0)

        def answer(_: Entry, tl: TimelineIndex) -> Response:
            if i >= tl.n:
                raise LookupError("no such event")
            return _json({**tl.event(i), **context(tl, i)})

        return with_timeline(request, answer)

    def api_search(request: Request) -> Response:
        q = request.query_params.get("q", "")
        if not q or len(q) > 200:
            raise BadRequest("parameter 'q' must have 1 to 200 characters")
        return with_timeline(request, lambda _, tl: _json(search_hits(tl, q)))

    def api_export(request: Request) -> Response:
        start, end = window(request)
        return with_timeline(request, lambda e, tl: _export(tl, e.counters, start, end))

    def _export(tl: TimelineIndex, counters: CounterTracks | None, start: int,
                end: int) -> Response:
        body = msgspec.json.encode(export_window(tl, start, end, counters))
        return Response(body, media_type="application/json", headers={
            "content-disposition": 'attachment; filename="stepscope-window.json"'})

    def api_diff(request: Request) -> Response:
        from stepscope.server.diff import DiffInputError, diff_reports

        sides = [trace_file(request, "base"), trace_file(request, "new")]
        entries = [store.get(f.path) for f in sides]
        for f, e in zip(sides, entries, strict=True):
            if e.state == "error":
                return _json({"error": f"{f.id}: {e.error}"}, 422)
        if any(e.state != "ready" for e in entries):  # the page polls until both are loaded
            return _json({"base": entries[0].progress(), "new": entries[1].progress()}, 202)
        assert entries[0].report is not None and entries[1].report is not None
        try:
            return _json(diff_reports(entries[0].report, sides[0].id,
                                      entries[1].report, sides[1].id,
                                      series=(entries[0].series, entries[1].series)))
        except DiffInputError as exc:
            return _json({"error": str(exc)}, 422)
    inputs: dict[str, Any] = {}  # path -> (stamp, query Input): tables built once per trace

    def api_sql(request: Request) -> Response:
        """The Query page: ``q`` over the trace's SQL tables (docs/sql.md), the first
        SQL_ROWS rows; a bad query is a 400 with DuckDB's message in one line."""
        from stepscope.errors import StepscopeError
        from stepscope.query.engine import open_input, run_sql
        from stepscope.query.output import plain

        path = trace_file(request).path
        query = request.query_params.get("q", "")
        try:
            stamp = (os.stat(path).st_mtime, os.stat(path).st_size)
            if path not in inputs or inputs[path][0] != stamp:
                if len(inputs) >= SQL_INPUTS:
                    inputs.pop(next(iter(inputs)))
                inputs[path] = (stamp, open_input(path, use_cache=config.use_cache))
            table = run_sql(inputs[path][1], query)
        except (StepscopeError, OSError) as exc:
            return _json({"error": str(exc)}, 400)
        except ModuleNotFoundError as exc:  # duckdb: the sql extra
            return _json({"error": f"the Query page needs the 'sql' extra ({exc.name} is not "
                                   "installed): pip install 'stepscope[sql]'"}, 400)
        shown = table.slice(0, SQL_ROWS)
        # rows as lists, in column order: a query may name two columns alike
        values = [[plain(v) for v in col.to_pylist()] for col in shown.columns]
        return _json({"columns": table.column_names,
                      "numeric": [pa.types.is_integer(f.type) or pa.types.is_floating(f.type)
                                  or pa.types.is_decimal(f.type) for f in table.schema],
                      "row_count": table.num_rows, "truncated": table.num_rows > SQL_ROWS,
                      "rows": [list(r) for r in zip(*values, strict=True)]})

    def api_run(request: Request) -> Response:
        name = request.query_params.get("run")
        if not name:
            raise BadRequest("missing parameter 'run'")
        all_files = list(files().values())
        if not any(f.run == name for f in all_files):
            raise LookupError(f"no run {name!r} under the logdir")
        ranks = rank_files(all_files, name)
        if not ranks:
            raise BadRequest(f"run {name!r} has fewer than 2 rank traces")
        entry = run_store.get(run_location(ranks), [f.path for f in ranks])
        if entry.state == "error":
            return _json({"error": entry.error, **entry.progress()}, 422)
        if entry.state != "ready":
            return _json(entry.progress(), 202)
        return _json(entry.report)

    def static(request: Request) -> Response:
        name = request.path_params.get("name", "")
        if bundle is None:
            return PlainTextResponse(
                "the front end is not built: run scripts/setup.sh (npm + vite build)", 503)
        allowed = {p.name: p for p in (bundle / "assets").iterdir()} \
            if (bundle / "assets").is_dir() else {}
        target = allowed.get(name)  # looked up by exact name: no path is ever joined
        if target is None:
            return PlainTextResponse("not found", 404)
        return FileResponse(target)

    def index(request: Request) -> Response:
        if bundle is None:
            return PlainTextResponse(
                "the front end is not built: run scripts/setup.sh (npm + vite build)", 503)
        return FileResponse(bundle / "index.html", media_type="text/html")

    def wrap(fn: Any) -> Any:
        """An endpoint: async handlers run on the event loop, the others (a logdir scan, a
        timeline query, JSON encoding: blocking work) in the thread pool, so one slow
        request never holds up the rest."""
        async def endpoint(request: Request) -> Response:
            try:
                if inspect.iscoroutinefunction(fn):
                    return await fn(request)  # type: ignore[no-any-return]
                return await run_in_threadpool(fn, request)
            except BadRequest as exc:
                return _json({"error": str(exc)}, 400)
            except PastTheCap as exc:
                return _json({"error": str(exc), "truncated": True}, 409)
            except LookupError as exc:
                return _json({"error": str(exc).strip("'\"")}, 404)
        return endpoint

    routes = [
        Route("/", wrap(index)),
        Route("/api/config", wrap(api_config)),
        Route("/api/runs", wrap(api_runs)),
        Route("/api/progress", wrap(api_progress)),
        Route("/api/report", wrap(api_report)),
        Route("/api/timeline/meta", wrap(api_timeline_meta)),
        Route("/api/timeline", wrap(api_timeline)),
        Route("/api/event", wrap(api_event)),
        Route("/api/search", wrap(api_search)),
        Route("/api/export", wrap(api_export)),
        Route("/api/diff", wrap(api_diff)),
        Route("/api/run", wrap(api_run)),
        Route("/api/sql", wrap(api_sql)),
        Route("/assets/{name}", wrap(static)),
        Route("/favicon.ico", lambda request: Response(status_code=204)),
    ]

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        store.close()
        run_store.close()

    app = Starlette(routes=routes, lifespan=lifespan)
    app.add_middleware(_HostCheck, bind=config.host)
    app.add_middleware(_Headers)  # added last: outermost, so the 403 carries the headers too
    app.state.store = store
    return app


def _steps(report: dict[str, Any], origin_ns: int) -> list[dict[str, Any]]:
    """Step boundaries in the timeline's time base (ns from the first event)."""
    return [{"name": s["name"], "start": round(s["start_us"] * 1000) - origin_ns,
             "dur": round(s["duration_us"] * 1000)} for s in report.get("steps", [])]
