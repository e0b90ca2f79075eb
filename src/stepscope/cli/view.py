"""``stepscope view PATH_OR_LOGDIR``: the local web dashboard."""

from __future__ import annotations

import argparse
import errno
import os
import socket
import sys

from stepscope.errors import StepscopeError

HELP_SOURCE = ("link template for stack frames and source lines: {path} and {line} are "
               "filled in (default vscode://file/{path}:{line}; e.g. "
               "pycharm://open?file={path}&line={line}, cursor://file/{path}:{line}, "
               "https://github.com/ORG/REPO/blob/main/{path}#L{line})")


class ViewError(StepscopeError):
    pass


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", help="a logdir (run/worker/span traces) or one trace file")
    parser.add_argument("--host", default="127.0.0.1",
                        help="address to bind (default 127.0.0.1: this machine only)")
    parser.add_argument("--port", type=int, default=6006, help="port (default 6006)")
    parser.add_argument("--source-link", default=None, metavar="TEMPLATE", help=HELP_SOURCE)
    parser.add_argument("--path-map", action="append", default=[], metavar="REMOTE=LOCAL",
                        help="rewrite stack-frame path prefixes (repeatable), for traces "
                             "taken on another machine")
    parser.add_argument("--no-cache", action="store_true",
                        help="re-parse traces instead of using the Arrow cache")


def parse_path_map(items: list[str]) -> tuple[tuple[str, str], ...]:
    out = []
    for item in items:
        remote, sep, local = item.partition("=")
        if not sep or not remote:
            raise ViewError(f"--path-map {item!r}: expected REMOTE_PREFIX=LOCAL_PREFIX")
        out.append((remote, local))
    return tuple(out)


def run(args: argparse.Namespace) -> int:
    from stepscope.server.app import DEFAULT_SOURCE_LINK

    if not os.path.exists(args.path):
        raise ViewError(f"{args.path}: no such file or directory")
    from stepscope.formats import kinds

    kind = kinds.identify(args.path)
    if kind.pipeline(kinds.VIEW) is None:
        raise ViewError(kinds.refusal(kind, args.path, kinds.VIEW))
    if not 0 < args.port < 65536:
        raise ViewError(f"--port {args.port}: must be 1..65535")
    template = args.source_link or DEFAULT_SOURCE_LINK
    if "{path}" not in template:
        raise ViewError(f"--source-link {template!r}: must contain {{path}}")
    path_map = parse_path_map(args.path_map)  # every option checked before anything is said
    sock = bind_socket(args.host, args.port)  # a port in use: one line, before "serving"
    try:
        return _serve(args, sock, template, path_map)
    finally:
        sock.close()


def _serve(args: argparse.Namespace, sock: socket.socket, template: str,
           path_map: tuple[tuple[str, str], ...]) -> int:
    from stepscope.report.bundle import find_bundle
    from stepscope.server.app import ViewConfig, create_app

    if find_bundle() is None:
        print("stepscope view: the front end is not built; run scripts/setup.sh "
              "(npm ci + vite build)", file=sys.stderr)
    import uvicorn

    config = ViewConfig(root=os.path.abspath(args.path), source_link=template,
                        path_map=path_map, use_cache=not args.no_cache, host=args.host)
    app = create_app(config)
    print(f"stepscope view: serving {config.root} at http://{args.host}:{args.port}/ "
          "(Ctrl+C to stop)", file=sys.stderr)
    server = uvicorn.Server(uvicorn.Config(app, host=args.host, port=args.port,
                                           log_level="warning"))
    server.run(sockets=[sock])
    return 0


def bind_socket(host: str, port: int) -> socket.socket:
    """A socket bound to ``host:port`` for the server; ViewError in one line when it cannot."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM)[0]
    except (socket.gaierror, UnicodeError) as exc:
        reason = exc.strerror if isinstance(exc, socket.gaierror) else str(exc)
        raise ViewError(f"--host {host}: not an address of this machine ({reason})") from None
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise ViewError(f"--port {port}: {host}:{port} is already in use (another "
                            "stepscope view or TensorBoard?); choose another --port") from None
        raise ViewError(f"--host {host} --port {port}: cannot listen there "
                        f"({exc.strerror or exc})") from None
    return sock
