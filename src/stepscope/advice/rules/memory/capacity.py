"""Memory rule: the peak of allocated GPU memory is close to the device's capacity."""

from __future__ import annotations

from stepscope.advice.context import Context
from stepscope.advice.finding import Finding

CODE = ("with torch.autocast('cuda', dtype=torch.bfloat16):\n"
        "    out = torch.utils.checkpoint.checkpoint(block, x, use_reentrant=False)")
# the matmuls already run in 16/8 bits: no mixed precision to suggest
CODE_CHECKPOINT = "out = torch.utils.checkpoint.checkpoint(block, x, use_reentrant=False)"
# inference keeps no activations for a backward pass: the room is in the weights' precision
# and the batch or sequence, and autograd state must not be kept
CODE_INFERENCE = ("model = model.to(torch.bfloat16).eval()   # weights in 16 bits\n"
                  "with torch.inference_mode():              # no autograd state kept\n"
                  "    out = model(x)")
CODE_INFERENCE_LOW = ("with torch.inference_mode():   # no autograd state kept\n"
                      "    out = model(x)")
NEAR_PCT = 85.0  # torch-tb-profiler warned at 90 % of totalGlobalMem
HIGH_PCT = 95.0


def _gib(n: float) -> str:
    return f"{n / (1 << 30):.2f} GiB"


def check(ctx: Context) -> Finding | None:
    m = ctx.a.memory
    if m is None:
        return None
    hits = [d for d in m.devices if d.capacity and not d.cumulative
            and 100.0 * d.peak_allocated / d.capacity >= NEAR_PCT]
    if not hits:
        return None
    if ctx.premises.vllm is not None:
        # vLLM reserves gpu_memory_utilization (0.9 by default) of the GPU for the weights
        # and the KV cache at start and fits its batches into it: a full GPU is its design
        return None
    d = max(hits, key=lambda x: x.peak_allocated / (x.capacity or 1))
    low = ctx.premises.low_precision  # matmuls already in bf16/fp16/fp8
    cap = d.capacity or 1
    pct = 100.0 * d.peak_allocated / cap
    where = f" in step {d.peak_step}" if d.peak_step else ""
    op = f", while {d.peak_operator} ran" if d.peak_operator else ""
    evidence = [f"{d.device}: peak allocated {_gib(d.peak_allocated)} = {pct:.1f} % of "
                f"{_gib(cap)}{where}{op}"]
    if d.peak_reserved > 0:
        evidence.append(f"reserved by the caching allocator up to {_gib(d.peak_reserved)} "
                        f"({100.0 * d.peak_reserved / cap:.1f} %)")
    top = [r for r in d.operators if r.self_allocation_size > 0][:3]
    if top:
        evidence.append("largest allocating operators: " + ", ".join(
            f"{r.name} {_gib(r.self_allocation_size)} in {r.self_allocation_count} allocations"
            for r in top))
    if ctx.premises.inference:  # no activations kept for a backward pass: weights, batch
        evidence.append(ctx.premises.run_line)
        estimate = ("Inference keeps no activations for a backward pass, so the room is in "
                    "the weights and the batch: "
                    + ("" if low else "16-bit weights halve their memory; "))
        fix = ("Make room before a larger input pushes it over: run under "
               "torch.inference_mode() so that no autograd state is kept, "
               + ("" if low else "load the weights in bf16/fp16, ")
               + "quantize them (int8/fp8) if accuracy allows, lower the batch or sequence "
               "length at the peak, and set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True "
               "against fragmentation.")
        code = CODE_INFERENCE_LOW if low else CODE_INFERENCE
        ref = "https://pytorch.org/docs/stable/generated/torch.autograd.grad_mode.inference_mode.html"
    else:
        estimate = (("" if low else "Mixed precision roughly halves activation memory; ")
                    + "activation checkpointing of the largest activation holders trades ~30 % "
                    "more forward compute for most of their activations; halving the "
                    "micro-batch with 2-step accumulation halves activations at equal batch; ")
        fix = ("Make room before the next change pushes it over: "
               + ("" if low else "enable mixed precision (torch.autocast), ")
               + "checkpoint the blocks holding the largest activations "
               "(torch.utils.checkpoint), use a smaller micro-batch with gradient accumulation, "
               "shard optimizer state (ZeroRedundancyOptimizer / FSDP), and set "
               "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True against fragmentation.")
        code = CODE_CHECKPOINT if low else CODE
        ref = "https://pytorch.org/docs/stable/checkpoint.html"
    return Finding(
        id="memory-near-capacity",
        title=f"GPU memory at {pct:.0f} % of capacity: one larger batch or sequence away "
              "from out-of-memory",
        saving_us=0.0, saving_pct=0.0, severity="high" if pct >= HIGH_PCT else "medium",
        estimate=(f"Not a time saving: headroom. {estimate}today's peak is "
                  f"{_gib(d.peak_allocated)}."),
        evidence=tuple(evidence), fix=fix, code=code,
        references=("https://pytorch.org/docs/stable/notes/cuda.html#optimizing-memory-usage-"
                    "with-pytorch-cuda-alloc-conf", ref),
    )
