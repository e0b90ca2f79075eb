"""Synthetic Kineto traces for unit tests.

Build a trace in the modern (PyTorch 2.x) spelling with explicit times in µs::

    b = TraceBuilder()
    with b.step(1, 0, 100):
        op = b.op("aten::mm", 10, 20)
        b.launch(op, "cudaLaunchKernel", 12, 3, kernel="sgemm", k_ts=30, k_dur=40)
    trace = b.load(tmp_path)

Runtime calls and device ops are linked by correlation ids, host ops and runtime calls by
external ids, exactly as Kineto writes them.
"""

from __future__ import annotations

import contextlib
import gzip
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import stepscope
from stepscope.model import Trace

PID = 1000
TID = 1000


def kineto_text(events: list[dict[str, Any]], head: dict[str, Any]) -> bytes:
    """JSON in Kineto's own layout: the head's keys, then one event per '  {' line."""
    body = ",\n".join("  " + json.dumps(e, allow_nan=True) for e in events)
    return (json.dumps(head)[:-1] + ',\n  "traceEvents": [\n' + body + "\n]}\n").encode()


@dataclass
class TraceBuilder:
    events: list[dict[str, Any]] = field(default_factory=list)
    device_properties: list[dict[str, Any]] = field(
        default_factory=lambda: [
            {
                "id": 0,
                "name": "NVIDIA H100 80GB HBM3",
                "totalGlobalMem": 85_000_000_000,
                "computeMajor": 9,
                "computeMinor": 0,
                "maxThreadsPerBlock": 1024,
                "maxThreadsPerMultiprocessor": 2048,
                "numSms": 132,
                "warpSize": 32,
            }
        ]
    )
    distributed: dict[str, Any] | None = None
    _next_ext: int = 1
    _next_corr: int = 1

    def _complete(self, cat: str, name: str, pid: int, tid: int, ts: float, dur: float,
                  args: dict[str, Any]) -> dict[str, Any]:
        """Append a complete ('X') event as Kineto writes it and return it."""
        ev = {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts,
              "dur": dur, "args": args}
        self.events.append(ev)
        return ev

    def _ext(self) -> int:
        self._next_ext += 1
        return self._next_ext

    def op(
        self,
        name: str,
        ts: float,
        dur: float,
        *,
        tid: int = TID,
        cat: str = "cpu_op",
        input_dims: Any = None,
        stack: str | None = None,
        input_types: list[str] | None = None,
        concrete: list[str] | None = None,
        strides: Any = None,
    ) -> dict[str, Any]:
        args: dict[str, Any] = {"External id": self._ext()}
        if input_dims is not None:
            args["Input Dims"] = input_dims
        if input_types is not None:
            args["Input type"] = input_types
        if concrete is not None:
            args["Concrete Inputs"] = concrete
        if strides is not None:
            args["Input Strides"] = strides
        if stack is not None:
            args["Call stack"] = stack
        return self._complete(cat, name, PID, tid, ts, dur, args)

    def annotation(self, name: str, ts: float, dur: float, *, tid: int = TID) -> dict[str, Any]:
        return self.op(name, ts, dur, tid=tid, cat="user_annotation")

    @contextlib.contextmanager
    def step(self, n: int, ts: float, dur: float) -> Iterator[dict[str, Any]]:
        yield self.annotation(f"ProfilerStep#{n}", ts, dur)

    def runtime(
        self,
        name: str,
        ts: float,
        dur: float,
        *,
        owner: dict[str, Any] | None = None,
        tid: int = TID,
        cat: str = "cuda_runtime",
    ) -> dict[str, Any]:
        corr = self._next_corr
        self._next_corr += 1
        args: dict[str, Any] = {"correlation": corr, "cbid": 211}
        if owner is not None:
            args["External id"] = owner["args"]["External id"]
        return self._complete(cat, name, PID, tid, ts, dur, args)

    def device_op(
        self,
        runtime: dict[str, Any] | None,
        name: str,
        ts: float,
        dur: float,
        *,
        cat: str = "kernel",
        stream: int = 7,
        device: int = 0,
        **extra: Any,
    ) -> dict[str, Any]:
        args: dict[str, Any] = {"device": device, "stream": stream}
        if runtime is not None:
            args["correlation"] = runtime["args"]["correlation"]
            if "External id" in runtime["args"]:
                args["External id"] = runtime["args"]["External id"]
        args.update(extra)
        return self._complete(cat, name, device, stream, ts, dur, args)

    def launch(
        self,
        owner: dict[str, Any] | None,
        api: str,
        ts: float,
        dur: float,
        *,
        kernel: str,
        k_ts: float,
        k_dur: float,
        cat: str = "kernel",
        stream: int = 7,
        **extra: Any,
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """A runtime call and the device op it launched."""
        rt = self.runtime(api, ts, dur, owner=owner)
        dev = self.device_op(rt, kernel, k_ts, k_dur, cat=cat, stream=stream, **extra)
        return rt, dev

    def small_launches(self, n: int, period: float, start: float = 5) -> None:
        """``n`` operators ``period`` µs apart, each launching one 2 µs kernel with a 6 µs
        call: a launch-bound stretch (the GPU idles between kernels, waiting for launches)."""
        for i in range(n):
            t = start + i * period
            o = self.op("aten::add", t, 8)
            self.launch(o, "cudaLaunchKernel", t + 1, 6, kernel="void kernel_small", k_ts=t + 8,
                        k_dur=2)

    def memory(self, ts: float, nbytes: int, *, device_type: int = 1, total: int = 0) -> None:
        self.events.append(
            {
                "ph": "i",
                "cat": "cpu_instant_event",
                "name": "[memory]",
                "pid": PID,
                "tid": TID,
                "ts": ts,
                "s": "t",
                "args": {
                    "Device Type": device_type,
                    "Device Id": 0,
                    "Bytes": nbytes,
                    "Total Allocated": total,
                    "Total Reserved": total,
                    "Addr": 1,
                },
            }
        )

    def document(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"schemaVersion": 1, "deviceProperties": self.device_properties}
        if self.distributed is not None:
            doc["distributedInfo"] = self.distributed
        doc["traceEvents"] = self.events
        return doc

    def write(
        self,
        directory: Path,
        name: str = "worker0.1.pt.trace.json.gz",
        *,
        kineto_layout: bool = True,
    ) -> Path:
        """Write as Kineto does (one event per '  {' block) or as compact JSON."""
        path = Path(directory) / name
        doc = self.document()
        if kineto_layout:
            head = {k: v for k, v in doc.items() if k != "traceEvents"}
            data = kineto_text(doc["traceEvents"], head)
        else:
            data = json.dumps(doc).encode()
        path.write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
        return path

    def load(self, directory: Path, **kwargs: Any) -> Trace:
        return stepscope.load(str(self.write(directory, **kwargs)), cache=False)
