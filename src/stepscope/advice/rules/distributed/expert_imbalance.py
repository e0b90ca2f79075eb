"""expert-imbalance: an MoE all-to-all sends far more tokens to some ranks than to others.

The hot rank receives more tokens than the others, so its experts compute longer and every
rank waits for it at the next collective: it looks like a straggler, but the cause is the
router, not the data sharding. This rule names the hot ranks and the MoE fixes, and the
straggler / rank-imbalance / low-comm-overlap rules stay silent when it explains their rank
(``explains``).
"""

from __future__ import annotations

from stepscope.advice.finding import Finding
from stepscope.advice.rules.distributed._run import mean_step_ns, mean_steps
from stepscope.analysis.distributed.all_to_all import HOT_RATIO
from stepscope.analysis.distributed.run import Distributed
from stepscope.units import format_bytes
from stepscope.units import format_us as fmt_us

MIN_SAVING_PCT = 2.0  # as the straggler rule: the others' wait is at least this share of a step
ALL_TO_ALL_MAJORITY = 0.5  # all-to-all time / all collective time: the comm is the MoE's


def _saving_ns(dist: Distributed) -> float:
    """Per step: the waiting the hot ranks cause (averaged over the other ranks), or the part
    of the all-to-all transfer an even exchange would save, whichever is larger."""
    a = dist.all_to_all
    if a is None or dist.world_size < 2:
        return 0.0
    steps = mean_steps(dist)
    hot = set(a.hot_ranks)
    wait = sum(s.wait_caused_ns for s in dist.stragglers if s.rank in hot)
    wait_ns = wait / (dist.world_size - 1) / steps
    transfer = sum(c.transfer_ns for c in dist.collectives if c.collective.startswith("alltoall"))
    even_ns = transfer * (1 - 1 / a.imbalance) / steps if a.imbalance > 0 else 0.0
    return max(wait_ns, even_ns)


def fires(dist: Distributed) -> bool:
    a = dist.all_to_all
    if a is None or not a.hot_ranks or a.imbalance < HOT_RATIO:
        return False
    step = mean_step_ns(dist)
    return step > 0 and 100.0 * _saving_ns(dist) / step >= MIN_SAVING_PCT


def explains(dist: Distributed, rank: int | None) -> bool:
    """The rank's slowness is the MoE skew's: the rule fires and the rank is hot."""
    a = dist.all_to_all
    return a is not None and rank in a.hot_ranks and fires(dist)


def dominates_communication(dist: Distributed) -> bool:
    """All-to-all is most of the collective time and the rule fires: DDP advice misleads."""
    total = sum(c.time_ns for c in dist.collectives)
    a2a = sum(c.time_ns for c in dist.collectives if c.collective.startswith("alltoall"))
    return total > 0 and a2a >= ALL_TO_ALL_MAJORITY * total and fires(dist)


def check_run(dist: Distributed) -> Finding | None:
    a = dist.all_to_all
    if a is None or not fires(dist):
        return None
    step = mean_step_ns(dist)
    steps = mean_steps(dist)
    saving = _saving_ns(dist)
    index = {r: k for k, r in enumerate(a.ranks)}
    mean = float(a.received.mean())
    hot = a.hot_ranks
    names = ", ".join(str(r) for r in hot)
    evidence = [
        f"rank {r} receives {format_bytes(float(a.received[index[r]]))} over {a.calls} "
        f"all-to-all calls, {a.received[index[r]] / mean:.2f}x the mean rank's "
        f"{format_bytes(mean)}" for r in hot[:3]
    ]
    evidence.append(f"max/mean received bytes {a.imbalance:.2f} (hot above {HOT_RATIO:.2f}, "
                    "the usual capacity factor)")
    late = [s for s in dist.stragglers if s.rank in hot]
    if late:
        s = late[0]
        evidence.append(
            f"rank {s.rank} arrived last at {s.last_arrivals} of {s.matched_calls} matched "
            f"collectives; its computation is {fmt_us(s.computation_excess_ns / 1000 / steps)} "
            "per step longer than the median rank's: its experts process the extra tokens")
    return Finding(
        id="expert-imbalance",
        title=f"MoE all-to-all is skewed: rank{'s' if len(hot) > 1 else ''} {names} "
              f"receive{'' if len(hot) > 1 else 's'} {a.imbalance:.2f}x the mean tokens",
        saving_us=saving / 1000.0, saving_pct=100.0 * saving / step if step else 0.0,
        estimate="the waiting the hot ranks cause at collectives (averaged over the other ranks), "
                 "or the all-to-all transfer an even exchange saves, whichever is larger, per step",
        evidence=tuple(evidence),
        fix=f"Balance the router rather than the data: add or raise the router's load-balancing "
            f"auxiliary loss (Switch/GShard style, coefficient ~1e-2), cap tokens per expert "
            f"with a capacity factor (1.0-1.25) and choose the token-dropping policy for the "
            f"overflow (drop, or reroute to the next choice), and place or replicate the hot "
            f"experts (those on rank {names}) across ranks.",
        references=("https://arxiv.org/abs/2101.03961",),
    )
