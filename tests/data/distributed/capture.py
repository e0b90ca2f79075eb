"""Capture the distributed test runs on CPU with gloo (torch 2.13 CPU).

``python tests/data/distributed/capture.py KIND OUT PORT`` writes one Kineto trace per rank
(``rank{N}.*.pt.trace.json``, gzipped afterwards) into OUT:

- ``moe_skew``: 4 ranks, an MoE layer whose token dispatch is an ``all_to_all_single`` with
  uneven splits: every rank sends 4x as many tokens (rows of 256 float32) to rank 3 as to
  any other rank (the router sends most tokens to rank 3's expert); rank 3 then computes on
  all those tokens, and the combine all-to-all sends them back.
- ``moe_balanced``: the same layer with equal splits.
- ``fsdp``: 4 ranks, FSDP2 (``fully_shard`` on a CPU device mesh: FSDP1 refuses CPU), one
  unit per Linear layer plus the root, training an 8-layer MLP.
- ``tp_dp``: 4 ranks in a 2x2 mesh: tensor parallelism over {0,1} and {2,3} (an all-reduce
  of the row-parallel layer's output), data parallelism over {0,2} and {1,3} (an all-reduce
  of the gradients); two process groups beside the default one.
"""

from __future__ import annotations

import os
import sys

ROW = 256  # features per token: a row is 256 float32 = 1 KiB
BASE_TOKENS = 64  # tokens a rank sends to each non-hot rank per call
HOT, SKEW = 3, 4


def _splits(world: int, skewed: bool) -> list[int]:
    return [BASE_TOKENS * (SKEW if skewed and r == HOT else 1) for r in range(world)]


def _moe(rank: int, world: int, skewed: bool, prof: object) -> None:
    import torch
    import torch.distributed as dist

    expert = torch.nn.Linear(ROW, ROW)
    send = _splits(world, skewed)
    # what this rank receives: every rank sends it send[rank] rows
    recv = [send[rank]] * world
    for _ in range(4):
        x = torch.randn(sum(send), ROW)
        gate = torch.softmax(x @ torch.randn(ROW, world), dim=-1)  # the router
        del gate
        out = torch.empty(sum(recv), ROW)
        dist.all_to_all_single(out, x, output_split_sizes=recv, input_split_sizes=send)
        y = torch.relu(expert(out))
        for _ in range(3):  # the expert's work grows with its tokens
            y = torch.tanh(expert(y))
        back = torch.empty(sum(send), ROW)
        dist.all_to_all_single(back, y.detach(), output_split_sizes=send,
                               input_split_sizes=recv)
        prof.step()  # type: ignore[attr-defined]


def _fsdp(rank: int, world: int, prof: object) -> None:
    import torch
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    mesh = init_device_mesh("cpu", (world,))
    model = torch.nn.Sequential(*[torch.nn.Linear(512, 512) for _ in range(8)])
    for layer in model:  # one FSDP unit per layer, plus the root
        fully_shard(layer, mesh=mesh)
    fully_shard(model, mesh=mesh)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(64, 512)
    for _ in range(4):
        loss = torch.relu(model(x)).square().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        prof.step()  # type: ignore[attr-defined]


def _tp_dp(rank: int, prof: object) -> None:
    import torch
    import torch.distributed as dist

    tp_groups = [dist.new_group([0, 1]), dist.new_group([2, 3])]
    dp_groups = [dist.new_group([0, 2]), dist.new_group([1, 3])]
    tp, dp = tp_groups[rank // 2], dp_groups[rank % 2]
    col = torch.nn.Linear(256, 512)  # column-parallel shard: half the hidden units
    row = torch.nn.Linear(512, 256, bias=False)  # row-parallel shard
    params = list(col.parameters()) + list(row.parameters())
    x = torch.randn(64, 256)
    for _ in range(4):
        h = row(torch.relu(col(x)))
        dist.all_reduce(h, group=tp)  # TP: sum the partial outputs
        loss = h.square().mean()
        loss.backward()
        for p in params:  # DP: average the gradients over the replicas
            assert p.grad is not None
            dist.all_reduce(p.grad, group=dp)
            p.grad = None
        prof.step()  # type: ignore[attr-defined]


def _worker(rank: int, world: int, kind: str, out: str, port: str) -> None:
    import torch
    import torch.distributed as dist

    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = port
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(rank)
    prof = torch.profiler.profile(
        activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True,
        schedule=torch.profiler.schedule(wait=0, warmup=1, active=3),
        on_trace_ready=torch.profiler.tensorboard_trace_handler(out, worker_name=f"rank{rank}"),
    )
    with prof:
        if kind.startswith("moe"):
            _moe(rank, world, kind == "moe_skew", prof)
        elif kind == "fsdp":
            _fsdp(rank, world, prof)
        else:
            _tp_dp(rank, prof)
    dist.barrier()
    dist.destroy_process_group()


def main() -> None:
    import torch.multiprocessing as mp

    kind, out, port = sys.argv[1], sys.argv[2], sys.argv[3]
    mp.spawn(_worker, args=(4, kind, out, port), nprocs=4)


if __name__ == "__main__":
    main()
