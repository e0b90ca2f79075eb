"""Memory rule: allocated memory grows from step to step (tensors kept alive: a leak)."""

from __future__ import annotations

from itertools import pairwise

from stepscope.advice.context import Context
from stepscope.advice.finding import Finding

MIN_STEPS = 3
MIN_BYTES = 1 << 20


def check(ctx: Context) -> Finding | None:
    m = ctx.a.memory
    if m is None:
        return None
    for d in m.devices:
        starts = [b for _, b in d.step_start_allocated]
        if d.cumulative or len(starts) < MIN_STEPS or d.unfreed_count == 0:
            continue
        growth = [b - a for a, b in pairwise(starts)]
        if min(growth) <= 0 or starts[-1] - starts[0] < MIN_BYTES:
            continue
        per_step = (starts[-1] - starts[0]) / (len(starts) - 1)
        mib = 1 << 20
        evidence = [f"{d.device}: allocated at step start " + " → ".join(
            f"{b / mib:.1f} MiB" for b in starts) + f" (+{per_step / mib:.1f} MiB per step)",
            f"{d.unfreed_count} allocations ({d.unfreed_bytes / mib:.1f} MiB) never freed "
            "in the trace"]
        evidence += [f"never freed: {a.size / mib:.2f} MiB by {a.operator or 'an unknown op'} "
                     f"in step {a.step or '?'}" for a in d.unfreed[:3]]
        return Finding(
            id="memory-growth",
            title=f"Memory grows by {per_step / mib:.1f} MiB every step: tensors are kept alive",
            saving_us=0.0, saving_pct=0.0, severity="high",
            estimate=(f"Not a time saving: at this rate {d.device} gains "
                      f"{per_step * 1000 / (1 << 30):.2f} GiB every 1,000 steps until it runs "
                      "out of memory."),
            evidence=tuple(evidence),
            fix=("Do not keep outputs on the GPU across steps: move results to the host "
                 "(out.cpu()) or drop them once used, clear lists of outputs, run under "
                 "torch.inference_mode() so that no autograd graph is kept, and bound caches "
                 "that grow with the requests." if ctx.premises.inference else
                 "Do not keep graph-attached tensors across steps: log loss.item() or "
                 "loss.detach() instead of loss, clear lists of outputs, and avoid caches "
                 "keyed by tensors."),
            code=("results.append(out.cpu())   # not: results.append(out)"
                  if ctx.premises.inference else
                  "running_loss += loss.item()   # not: losses.append(loss)"),
            references=("https://pytorch.org/docs/stable/notes/faq.html#my-model-reports-"
                        "cuda-runtime-error-2-out-of-memory",),
        )
    return None
