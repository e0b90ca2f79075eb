"""Issue 21 item 1: which operator launched a kernel (External id checked, else time nesting)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from tests.builders import TraceBuilder

from stepscope.analysis.events.links import Links
from stepscope.analysis.events.optree import OpTree
from stepscope.analysis.suite import run_analyses
from stepscope.analysis.trace.kernel_ops import NO_OPERATOR, kernels_by_operator
from stepscope.report.build import build_report

CONV = "sm86_xmma_fprop_implicit_gemm_tf32f32_tf32f32_f32_nhwckrsc_nhwc_kernel"
ADD = "vectorized_elementwise_kernel<4, CUDAFunctorOnSelf_add<float>>"


def _self_id(rt: dict[str, Any]) -> None:
    """PyTorch 2.0-2.1: the runtime call's External id is its own correlation id."""
    rt["args"]["External id"] = rt["args"]["correlation"]


def _conv_step(b: TraceBuilder, *, self_ids: bool) -> None:
    """conv2d > convolution > cudnn_convolution launches CONV; a finished sibling
    (result_type) starts just before; add_ launches ADD; one launch sits in the step only."""
    with b.step(1, 0, 1_000):
        conv = b.op("aten::conv2d", 10, 200)
        b.op("aten::convolution", 12, 196)
        b.op("aten::result_type", 14, 2)
        cud = b.op("aten::cudnn_convolution", 20, 150)
        b.op("aten::empty", 22, 3)  # finished sibling that starts after the others
        rt, _ = b.launch(cud, "cudaLaunchKernel", 30, 5, kernel=CONV, k_ts=40, k_dur=300)
        add = b.op("aten::add_", 300, 20)
        rt2, _ = b.launch(add, "cudaLaunchKernel", 305, 5, kernel=ADD, k_ts=345, k_dur=10)
        rt3, _ = b.launch(None, "cudaLaunchKernel", 500, 5, kernel=ADD, k_ts=505, k_dur=10)
        if self_ids:
            for r in (rt, rt2, rt3):
                _self_id(r)
        assert conv  # conv2d encloses everything above except add_


def _owners(trace: Any) -> dict[str, str]:
    rows = kernels_by_operator(trace, OpTree(trace, Links(trace)))
    out: dict[str, str] = {}
    for r in rows:
        out.setdefault(r.kernel, r.operator)
    return out


def test_self_id_trace_ties_kernels_by_time_nesting(tmp_path: Path) -> None:
    b = TraceBuilder()
    _conv_step(b, self_ids=True)
    trace = b.load(tmp_path)
    links = Links(trace)
    at = links.attribution
    assert at.self_ids and at.method == "time nesting"
    assert (at.calls, at.by_external_id, at.by_nesting, at.unowned) == (3, 0, 2, 1)
    rows = kernels_by_operator(trace, OpTree(trace, links))
    by = {(r.kernel, r.operator): r.calls for r in rows}
    # the innermost operator, not the finished siblings nor conv2d; the launch inside the
    # ProfilerStep annotation only is not charged to the step
    assert by == {(CONV, "aten::cudnn_convolution"): 1, (ADD, "aten::add_"): 1,
                  (ADD, NO_OPERATOR): 1}
    data = build_report(trace).to_json()
    note = [n for n in data["notes"] if n.startswith("launches tied to operators")]
    assert note and "2 by time nesting" in note[0] and "own correlation id" in note[0]
    ops = {o["name"]: o for o in data["operators"]}
    assert ops["aten::cudnn_convolution"]["device_self_us"] == 300.0
    assert ops["aten::conv2d"]["device_total_us"] == 300.0


def test_self_id_coincidence_with_an_operator_id_is_not_a_link(tmp_path: Path) -> None:
    """A self id that happens to equal an operator's External id (result_type) is no link."""
    b = TraceBuilder()
    _conv_step(b, self_ids=True)
    ev = b.events
    rt = next(e for e in ev if e.get("cat") == "cuda_runtime")
    result_type = next(e for e in ev if e["name"] == "aten::result_type")
    result_type["args"]["External id"] = rt["args"]["correlation"]
    trace = b.load(tmp_path)
    assert _owners(trace)[CONV] == "aten::cudnn_convolution"


def test_sound_external_ids_are_followed(tmp_path: Path) -> None:
    b = TraceBuilder()
    _conv_step(b, self_ids=False)
    trace = b.load(tmp_path)
    at = Links(trace).attribution
    assert not at.self_ids and (at.by_external_id, at.by_nesting, at.rejected) == (2, 0, 0)
    assert at.method == "external id"
    assert _owners(trace)[CONV] == "aten::cudnn_convolution"
    notes = build_report(trace).to_json()["notes"]
    assert not [n for n in notes if n.startswith("launches tied")]  # nothing to say


def test_external_id_of_an_operator_that_does_not_enclose_is_rejected(tmp_path: Path) -> None:
    """Per event: an External id naming a range that ended before the call is not its
    launcher; the enclosing operator is."""
    b = TraceBuilder()
    with b.step(1, 0, 1_000):
        early = b.op("aten::result_type", 5, 2)
        conv = b.op("aten::cudnn_convolution", 20, 150)
        b.launch(conv, "cudaLaunchKernel", 30, 5, kernel=ADD, k_ts=40, k_dur=10)
        b.launch(early, "cudaLaunchKernel", 60, 5, kernel=CONV, k_ts=70, k_dur=300)
    trace = b.load(tmp_path)
    at = Links(trace).attribution
    assert (at.by_external_id, at.by_nesting, at.rejected) == (1, 1, 1)
    assert at.method == "external id and time nesting"
    assert _owners(trace)[CONV] == "aten::cudnn_convolution"
    note = [n for n in build_report(trace).to_json()["notes"] if n.startswith("launches")]
    assert note and "1 External ids named a range that does not enclose" in note[0]


def test_other_thread_and_deep_nesting(tmp_path: Path) -> None:
    """Operators on another thread never enclose; a deep chain of finished children is
    climbed level by level."""
    b = TraceBuilder()
    with b.step(1, 0, 10_000):
        outer = b.op("aten::linear", 10, 5_000)
        b.op("aten::addmm", 10, 4_000, tid=99)  # other thread, same time
        ts = 20.0
        for depth in range(40):  # a ladder of finished nested ops before the launch
            b.op(f"aten::op{depth}", ts, 100 - depth)
            ts += 1
        rt, _ = b.launch(outer, "cudaLaunchKernel", 200, 5, kernel=CONV, k_ts=300, k_dur=10)
        _self_id(rt)
        rt2, _ = b.launch(outer, "cudaLaunchKernel", 210, 5, kernel=ADD, k_ts=320, k_dur=10)
        _self_id(rt2)
    trace = b.load(tmp_path)
    owner = Links(trace).runtime_host
    names = [trace.name(int(trace.host.name[o])) for o in owner[owner >= 0]]
    assert names == ["aten::linear", "aten::linear"]
    a = run_analyses(trace)
    assert int(np.sum(a.links.runtime_host >= 0)) == 2
