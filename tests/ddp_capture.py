"""Capture a real multi-rank DDP run on CPU (gloo) for the distributed tests.

``python -m tests.ddp_capture OUT PORT WORLD SLOW_RANK`` writes one Kineto trace per rank
(``rank{N}.*.pt.trace.json``) and ``grad_bytes.txt`` (the model's gradient bytes). The slow
rank does extra matrix multiplications in every step, before its backward all-reduce.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


def _worker(rank: int, world: int, out: str, port: str, slow: int) -> None:
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = port
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(0)
    model = DDP(torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(),
                                    torch.nn.Linear(128, 10)))
    if rank == 0:
        grad = sum(p.numel() * p.element_size() for p in model.parameters())
        Path(out, "grad_bytes.txt").write_text(str(grad))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(32, 64), torch.randint(0, 10, (32,))
    extra = torch.randn(256, 256)
    prof = torch.profiler.profile(
        activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True,
        schedule=torch.profiler.schedule(wait=0, warmup=1, active=3),
        on_trace_ready=torch.profiler.tensorboard_trace_handler(out, worker_name=f"rank{rank}"),
    )
    with prof:
        for _ in range(4):
            loss = torch.nn.functional.cross_entropy(model(x), y)
            if rank == slow:  # the straggler: 40 ms of extra computation per step
                for _ in range(40):
                    extra = torch.tanh(extra @ extra * 1e-3)
            opt.zero_grad()
            loss.backward()
            opt.step()
            prof.step()
    dist.barrier()
    dist.destroy_process_group()


def main() -> None:
    import torch.multiprocessing as mp

    out, port, world, slow = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    mp.spawn(_worker, args=(world, out, port, slow), nprocs=world)


if __name__ == "__main__":
    main()
