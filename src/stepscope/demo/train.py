"""One profiled training run of the demo workload, in its slow or its fixed variant."""

from __future__ import annotations

import logging
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

from stepscope.capture.native_noise import quiet_native_profiler
from stepscope.capture.profiler import profile
from stepscope.capture.ranges import annotate
from stepscope.capture.throughput import ThroughputMeter
from stepscope.demo.data import DecodeEveryTime, Predecoded, make_samples
from stepscope.demo.model import small_cnn

log = logging.getLogger("stepscope.demo")


@dataclass(frozen=True)
class Variant:
    name: str
    description: str
    num_workers: int
    preprocess_up_front: bool
    log_every: int  # 1: a host-device sync (.item()) every step

    def says(self, device: str) -> str:
        """The description for a run on ``device``: pinned memory only where it applies."""
        return self.description.replace("{pin}", ", pin_memory=True" if device == "cuda" else "")


SLOW = Variant("before", "each sample decoded, resized and augmented in the training process "
               "(num_workers=0); loss and accuracy .item() logged every step",
               num_workers=0, preprocess_up_front=False, log_every=1)
FIXED = Variant("after", "dataset decoded once before training; DataLoader(num_workers=2, "
                "persistent_workers=True{pin}); logging every 50 steps",
                num_workers=2, preprocess_up_front=True, log_every=50)


@dataclass(frozen=True)
class RunResult:
    trace: str
    samples_per_s: float
    steps: int
    batch_size: int
    device: str = "cpu"  # where it trained ("cpu", "cuda")


def train_profiled(variant: Variant, logdir: str, *, steps: int = 8, batch_size: int = 64,
                   wait: int = 1, warmup: int = 1, device: str | None = None,
                   seed: int = 0) -> RunResult:
    """Train ``steps`` steps under ``stepscope.profile``; the last ``steps - wait -
    warmup`` are recorded and timed."""
    if steps <= wait + warmup:
        raise ValueError(f"steps must exceed wait + warmup ({wait + warmup})")
    threads = torch.get_num_threads()
    with quiet_native_profiler():  # also the CUDA build's no-driver warning of the probe
        dev = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
        if dev.type == "cpu":
            # One intra-op thread: as fast for this small model, and immune to OpenMP
            # spin-waits that slow 2-thread CPU runs 20x when other processes compete.
            torch.set_num_threads(1)
        try:
            return _train(variant, logdir, steps=steps, batch_size=batch_size, wait=wait,
                          warmup=warmup, dev=dev, seed=seed)
        finally:
            torch.set_num_threads(threads)


def _train(variant: Variant, logdir: str, *, steps: int, batch_size: int, wait: int,
           warmup: int, dev: torch.device, seed: int) -> RunResult:
    torch.manual_seed(seed)
    encoded, labels = make_samples(steps * batch_size, seed)
    loader = _loader(variant, encoded, labels, batch_size, cuda=dev.type == "cuda", seed=seed)
    model = small_cnn().to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    meter = ThroughputMeter(batch_size, warmup=wait + warmup, label=f"profiled window, "
                            f"{variant.name}")
    running = torch.zeros((), device=dev)
    active = steps - wait - warmup
    with profile(logdir, run=variant.name, wait=wait, warmup=warmup, active=active,
                 repeat=1) as prof:
        meter.start()
        for step, (x, y) in enumerate(loader):
            x = x.to(dev, non_blocking=True)
            y = y.to(dev, non_blocking=True)
            with annotate("forward"):
                out = model(x)
                loss = F.cross_entropy(out, y)
            with annotate("backward"):
                torch.autograd.backward(loss)
            with annotate("optimizer"):
                opt.step()
                opt.zero_grad(set_to_none=True)
            running += loss.detach()
            if (step + 1) % variant.log_every == 0:
                # The slow variant's habit: a host-device synchronisation every step.
                accuracy = (out.argmax(1) == y).float().mean().item()
                log.info("step %d loss %.3f acc %.2f", step + 1,
                         running.item() / variant.log_every, accuracy)
                running.zero_()
            meter.step()
            prof.step()
            if step + 1 >= steps:
                break
    del loader  # shuts persistent workers down now, not at interpreter exit
    if prof.last_trace is None:
        raise RuntimeError("the demo's profiler wrote no trace")
    return RunResult(prof.last_trace, meter.samples_per_s, steps, batch_size, dev.type)


def _loader(variant: Variant, encoded: list[bytes], labels: torch.Tensor, batch_size: int,
            *, cuda: bool, seed: int) -> DataLoader[tuple[torch.Tensor, torch.Tensor]]:
    dataset: Dataset[tuple[torch.Tensor, torch.Tensor]]
    if variant.preprocess_up_front:
        dataset = Predecoded(encoded, labels, seed)  # outside the profiled loop
    else:
        dataset = DecodeEveryTime(encoded, labels, seed)
    workers = variant.num_workers
    return DataLoader(
        dataset, batch_size=batch_size, shuffle=True, drop_last=True,
        num_workers=workers, persistent_workers=workers > 0,
        prefetch_factor=4 if workers > 0 else None,
        pin_memory=cuda and workers > 0,
        generator=torch.Generator().manual_seed(seed),
    )
