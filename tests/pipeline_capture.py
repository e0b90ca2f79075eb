"""Capture a real pipeline-parallel run on CPU (gloo) for the pipeline tests.

The captures in tests/data/distributed/pipeline_*/ were made with it (PIPELINES.md there).

``python -m tests.pipeline_capture OUT PORT STAGES SCHEDULE MICROBATCHES HEAVY [FACTOR [DP]]``
writes one Kineto trace per rank (``rank{N}.*.pt.trace.json``) of a model split into
``STAGES`` stages with ``torch.distributed.pipelining`` (one stage per rank), run with
``SCHEDULE`` (``gpipe``, ``1f1b``; ``interleaved`` or ``zerobubble``: ScheduleInterleaved1F1B
or ScheduleInterleavedZeroBubble with two chunks per rank, virtual stages ``rank`` and
``rank + STAGES``, HEAVY naming a virtual stage) over ``MICROBATCHES`` micro-batches per step. Every
stage holds one block of linear layers, stage ``HEAVY`` holds ``FACTOR`` blocks (default 3;
``HEAVY`` = -1 for balanced stages). ``DP`` > 1 (default 1) runs that many data-parallel
replicas of the pipeline (STAGES × DP ranks, Megatron's layout: stage = rank // DP, pipeline
groups ``[j, j + DP, ...]``, data-parallel groups of one stage's ranks, gradients all-reduced
over them after each step). Seeds are fixed; only timings differ between runs.
"""

from __future__ import annotations

import os
import sys

import torch

WIDTH = 512  # features per layer
LAYERS = 4  # linear layers per block
BATCH = 256  # rows per step (split into micro-batches)


def _block() -> torch.nn.Module:
    layers: list[torch.nn.Module] = []
    for _ in range(LAYERS):
        layers += [torch.nn.Linear(WIDTH, WIDTH), torch.nn.Tanh()]
    return torch.nn.Sequential(*layers)


def _worker(rank: int, world: int, out: str, port: str, schedule: str, micro: int,
            heavy: int, factor: int, dp: int) -> None:
    import torch.distributed as dist
    from torch.distributed.pipelining import (
        PipelineStage,
        Schedule1F1B,
        ScheduleGPipe,
        ScheduleInterleaved1F1B,
        ScheduleInterleavedZeroBubble,
    )

    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = port
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    stages, index = world // dp, rank // dp
    pp_group = dp_group = None
    if dp > 1:  # every rank creates every group, in the same order
        for j in range(dp):
            g = dist.new_group(list(range(j, world, dp)))
            pp_group = g if rank % dp == j else pp_group
        for k in range(stages):
            g = dist.new_group(list(range(k * dp, (k + 1) * dp)))
            dp_group = g if index == k else dp_group
    torch.manual_seed(index)  # replicas of a stage hold the same weights
    cpu = torch.device("cpu")
    sched: ScheduleGPipe | Schedule1F1B | ScheduleInterleaved1F1B | ScheduleInterleavedZeroBubble
    if schedule in ("interleaved", "zerobubble"):  # two chunks per rank: virtual stages rank
        chunks = [torch.nn.Sequential(*[_block() for _ in range(  # and rank + world
            factor if rank + i * world == heavy else 1)]) for i in range(2)]
        multi = ScheduleInterleaved1F1B if schedule == "interleaved" else \
            ScheduleInterleavedZeroBubble
        sched = multi(
            [PipelineStage(c, rank + i * world, 2 * world, cpu) for i, c in enumerate(chunks)],
            n_microbatches=micro, loss_fn=torch.nn.functional.mse_loss)
        stage_mod = torch.nn.Sequential(*chunks)
    else:
        blocks = factor if index == heavy else 1
        stage_mod = torch.nn.Sequential(*[_block() for _ in range(blocks)])
        stage = PipelineStage(stage_mod, index, stages, cpu, group=pp_group)
        cls = ScheduleGPipe if schedule == "gpipe" else Schedule1F1B
        sched = cls(stage, n_microbatches=micro, loss_fn=torch.nn.functional.mse_loss)
    opt = torch.optim.SGD(stage_mod.parameters(), lr=1e-3)
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(BATCH, WIDTH, generator=gen)
    y = torch.randn(BATCH, WIDTH, generator=gen)
    prof = torch.profiler.profile(
        activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True,
        schedule=torch.profiler.schedule(wait=0, warmup=1, active=2),
        on_trace_ready=torch.profiler.tensorboard_trace_handler(out, worker_name=f"rank{rank}"),
    )
    with prof:
        for _ in range(3):
            opt.zero_grad()
            if index == 0:
                sched.step(x)
            elif index == stages - 1:
                sched.step(target=y)
            else:
                sched.step()
            for param in stage_mod.parameters() if dp_group is not None else ():
                dist.all_reduce(param.grad, group=dp_group)
            opt.step()
            prof.step()
    dist.barrier()
    dist.destroy_process_group()


def main() -> None:
    import torch.multiprocessing as mp

    out, port, world = sys.argv[1], sys.argv[2], int(sys.argv[3])
    schedule, micro, heavy = sys.argv[4], int(sys.argv[5]), int(sys.argv[6])
    factor = int(sys.argv[7]) if len(sys.argv) > 7 else 3
    dp = int(sys.argv[8]) if len(sys.argv) > 8 else 1
    mp.spawn(_worker, args=(world * dp, out, port, schedule, micro, heavy, factor, dp),
             nprocs=world * dp)


if __name__ == "__main__":
    main()
