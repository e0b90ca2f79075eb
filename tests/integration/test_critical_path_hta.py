"""The critical path equals HTA 0.5.0's on HTA's own alexnet trace.

Reference figures recorded with HolisticTraceAnalysis==0.5.0 (pandas 2.2.3) in a venv
outside the repository, running HTA's own example (examples/experimental/
critical_path_analysis.ipynb): ``critical_path_analysis(rank=0, annotation=
"[param|pytorch.model.alex_net|0|0|0|measure|forward]", instance_id=1)``, then
``get_critical_path_breakdown()`` and ``summary()``:
length (sum of path edge weights) 35834 us; cpu_bound 89.417871 %, gpu_compute_bound
10.358877 %, gpu_kernel_kernel_overhead 0.139532 %, gpu_kernel_launch_overhead 0.083719 %
(cpu 32042 us, gpu compute 3712 us, kernel-kernel 50 us, launch 30 us).
"""

from __future__ import annotations

import pytest
from tests.conftest import shared_trace

from stepscope.analysis.events.links import Links
from stepscope.analysis.graph.critical import critical_path, shares
from stepscope.analysis.graph.window import find
from stepscope.formats.load import load_trace

TRACE = "hta/critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz"
ANNOTATION = "[param|pytorch.model.alex_net|0|0|0|measure|forward]"
HTA_LENGTH_US = 35834
HTA_US = {"cpu_bound": 32042, "gpu_compute_bound": 3712, "gpu_kernel_kernel_overhead": 50,
          "gpu_kernel_launch_overhead": 30}
HTA_PCT = {"cpu_bound": 89.417871, "gpu_compute_bound": 10.358877,
           "gpu_kernel_kernel_overhead": 0.139532, "gpu_kernel_launch_overhead": 0.083719}


@pytest.fixture(scope="module")
def result():  # type: ignore[no-untyped-def]
    trace = load_trace(str(shared_trace(TRACE)))
    return critical_path(trace, Links(trace), find(trace, f"{ANNOTATION}#1"), mode="hta")


def test_length_equals_hta(result) -> None:  # type: ignore[no-untyped-def]
    assert result.length_ns == HTA_LENGTH_US * 1000


def test_breakdown_equals_hta(result) -> None:  # type: ignore[no-untyped-def]
    by = {k: v / 1000 for k, v in result.by_category_ns.items()}
    # HTA's cpu_bound is every host edge: our cpu, sync and data_loading together
    assert by["cpu"] + by["sync"] + by["data_loading"] == HTA_US["cpu_bound"]
    assert by["gpu_compute"] == HTA_US["gpu_compute_bound"]
    assert by["kernel_to_kernel"] == HTA_US["gpu_kernel_kernel_overhead"]
    assert by["launch_overhead"] == HTA_US["gpu_kernel_launch_overhead"]
    assert by["communication"] == 0
    pct = shares(result.by_category_ns)
    assert pct["cpu"] + pct["sync"] + pct["data_loading"] == pytest.approx(
        HTA_PCT["cpu_bound"], abs=1e-5)
    assert pct["gpu_compute"] == pytest.approx(HTA_PCT["gpu_compute_bound"], abs=1e-5)
    assert sum(pct.values()) == pytest.approx(100.0)


def test_window_instances_count_from_zero() -> None:
    trace = load_trace(str(shared_trace(TRACE)))
    first = find(trace, f"{ANNOTATION}#0")
    second = find(trace, f"{ANNOTATION}#1")
    assert first.start < second.start
    assert second.end - second.start == 36356 * 1000
