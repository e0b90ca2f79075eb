"""Deterministic generator of large Kineto traces for the benchmarks.

Replicates a real trace N times, one replica after the other in time, until the output
reaches a target size. Each replica gets shifted timestamps and fresh ids (``External id``,
``correlation``, flow ``id``, ``ProfilerStep#N``), so the result looks like one long
profiling session: ids stay unique and steps keep counting. The output keeps Kineto's own
layout (one event per ``  {`` block, separated by ``},\\n  {``) because the source has it.

    python benchmarks/gen_large_trace.py --size 300M        # -> benchmarks/data/trace_300M.json
    python benchmarks/gen_large_trace.py --size 1G --source path/to/trace.json.gz

The source defaults to ``../shared/traces/hta/trace_diff/control/control.json.gz``, then the
Kineto ResNet-50 trace; if neither exists a synthetic trace in Kineto layout is used.
The same arguments always produce the same bytes.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SHARED = ROOT.parent / "shared" / "traces"
DEFAULT_SOURCES = [
    SHARED / "hta" / "trace_diff" / "control" / "control.json.gz",
    SHARED / "kineto_resnet50" / "num_workers_0" / "worker0.1623143089861.pt.trace.json.gz",
]
OPEN = b'"traceEvents": ['
# fields that must be shifted per replica: ts (time), ids (unique per replica), step numbers
FIELD = re.compile(
    rb'("ts": )(\d+)|("(?:External id|external id|correlation|id)": )(\d+)|(ProfilerStep#)(\d+)'
)
K_TS, K_ID, K_STEP = 0, 1, 2


def parse_size(text: str) -> int:
    m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([kKmMgG]?)[bB]?", text.strip())
    if not m:
        raise argparse.ArgumentTypeError(f"bad size {text!r} (e.g. 300M, 1G)")
    mult = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9}[m.group(2).lower()]
    return int(float(m.group(1)) * mult)


def read_source(path: Path | None) -> bytes:
    if path is None:
        for cand in DEFAULT_SOURCES:
            if cand.exists():
                path = cand
                break
    if path is None:
        print("no real trace found; using a synthetic one", file=sys.stderr)
        return synthetic()
    blob = path.read_bytes()
    return gzip.decompress(blob) if blob[:2] == b"\x1f\x8b" else blob


def synthetic(steps: int = 200, ops_per_step: int = 50) -> bytes:
    """A small Kineto-layout trace like tests/builders.py writes (ops, launches, kernels)."""
    events: list[dict[str, object]] = []
    ext = corr = 0
    t = 1_700_000_000_000_000
    for s in range(steps):
        step_ts = t
        for i in range(ops_per_step):
            ext += 1
            corr += 1
            events.append({"ph": "X", "cat": "cpu_op", "name": f"aten::op{i % 17}", "pid": 1,
                           "tid": 1, "ts": t, "dur": 20, "args": {"External id": ext}})
            events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel",
                           "pid": 1, "tid": 1, "ts": t + 5, "dur": 5,
                           "args": {"External id": ext, "correlation": corr}})
            events.append({"ph": "X", "cat": "kernel", "name": f"kernel_{i % 23}<float>",
                           "pid": 0, "tid": 7, "ts": t + 12, "dur": 15,
                           "args": {"External id": ext, "correlation": corr, "device": 0,
                                    "stream": 7, "grid": [80, 1, 1], "block": [256, 1, 1]}})
            t += 25
        ext += 1
        events.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{s}",
                       "pid": 1, "tid": 1, "ts": step_ts, "dur": t - step_ts,
                       "args": {"External id": ext}})
        t += 10
    head = {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA H100",
                                                      "numSms": 132}]}
    body = ",\n".join("  " + json.dumps(e) for e in events)
    return (json.dumps(head)[:-1] + ',\n  "traceEvents": [\n' + body + "\n  ]\n}\n").encode()


def split(doc: bytes) -> tuple[bytes, bytes, bytes]:
    """(head up to and including '[\\n', event body, tail from the closing ']')."""
    i = doc.find(OPEN)
    if i < 0:
        raise SystemExit("source has no traceEvents array")
    start = i + len(OPEN)
    while doc[start : start + 1] in (b"\n", b" "):
        start += 1
    end = doc.rfind(b"]")
    body_end = end
    while doc[body_end - 1 : body_end] in (b"\n", b" "):
        body_end -= 1
    return doc[:start], doc[start:body_end], doc[body_end:]


def template(body: bytes) -> tuple[list[bytes], np.ndarray, np.ndarray]:
    """Literal pieces and the (kind, value) of every field that changes per replica."""
    literals: list[bytes] = []
    kinds: list[int] = []
    values: list[int] = []
    pos = 0
    for m in FIELD.finditer(body):
        if m.group(1):
            kind, prefix, num = K_TS, m.group(1), m.group(2)
        elif m.group(3):
            kind, prefix, num = K_ID, m.group(3), m.group(4)
        else:
            kind, prefix, num = K_STEP, m.group(5), m.group(6)
        literals.append(body[pos : m.start()] + prefix)
        kinds.append(kind)
        values.append(int(num))
        pos = m.end()
    literals.append(body[pos:])
    return literals, np.array(kinds, dtype=np.int8), np.array(values, dtype=np.int64)


def generate(source: bytes, target: int, out: Path) -> tuple[int, int]:
    head, body, tail = split(source)
    literals, kinds, values = template(body)
    ts = values[kinds == K_TS]
    dur = [int(x) for x in re.findall(rb'"dur": (\d+)', body)]
    span = int(ts.max() - ts.min()) + (max(dur) if dur else 0) + 1000  # µs, plus a gap
    id_span = int(values[kinds == K_ID].max(initial=0)) + 1
    steps = values[kinds == K_STEP]
    step_span = int(steps.max() - steps.min()) + 1 if len(steps) else 0
    per_kind = np.array([span, id_span, step_span], dtype=np.int64)
    replicas = max(1, -(-(target - len(head) - len(tail)) // (len(body) + 2)))
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(out.suffix + ".tmp")
    with open(tmp, "wb") as fh:
        fh.write(head)
        for r in range(replicas):
            shifted = (values + per_kind[kinds] * r).tolist()
            pieces: list[bytes] = [b""] * (2 * len(literals) - 1)
            pieces[0::2] = literals
            pieces[1::2] = [str(v).encode() for v in shifted]
            if r:
                fh.write(b",\n  ")
            fh.write(b"".join(pieces))
        fh.write(tail)
    tmp.replace(out)
    return replicas, out.stat().st_size


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", type=parse_size, default=parse_size("300M"),
                    help="target size of the JSON (e.g. 300M, 1G; default 300M)")
    ap.add_argument("--source", type=Path, default=None, help="trace to replicate (.json[.gz])")
    ap.add_argument("--out", type=Path, default=None,
                    help="output file (default benchmarks/data/trace_<size>.json)")
    ap.add_argument("--force", action="store_true", help="rewrite an existing output")
    args = ap.parse_args(argv)
    out = args.out or HERE / "data" / f"trace_{args.size // 10**6}M.json"
    if out.exists() and not args.force:
        print(f"{out} exists ({out.stat().st_size / 1e6:.0f} MB); --force to rewrite")
        return 0
    replicas, size = generate(read_source(args.source), args.size, out)
    print(f"wrote {out}: {size / 1e6:.0f} MB, {replicas} replicas")
    return 0


if __name__ == "__main__":
    sys.exit(main())
