"""autocast-casts on a real autocast inference trace (ptrans on an A100): the casts that
materialising-copies leaves out (inside other operators) are sized here, by the operator
that cast and the direction, with the inference fix (cast the model once)."""

from __future__ import annotations

from tests.conftest import shared_trace

from stepscope.formats import load_trace
from stepscope.report.build import build_report

PTRANS = "outside/ptrans-a100-gpu/gpu_working_chrome_trace.json"


def test_autocast_casts_on_the_ptrans_inference_trace() -> None:
    report = build_report(load_trace(str(shared_trace(PTRANS)), use_cache=False))
    f = next(f for f in report.findings if f.id == "autocast-casts")
    assert f.severity == "high"
    assert f.evidence[:5] == (
        "casts between float32 and fp16 inside other operators: 16.91 ms of kernels per step "
        "(20.5 % of GPU kernel time, 187 casts per step)",
        "inside aten::linear (float → fp16): 4.50 ms per step (127 casts)",
        "inside aten::bmm (float → fp16): 4.35 ms per step (10 casts)",
        "inside aten::baddbmm (float → fp16): 4.34 ms per step (9 casts)",
        "inside aten::layer_norm (fp16 → float): 3.68 ms per step (32 casts)",
    )
    assert f.evidence[-1].startswith("no backward pass in the trace (inference)")
    assert "model.to(torch.float16).eval()" in (f.code or "")
    assert "materialising-copies" not in {g.id for g in report.findings}
