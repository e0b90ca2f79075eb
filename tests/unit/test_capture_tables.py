"""print_top_tables: three tables on GPU traces, no device columns on CPU-only runs."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from tests.conftest import shared_trace

import stepscope
from stepscope.errors import UsageError

torch = pytest.importorskip("torch")


def _render(source: Any, n: int = 20) -> str:
    out = io.StringIO()
    stepscope.print_top_tables(source, n=n, console=Console(file=out, width=160))
    return out.getvalue()


@pytest.fixture(scope="module")
def cpu_prof() -> Any:
    from torch.profiler import ProfilerActivity, profile

    model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4))
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        for batch in (8, 16):
            model(torch.randn(batch, 64)).sum().backward()
    return prof


def test_cpu_tables_have_no_device_columns(cpu_prof: Any) -> None:
    text = _render(cpu_prof, n=500)  # every row: the order of tiny ops varies run to run
    assert "Top operators by self CPU time" in text
    assert "Top operators by input shape (self CPU time)" in text
    assert "device" not in text.lower() and "cuda" not in text.lower()
    assert "aten::addmm" in text
    # grouped by shape: the two batch sizes are separate rows
    assert "[[64],[8,64],[64,64]" in text.replace(" ", "")
    assert "[[64],[16,64],[64,64]" in text.replace(" ", "")


def test_row_limit_and_sources(cpu_prof: Any, tmp_path: Path) -> None:
    from stepscope.capture.tables import as_trace

    trace = as_trace(cpu_prof)
    path = tmp_path / "t.json"
    stepscope.export_trace(cpu_prof, str(path))
    assert _render(trace, n=3) == _render(str(path), n=3)
    table = _render(trace, n=3).split("Top operators by self CPU time")[1]
    body = table.split("\noperator ", 1)[1].split("\n\n")[0].splitlines()[1:]
    assert len(body) == 3, body  # which operators lead depends on the machine's load


def test_gpu_trace_has_the_device_table() -> None:
    text = _render(str(shared_trace("kineto_resnet50/num_workers_0/"
                                    "worker0.1623143089861.pt.trace.json.gz")), n=5)
    first = text.index("Top operators by self device time")
    assert first < text.index("Top operators by self CPU time")
    assert "self device" in text and "aten::cudnn_convolution" in text
    assert "Top operators by input shape (self device time)" in text


def test_not_a_trace() -> None:
    with pytest.raises(UsageError, match="expected a torch profiler"):
        stepscope.print_top_tables(42)


def test_numbers_in_the_tables(tmp_path: Path) -> None:
    from tests.builders import TraceBuilder

    b = TraceBuilder()
    with b.step(1, 0, 10_000):
        mm = b.op("aten::mm", 10, 3000, input_dims=[[8, 64], [64, 64]])
        b.launch(mm, "cudaLaunchKernel", 20, 10, kernel="sgemm", k_ts=100, k_dur=1500)
        add = b.op("aten::add", 4000, 1000, input_dims=[[8, 64], [8, 64]])
        b.launch(add, "cudaLaunchKernel", 4010, 10, kernel="add_kernel", k_ts=4100, k_dur=500)
    lines = [line.split() for line in _render(b.load(tmp_path)).splitlines()]
    device = lines.index(["Top", "operators", "by", "self", "device", "time"])
    # name, calls, share of self device time, self/total device, self/total CPU; one unit
    # per column, in the header (ms once any value in the column reaches 1 ms)
    header = next(i for i in range(device + 1, len(lines)) if lines[i][:1] == ["operator"])
    assert lines[header] == ["operator", "calls", "(%)", "(ms)", "(ms)", "(ms)", "(ms)"]
    assert lines[header + 1] == ["aten::mm", "1", "75.0", "1.50", "1.50", "2.99", "3.00"]
    assert lines[header + 2] == ["aten::add", "1", "25.0", "0.50", "0.50", "0.99", "1.00"]
