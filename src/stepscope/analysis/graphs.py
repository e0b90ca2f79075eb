"""CUDA/HIP graphs: graph launches, the kernels each starts, and capture-only windows.

A graph launch (cudaGraphLaunch / cuGraphLaunch / hipGraphLaunch) is one runtime call;
every kernel the graph runs carries that call's correlation id, so the usual join ties
the kernels to the launch and, through its external id, to the operator that replayed
the graph (PyTorch 2.x also writes graph ids in the args, which the join does not need).
Launch statistics therefore count one launch per graph replay.

A window that captures graphs (cudaStreamBeginCapture ... EndCapture, or
cudaGraphInstantiate) and never launches one is a capture-only trace: launches inside a
capture are recorded, not executed, so the GPU looks idle although nothing ran yet.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from stepscope.analysis.links import Links
from stepscope.model.trace import Trace

GRAPH_LAUNCH_CALLS = frozenset({"cudaGraphLaunch", "cuGraphLaunch", "hipGraphLaunch",
                                "cudaGraphLaunch_v10000", "cuGraphLaunch_ptsz"})


def is_graph_launch(name: str) -> bool:
    return name in GRAPH_LAUNCH_CALLS


def is_capture_call(name: str) -> bool:
    return ("StreamBeginCapture" in name or "GraphInstantiate" in name
            or "StreamEndCapture" in name)


def _is_begin_capture(name: str) -> bool:
    return "StreamBeginCapture" in name


@dataclass(frozen=True)
class Graphs:
    graph_launches: int  # graph launch calls
    graph_kernels: int  # device ops started by graph launches
    capture_calls: int  # stream capture / instantiate calls
    capture_only: bool  # captures graphs, launches none

    @property
    def kernels_per_graph(self) -> float:
        return self.graph_kernels / self.graph_launches if self.graph_launches else 0.0


def graphs(trace: Trace, links: Links | None = None) -> Graphs | None:
    """None when the trace neither launches nor captures a graph."""
    rt = trace.runtime
    launch = trace.string_ids(is_graph_launch)[rt.name]
    capture = trace.string_ids(is_capture_call)[rt.name]
    if not launch.any() and not capture.any():
        return None
    links = links or Links(trace)
    dev_rt = links.device_runtime
    ok = dev_rt >= 0
    from_graph = np.zeros(len(dev_rt), dtype=bool)
    from_graph[ok] = launch[dev_rt[ok]]
    n_launch = int(launch.sum())
    return Graphs(
        graph_launches=n_launch,
        graph_kernels=int(from_graph.sum()),
        capture_calls=int(trace.string_ids(_is_begin_capture)[rt.name].sum())
        or int(capture.sum()),
        capture_only=bool(capture.any()) and n_launch == 0,
    )
