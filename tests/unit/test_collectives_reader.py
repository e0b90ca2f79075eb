"""The Collectives table: args as Kineto writes them, and fuzzed args never crash the reader."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.builders import TraceBuilder

from stepscope.errors import StepscopeError
from stepscope.formats.kineto.comms import normalise_collective


def test_gloo_range_sizes_from_input_dims(tmp_path: Path) -> None:
    b = TraceBuilder()
    b.op("gloo:all_reduce", 100, 50, cat="user_annotation", input_dims=[[9610]])
    b.events[-1]["args"]["Input type"] = ["float"]
    b.op("c10d::allreduce_", 90, 5, input_dims=[[[9610]], [], []])
    b.op("aten::mm", 10, 5)
    t = b.load(tmp_path)
    c = t.collectives
    assert len(c) == 1
    assert t.name(int(c.collective[0])) == "allreduce" and int(c.in_nelems[0]) == 9610
    assert t.name(int(c.dtype[0])) == "float" and int(c.dur[0]) == 50_000


def test_nccl_args_on_kernels_and_host(tmp_path: Path) -> None:
    b = TraceBuilder()
    args = {"Collective name": "_allgather_base", "In msg nelems": 10, "Out msg nelems": 80,
            "Group size": 8, "dtype": "BFloat16", "Process Group Name": 3}
    b.op("record_param_comms", 5, 2).get("args", {}).update(args)
    b.launch(None, "cudaLaunchKernel", 6, 1, kernel="ncclDevKernel_AllGather_RING_LL",
             k_ts=10, k_dur=4, **args)
    t = b.load(tmp_path)
    c = t.collectives
    assert list(c.on_device) == [0, 1]
    assert {t.name(int(x)) for x in c.collective} == {"allgather"}
    assert list(c.out_nelems) == [80, 80] and list(c.group_size) == [8, 8]
    assert {t.name(int(x)) for x in c.pg} == {"3"}


def test_normalise() -> None:
    assert normalise_collective("all_reduce") == "allreduce"
    assert normalise_collective("AllReduce_coalesced") == "allreduce"
    assert normalise_collective("_reduce_scatter_base") == "reducescatter"


_value = st.one_of(st.none(), st.integers(-(2**70), 2**70), st.text(max_size=8),
                   st.floats(allow_nan=True), st.lists(st.integers(-5, 5), max_size=3),
                   st.lists(st.lists(st.integers(-(2**40), 2**40), max_size=3), max_size=2))


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(args=st.dictionaries(
    st.sampled_from(["Collective name", "In msg nelems", "Out msg nelems", "Group size",
                     "dtype", "Process Group Name", "Input Dims", "Input type"]),
    _value, max_size=8))
def test_fuzzed_collective_args(tmp_path: Path, args: dict[str, Any]) -> None:
    b = TraceBuilder()
    b.op("gloo:all_reduce", 100, 50, cat="user_annotation")
    b.events[-1]["args"].update(args)
    b.launch(None, "cudaLaunchKernel", 6, 1, kernel="ncclKernel_AllReduce", k_ts=10, k_dur=4,
             **args)
    try:
        t = b.load(tmp_path)
    except StepscopeError:
        return
    assert len(t.collectives) <= 2
