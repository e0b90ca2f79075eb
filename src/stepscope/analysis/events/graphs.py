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
import numpy.typing as npt

from stepscope.analysis.events.links import Links, is_graph_launch
from stepscope.model.trace import Trace


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
    operators: tuple[tuple[str, int], ...] = ()  # (operator that replayed graphs, launches)

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
    if links is None:
        links = Links(trace)
    dev_rt = links.device_runtime
    ok = dev_rt >= 0
    from_graph = np.zeros(len(dev_rt), dtype=bool)
    from_graph[ok] = launch[dev_rt[ok]]
    n_launch = int(launch.sum())
    return Graphs(
        operators=_launching_operators(trace, links, np.flatnonzero(launch)),
        graph_launches=n_launch,
        graph_kernels=int(from_graph.sum()),
        capture_calls=int(trace.string_ids(_is_begin_capture)[rt.name].sum())
        or int(capture.sum()),
        capture_only=bool(capture.any()) and n_launch == 0,
    )


def _launching_operators(trace: Trace, links: Links,
                         launches: npt.NDArray[np.int64]) -> tuple[tuple[str, int], ...]:
    """Operators that replayed graphs, most launches first (links tie them, see above)."""
    if len(launches) == 0:
        return ()
    owner = links.runtime_host[launches]
    named = owner[owner >= 0]
    if len(named) == 0:
        return ()
    host = trace.host
    ids, counts = np.unique(host.name[named], return_counts=True)
    order = np.argsort(-counts, kind="stable")[:5]
    return tuple((trace.name(int(ids[i])), int(counts[i])) for i in order)
