"""annotate: named ranges in real torch.profiler traces, NVTX calls, idle no-op."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import stepscope
from stepscope.capture import ranges
from stepscope.capture.ranges import annotate
from stepscope.model.trace import HOST_ANNOTATION

torch = pytest.importorskip("torch")


@pytest.fixture
def fake_nvtx() -> Iterator[list[tuple[str, str | None]]]:
    """Replace the NVTX backend by a recorder: ('push', name) / ('pop', None)."""
    calls: list[tuple[str, str | None]] = []

    def push(name: str, color: str | None) -> None:
        calls.append((name, color))

    def pop() -> None:
        calls.append(("<pop>", None))

    ranges._nvtx, ranges._nvtx_resolved = (push, pop), True
    yield calls
    ranges.reset_nvtx_backend()


def _annotation_names(path: str) -> list[str]:
    trace = stepscope.load(path, cache=False)
    host = trace.host
    mask = host.kind == HOST_ANNOTATION
    return [trace.name(int(i)) for i in host.name[mask]]


def test_ranges_appear_in_the_trace(tmp_path: Path) -> None:
    @annotate("decorated_fn")
    def work(x: Any) -> Any:
        return x @ x

    with stepscope.profile(str(tmp_path), run="r", active=None) as prof:
        for _ in range(2):
            with annotate("data", color="green"):
                x = torch.randn(16, 16)
            work(x)
            prof.step()
    assert prof.last_trace is not None
    names = _annotation_names(prof.last_trace)
    assert names.count("data") == 2
    assert names.count("decorated_fn") == 2
    trace = stepscope.load(prof.last_trace, cache=False)
    # the decorated range holds the matmul it wraps
    h = trace.host
    name_id = {s: i for i, s in enumerate(trace.strings)}
    fn = np.flatnonzero(h.name == name_id["decorated_fn"])
    mm = np.flatnonzero(h.name == name_id["aten::mm"])
    assert len(mm) == 2
    for f, m in zip(fn, mm, strict=True):
        assert h.ts[f] <= h.ts[m] and h.ts[m] + h.dur[m] <= h.ts[f] + h.dur[f]


def test_idle_annotate_records_nothing_and_returns_values() -> None:
    assert not ranges._torch_profiler_recording()

    @annotate("f")
    def f(a: int, *, b: int) -> int:
        return a + b

    assert f(1, b=2) == 3
    assert f.__name__ == "f"
    with annotate("block") as cm:
        assert isinstance(cm, annotate)
    assert ranges._enter("x", None) is ranges._IDLE


def test_nvtx_push_pop_balanced_even_on_error(fake_nvtx: list[tuple[str, str | None]]) -> None:
    with pytest.raises(ValueError), annotate("outer", color=0x00FF00), annotate("inner"):
        raise ValueError("boom")
    assert fake_nvtx == [("outer", str(0x00FF00)), ("inner", None), ("<pop>", None),
                         ("<pop>", None)]


def test_same_instance_reentrant_and_threads(fake_nvtx: list[tuple[str, str | None]]) -> None:
    region = annotate("shared")

    def recurse(n: int) -> None:
        with region:
            if n:
                recurse(n - 1)

    recurse(3)
    threads = [threading.Thread(target=recurse, args=(2,)) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    pushes = sum(1 for name, _ in fake_nvtx if name == "shared")
    pops = sum(1 for name, _ in fake_nvtx if name == "<pop>")
    assert pushes == pops == 4 + 4 * 3


def test_cpu_build_never_touches_torch_cuda_nvtx() -> None:
    if hasattr(torch._C, "_nvtx"):
        pytest.skip("CUDA build: torch.cuda.nvtx is usable here")
    assert ranges._torch_nvtx() is None


def test_without_an_nvtx_tool_the_backend_is_off() -> None:
    pytest.importorskip("nvtx")
    ranges.reset_nvtx_backend()
    ranges._resolve_nvtx()
    # No Nsight Systems attached to the test process: nothing to push to.
    assert ranges._nvtx_resolved and ranges._nvtx is None
