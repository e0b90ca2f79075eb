"""fsdp-exposed-all-gather: FSDP units wait for their parameters' all-gather.

FSDP all-gathers each unit's parameters right before the unit runs unless the next unit's
all-gather is issued early (prefetch). When much all-gather time runs while nothing
computes, prefetching hides it behind the previous unit's computation — but only as much
of it as there is computation to hide it under: when the exposed all-gather exceeds the
step's computation the run is communication-bound, and the fix is fewer all-gather bytes
(no re-gather in backward, lower-precision parameters, sharding within a node) before
prefetching.
"""

from __future__ import annotations

from stepscope.advice.finding import Finding
from stepscope.advice.rules.distributed._run import mean_step_ns, mean_steps
from stepscope.analysis.distributed.fsdp import ALL_GATHER, REDUCE_SCATTER
from stepscope.analysis.distributed.run import Distributed
from stepscope.units import format_us as fmt_us

MIN_EXPOSED_PCT = 5.0  # exposed all-gather per step / step time: as low-comm-overlap's bar

_FSDP1 = ("model = FSDP(model, auto_wrap_policy=policy, forward_prefetch=True,\n"
          "             backward_prefetch=BackwardPrefetch.BACKWARD_PRE, limit_all_gathers=True)")
_FSDP2 = ("layers = list(model.layers)\n"
          "for prev, nxt in zip(layers, layers[1:]):\n"
          "    prev.set_modules_to_forward_prefetch([nxt])\n"
          "    nxt.set_modules_to_backward_prefetch([prev])")


def _exposed_per_step(dist: Distributed) -> float:
    f = dist.fsdp
    return f.total(ALL_GATHER, "exposed_ns") / mean_steps(dist) if f else 0.0


def _computation_per_step(dist: Distributed) -> float:
    """Computation per step (FSDP's definition: CPU hook waits excluded), mean over ranks."""
    return dist.fsdp.computation_ns / mean_steps(dist) if dist.fsdp else 0.0


def fires(dist: Distributed) -> bool:
    step = mean_step_ns(dist)
    return dist.fsdp is not None and step > 0 and \
        100.0 * _exposed_per_step(dist) / step >= MIN_EXPOSED_PCT


def check_run(dist: Distributed) -> Finding | None:
    f = dist.fsdp
    if f is None or not fires(dist):
        return None
    step = mean_step_ns(dist)
    steps = mean_steps(dist)
    exposed = _exposed_per_step(dist)
    worst = sorted((u for u in f.units if u.kind == ALL_GATHER and u.unit),
                   key=lambda u: -u.exposed_ns)[:3]
    evidence = [
        f"all-gather {fmt_us(f.total(ALL_GATHER, 'time_ns') / 1000 / steps)} per step per "
        f"rank, {f.overlap_pct(ALL_GATHER) or 0.0:.0f} % overlapped by computation: "
        f"{fmt_us(exposed / 1000)} exposed ({100.0 * exposed / step:.1f} % of the step)",
    ]
    if worst:
        evidence.append("most exposed units: " + ", ".join(
            f"{u.unit} {fmt_us(u.exposed_ns / 1000 / steps)}/step" for u in worst))
    compute = _computation_per_step(dist)
    bound = exposed > compute
    evidence.append(
        f"computation per step {fmt_us(compute / 1000)}: "
        + (f"less than the exposed all-gather, so prefetching hides at most "
           f"{fmt_us(compute / 1000)}; the rest needs fewer bytes" if bound
           else "enough to hide the exposed all-gather if it is issued earlier"))
    rs = f.overlap_pct(REDUCE_SCATTER)
    if rs is not None:
        evidence.append(f"reduce-scatter {rs:.0f} % overlapped "
                        f"({fmt_us(f.total(REDUCE_SCATTER, 'exposed_ns') / 1000 / steps)} "
                        "per step exposed)")
    v2 = f.version.startswith("FSDP2")
    fix = ("Prefetch the next units' all-gathers so they run under the current unit's "
           "computation: with fully_shard (FSDP2) set explicit prefetching "
           "(set_modules_to_forward_prefetch / set_modules_to_backward_prefetch, one or two "
           "units ahead) and keep reshard_after_forward=False on the last units; "
           if v2 else
           "Prefetch the next units' all-gathers so they run under the current unit's "
           "computation: FSDP(forward_prefetch=True, backward_prefetch=BACKWARD_PRE) and "
           "limit_all_gathers=True (bounds the prefetched memory); ")
    fix += ("larger units (a coarser auto-wrap policy) issue fewer, bigger all-gathers; "
            "if the exposed time is waiting for a late rank, see the straggler finding.")
    if bound:
        fix = ("Communication-bound: cut the all-gathered bytes first — keep parameters "
               "unsharded between forward and backward (reshard_after_forward=False in FSDP2, "
               "SHARD_GRAD_OP in FSDP1: no re-gather in backward, more memory), gather them in "
               "bf16 (MixedPrecisionPolicy(param_dtype=torch.bfloat16) / "
               "MixedPrecision(param_dtype=...)), shard within a node and replicate across "
               "nodes (HSDP); then " + fix[0].lower() + fix[1:])
    return Finding(
        id="fsdp-exposed-all-gather",
        title=f"FSDP units wait for their parameters: {fmt_us(exposed / 1000)} of all-gather "
              "per step runs while nothing computes",
        saving_us=exposed / 1000.0, saving_pct=100.0 * exposed / step,
        estimate="the all-gather time no computation covers, per step averaged over ranks "
                 "(upper bound: all of it hidden or removed)",
        evidence=tuple(evidence), fix=fix, code=_FSDP2 if v2 else _FSDP1,
        references=("https://pytorch.org/docs/stable/distributed.fsdp.fully_shard.html",),
    )
