"""``stepscope view PATH_OR_LOGDIR``: the local web dashboard."""

from __future__ import annotations

import argparse
import os
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
    from stepscope.server.app import DEFAULT_SOURCE_LINK, ViewConfig, create_app
    from stepscope.server.bundle import find_bundle

    if not os.path.exists(args.path):
        raise ViewError(f"{args.path}: no such file or directory")
    if not 0 < args.port < 65536:
        raise ViewError(f"--port {args.port}: must be 1..65535")
    template = args.source_link or DEFAULT_SOURCE_LINK
    if "{path}" not in template:
        raise ViewError(f"--source-link {template!r}: must contain {{path}}")
    path_map = parse_path_map(args.path_map)  # every option checked before anything is said
    if find_bundle() is None:
        print("stepscope view: the front end is not built; run scripts/setup.sh "
              "(npm ci + vite build)", file=sys.stderr)
    import uvicorn

    config = ViewConfig(root=os.path.abspath(args.path), source_link=template,
                        path_map=path_map, use_cache=not args.no_cache)
    app = create_app(config)
    print(f"stepscope view: serving {config.root} at http://{args.host}:{args.port}/ "
          "(Ctrl+C to stop)", file=sys.stderr)
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    return 0
