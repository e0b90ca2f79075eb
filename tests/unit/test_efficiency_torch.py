"""Work models against PyTorch's own FLOP counters on CPU captures (record_shapes=True).

Both references count at the ATen level: ``torch.utils.flop_counter.FlopCounterMode``
(matmuls, convolutions, attention; forward and backward) and the profiler's
``with_flops=True`` (per recorded operator). stepscope must agree within 1 % for every
operator both model.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from torch.profiler import ProfilerActivity, profile  # noqa: E402
from torch.utils.flop_counter import FlopCounterMode  # noqa: E402

from stepscope.analysis.efficiency.roofline import efficiency  # noqa: E402
from stepscope.analysis.efficiency.work import decode, model_op  # noqa: E402
from stepscope.analysis.events.links import Links  # noqa: E402
from stepscope.analysis.events.optree import OpTree  # noqa: E402
from stepscope.analysis.events.steps import find_steps  # noqa: E402
from stepscope.formats import load_trace  # noqa: E402
from stepscope.model import Trace  # noqa: E402

# FlopCounterMode's op -> the family stepscope puts it in
FAMILY = {"mm": "matmul", "addmm": "matmul", "bmm": "matmul", "baddbmm": "matmul",
          "convolution": "conv", "convolution_backward": "conv",
          "_scaled_dot_product_flash_attention_for_cpu": "attention",
          "_scaled_dot_product_flash_attention_for_cpu_backward": "attention"}


def _transformer() -> tuple[torch.nn.Module, torch.Tensor]:
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(64, 4, 96, dropout=0.0, batch_first=True)
    model = torch.nn.Sequential(layer, torch.nn.Linear(64, 10))
    return model, torch.randn(2, 24, 64)


def _cnn() -> tuple[torch.nn.Module, torch.Tensor]:
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 16, 3, stride=2, padding=1), torch.nn.BatchNorm2d(16),
        torch.nn.ReLU(), torch.nn.Conv2d(16, 16, 3, padding=2, dilation=2, groups=4),
        torch.nn.ReLU(), torch.nn.Conv2d(16, 8, 1), torch.nn.Flatten(),
        torch.nn.Linear(8 * 8 * 8, 10),
    )
    return model, torch.randn(4, 3, 16, 16)


def _step(model: torch.nn.Module, x: torch.Tensor) -> None:
    model(x).sum().backward()


def _capture(build: Callable[[], tuple[torch.nn.Module, torch.Tensor]], tmp: Path
             ) -> tuple[Trace, dict[str, float], dict[str, float]]:
    model, x = build()
    _step(model, x)  # warm-up outside the capture
    with FlopCounterMode(display=False) as counter:
        _step(model, x)
    reference: dict[str, float] = defaultdict(float)
    for op, flops in counter.get_flop_counts()["Global"].items():
        reference[FAMILY.get(str(op).split(".")[-1], str(op))] += flops
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True,
                 with_flops=True) as prof:
        _step(model, x)
    by_op: dict[str, float] = defaultdict(float)
    for evt in prof.events():
        if evt.flops:
            by_op[evt.name] += evt.flops
    path = tmp / "trace.json"
    prof.export_chrome_trace(str(path))
    return load_trace(str(path), use_cache=False), dict(reference), dict(by_op)


def _efficiency_by_family(trace: Trace) -> dict[str, float]:
    links = Links(trace)
    eff = efficiency(trace, OpTree(trace, links), find_steps(trace, links))
    assert eff is not None
    out: dict[str, float] = defaultdict(float)
    for row in eff.operators:
        out[row.family] += row.flops
    return out


def _modelled_by_name(trace: Trace) -> dict[str, float]:
    """Sum of the work model's FLOPs over every recorded call of each operator name."""
    host = trace.host
    out: dict[str, float] = defaultdict(float)
    for i in range(len(host)):  # a test, not a hot path
        rec = decode(*(trace.name(int(c[i])) for c in (
            host.name, host.input_dims, host.input_types, host.concrete_inputs,
            host.input_strides)))
        work = model_op(rec)
        if work is not None:
            out[rec.name] += work.flops
    return out


@pytest.mark.parametrize("build", [_transformer, _cnn], ids=["transformer", "cnn"])
def test_flops_match_flop_counter_mode(build: Callable[[], tuple[torch.nn.Module, torch.Tensor]],
                                       tmp_path: Path) -> None:
    trace, reference, _ = _capture(build, tmp_path)
    ours = _efficiency_by_family(trace)
    compared = [f for f in ("matmul", "conv", "attention") if reference.get(f)]
    assert "matmul" in compared
    for family in compared:
        assert ours[family] == pytest.approx(reference[family], rel=0.01), family
    if build is _cnn:
        assert "conv" in compared


@pytest.mark.parametrize("build", [_transformer, _cnn], ids=["transformer", "cnn"])
def test_flops_match_profiler_with_flops(build: Callable[[], tuple[torch.nn.Module, torch.Tensor]],
                                         tmp_path: Path) -> None:
    trace, _, by_op = _capture(build, tmp_path)
    ours = _modelled_by_name(trace)
    both = [name for name in by_op if ours.get(name)]
    assert {"aten::addmm", "aten::mm"} & set(both)
    for name in both:
        assert ours[name] == pytest.approx(by_op[name], rel=0.01), name


def test_cpu_trace_has_no_mfu_without_a_peak(tmp_path: Path) -> None:
    trace, _, _ = _capture(_transformer, tmp_path)
    links = Links(trace)
    eff = efficiency(trace, OpTree(trace, links), find_steps(trace, links))
    assert eff is not None and not eff.on_gpu
    assert eff.devices == () and eff.mfu() == (None, None)
    assert eff.total_flops > 0 and eff.time_by_family["matmul"] > 0
