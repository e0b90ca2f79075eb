"""All-to-all from NCCL's record_param_comms args; FSDP rule silence; formulas."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from tests.builders import TraceBuilder
from tests.distributed_builders import write_run

from stepscope.advice.rules.distributed import fsdp_prefetch
from stepscope.analysis.distributed.all_to_all import rank_all_to_all, reduce_all_to_all
from stepscope.analysis.distributed.fsdp import Fsdp, FsdpUnit
from stepscope.analysis.distributed.rank import rank_summary
from stepscope.analysis.distributed.run import analyse_run
from stepscope.formats import load_trace


def _nccl_rank(tmp_path: Path, rank: int, splits_in: list[int], splits_out: list[int],
               group: list[int] | None, world: int = 4, rows: int | None = None) -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    b = TraceBuilder()
    b.distributed = {"backend": "nccl", "rank": rank, "world_size": world}
    with b.step(1, 1000.0, 5000.0):
        ev = b.op("record_param_comms", 1100.0, 50.0)
        ev["args"].update({
            "Collective name": "all_to_allv", "dtype": "BFloat16",
            "In msg nelems": (rows or sum(splits_in)) * 128,
            "Out msg nelems": (rows or sum(splits_out)) * 128,
            "Group size": len(splits_in) or world, "Process Group Name": "3",
            "In split size": str(splits_in), "Out split size": str(splits_out),
        })
        if group is not None:
            ev["args"]["Process Group Ranks"] = str(group)
    return b.write(tmp_path, f"rank{rank}.pt.trace.json")


def test_nccl_split_sizes_and_group_ranks(tmp_path: Path) -> None:
    # an expert-parallel group of global ranks 1 and 3: 10 rows to 1, 30 rows to 3
    p = _nccl_rank(tmp_path, 1, [10, 30], [10, 5], [1, 3])
    a = rank_all_to_all(load_trace(str(p), use_cache=False))
    assert a is not None and a.calls == 1 and a.unmapped == 0
    row = 128 * 2  # 128 bf16 elements per row
    assert a.peers.tolist() == [1, 3]
    assert a.sent.tolist() == [10 * row, 30 * row]
    assert a.received.tolist() == [10 * row, 5 * row]


def test_even_split_and_unknown_group(tmp_path: Path) -> None:
    # empty splits: an even split over the group; a 2-rank group without its ranks in a
    # 4-rank world cannot be placed in the matrix
    p = _nccl_rank(tmp_path, 0, [], [], None, world=2, rows=12)
    even = rank_all_to_all(load_trace(str(p), use_cache=False))
    assert even is not None and even.peers.tolist() == [0, 1]
    assert even.sent.tolist() == even.received.tolist() == [6 * 256, 6 * 256]
    bad = _nccl_rank(tmp_path / "bad", 0, [4, 4], [4, 4], [0, 1], world=2)
    text = bad.read_text().replace('"In split size": "[4, 4]"', '"In split size": "[4, x]"')
    bad.write_text(text)
    broken = rank_all_to_all(load_trace(str(bad), use_cache=False))
    assert broken is not None and broken.unmapped == broken.calls == 1  # not an even split
    q = _nccl_rank(tmp_path, 2, [4, 4], [4, 4], None, world=4)
    a = rank_all_to_all(load_trace(str(q), use_cache=False))
    assert a is not None and a.unmapped == 1 and len(a.peers) == 0


def test_run_matrix_places_group_rows(tmp_path: Path) -> None:
    paths = [_nccl_rank(tmp_path, r, [10, 30], [10 if r == 1 else 30, 30], [1, 3])
             if r in (1, 3) else _nccl_rank(tmp_path, r, [8, 8], [8, 8], [0, 2])
             for r in range(4)]
    ranked = [(r, rank_summary(load_trace(str(p), use_cache=False)))
              for r, p in enumerate(paths)]
    a = reduce_all_to_all(ranked)
    assert a is not None
    row = 256
    assert a.matrix[1].tolist() == [0, 10 * row, 0, 30 * row]
    assert a.matrix[0].tolist() == [8 * row, 0, 8 * row, 0]
    assert a.received.tolist() == [16 * row, 20 * row, 16 * row, 60 * row]
    assert a.hot_ranks == (3,)
    assert a.imbalance == max(a.received) / np.mean(a.received)


def _gloo_rank(tmp_path: Path, name: str, dims: object, concrete: list[str] | None,
               types: list[str], world: int = 2) -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    b = TraceBuilder()
    b.distributed = {"backend": "gloo", "rank": 0, "world_size": world}
    with b.step(1, 1000.0, 5000.0):
        b.op(name, 1100.0, 50.0, input_dims=dims, input_types=types, concrete=concrete)
    return b.write(tmp_path, "rank0.pt.trace.json")


def test_c10d_tensor_list_and_malformed_inputs(tmp_path: Path) -> None:
    # all_to_all(outputs[], inputs[]): one tensor per peer, 3 and 5 rows of 8 float64
    p = _gloo_rank(tmp_path, "c10d::alltoall_", [[[2, 8], [4, 8]], [[3, 8], [5, 8]]], None,
                   ["TensorList", "TensorList"])
    a = rank_all_to_all(load_trace(str(p), use_cache=False))
    # torch writes "TensorList" for a list argument: no element type, the call is not sized
    assert a is not None and a.calls == a.unmapped == 1 and len(a.peers) == 0
    q = _gloo_rank(tmp_path / "q", "c10d::alltoall_", [[[2, 8], [4, 8]], [[3, 8], [5, 8]]],
                   None, ["double", "double"])
    b = rank_all_to_all(load_trace(str(q), use_cache=False))
    assert b is not None and b.sent.tolist() == [3 * 64, 5 * 64]
    assert b.received.tolist() == [2 * 64, 4 * 64]
    # negative or non-integer splits, splits that do not divide the rows: unmapped, no error
    for k, splits in enumerate(("[-1, 5]", "[1.5, 2]", "[3, 3]", "[[[[[[]]]]]]", "nope")):
        r = _gloo_rank(tmp_path / f"bad{k}", "c10d::alltoall_base_", [[4, 8], [4, 8], []],
                       ["", "", "", splits, splits, "False", "-1"], ["float", "float", ""])
        c = rank_all_to_all(load_trace(str(r), use_cache=False))
        assert c is None or c.unmapped == c.calls == 1, splits


def test_no_matrix_above_the_rank_cap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from stepscope.analysis.distributed import all_to_all

    paths = [_nccl_rank(tmp_path, r, [1, 1, 1, 3], [3 if r == 3 else 1] * 4, None)
             for r in range(4)]
    ranked = [(r, rank_summary(load_trace(str(p), use_cache=False)))
              for r, p in enumerate(paths)]
    full = reduce_all_to_all(ranked)
    monkeypatch.setattr(all_to_all, "MAX_MATRIX_RANKS", 3)
    capped = reduce_all_to_all(ranked)
    assert full is not None and capped is not None and capped.matrix.shape == (0, 0)
    assert capped.sent.tolist() == full.sent.tolist() == full.matrix.sum(axis=1).tolist()
    assert capped.received.tolist() == full.received.tolist() == [4 * 256] * 3 + [12 * 256]
    assert capped.hot_ranks == full.hot_ranks == (3,)


def test_fsdp_rule_silent_when_all_gathers_are_hidden(tmp_path: Path) -> None:
    write_run(tmp_path, [1000.0, 1000.0])
    ranked = [(r, rank_summary(load_trace(str(tmp_path / f"rank{r}.pt.trace.json"),
                                          use_cache=False))) for r in range(2)]
    dist = analyse_run(ranked)
    assert dist.fsdp is None and fsdp_prefetch.check_run(dist) is None
    hidden = Fsdp("FSDP1", 2, (FsdpUnit("", "all_gather", 4, 1e6, 400_000.0, 10_000.0),))
    assert fsdp_prefetch.check_run(dataclasses.replace(dist, fsdp=hidden)) is None
    units = (FsdpUnit("", "all_gather", 4, 1e6, 800_000.0, 700_000.0),)
    # enough computation to hide the exposed all-gather: prefetch is the fix
    exposed = Fsdp("FSDP1", 2, units, computation_ns=2_000_000.0)
    f = fsdp_prefetch.check_run(dataclasses.replace(dist, fsdp=exposed))
    assert f is not None and f.fix.startswith("Prefetch")
    assert "forward_prefetch=True" in f.fix and "limit_all_gathers" in f.fix
    assert f.saving_us == 700_000.0 / 1000 / 2  # exposed per step (2 steps)
    assert exposed.overlap_pct("all_gather") == 12.5
    # less computation than exposed all-gather: fewer bytes first
    bound = Fsdp("FSDP1", 2, units, computation_ns=100_000.0)
    g = fsdp_prefetch.check_run(dataclasses.replace(dist, fsdp=bound))
    assert g is not None and g.fix.startswith("Communication-bound")
    assert "SHARD_GRAD_OP" in g.fix and "forward_prefetch=True" in g.fix


def test_an_ops_unit_is_the_innermost_unit_range_still_open(tmp_path: Path) -> None:
    """Unit ranges nest on a thread: an op belongs to the innermost one around it, not to a
    later-starting sibling that already ended, and to none outside every unit range."""
    from stepscope.analysis.distributed.fsdp import _is_fsdp_op, _names_unit, _units

    b = TraceBuilder()
    with b.step(1, 0, 1000):
        b.op("FSDP::all_gather (outer)", 10, 500)
        b.op("FSDP::all_gather (inner)", 20, 50)
        b.op("c10d::_allgather_base_", 30, 10)  # in inner
        b.op("c10d::_allgather_base_", 100, 10)  # inner ended: outer
        b.op("c10d::_allgather_base_", 700, 10)  # in no unit
    t = b.load(tmp_path)
    h = t.host
    ann = np.flatnonzero(t.string_ids(_names_unit)[h.name] & (h.name >= 0))
    ops = np.flatnonzero(t.string_ids(_is_fsdp_op)[h.name] & (h.name >= 0))
    ops = ops[np.argsort(h.ts[ops], kind="stable")]
    assert _units(t, ann, ops) == ["inner", "outer", ""]
