# ruff: noqa: E501  (reference data)
"""Memory view on real traces: per-operator statistics equal torch-tb-profiler 0.4.3's
Memory Statistics on the legacy kineto_resnet50 traces, modern traces give a curve, and
the HTA memory timeline and a real allocator snapshot read with pinned figures.

Reference rows were computed with torch-tb-profiler 0.4.3 (``MemorySnapshot.
get_memory_statistics`` over ``RunProfileData.tid2tree``): [self size increase, self
allocation size, self allocation count, size increase, allocation size, allocation count,
calls]; tb shows no curve for these pre-1.10 records (no Addr / Total Allocated).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from tests.conftest import shared_trace

import stepscope
from stepscope.analysis.memory.records import CUMULATIVE_NOTE
from stepscope.analysis.memory.snapshot import snapshot_analysis
from stepscope.analysis.memory.timeline import category_timeline
from stepscope.analysis.suite import run_analyses
from stepscope.formats.memory.snapshot import read_snapshot
from stepscope.formats.memory.timeline import read_memory_timeline

# fmt: off
_W0 = {'CPU': {'rows': 12, 'sums': [375719904, 375720720, 834, 895946304, 895947168, 1842, 8088],
               'top': {'aten::div': [115604736, 115605552, 198, 115605504, 115606320, 390, 198],
                       'aten::empty_strided': [115606272, 115606272, 384, 115606272, 115606272, 384, 402],
                       'aten::to': [0, 0, 0, 115606272, 115606272, 384, 414]}},
       'GPU0': {'rows': 44, 'sums': [47436198912, 63689511936, 4110, 167511484416, 219873730560, 13674, 11220],
                'top': {'aten::empty': [34000779264, 34000779264, 2694, 34000779264, 34000779264, 2694, 4404],
                        'CudnnConvolutionBackward': [0, 0, 0, 8717432832, 21368438784, 924, 318],
                        'aten::cudnn_convolution_backward': [0, 0, 0, 8717432832, 21368438784, 924, 318]}}}
_W4 = {'CPU': {'rows': 4, 'sums': [480, 528, 54, 576, 672, 84, 4248],
               'top': {'aten::empty': [480, 480, 48, 480, 480, 48, 4212],
                       'aten::zeros': [0, 0, 0, 96, 96, 24, 24],
                       'MeanBackward1': [0, 0, 0, 0, 48, 6, 6]}},
       'GPU0': {'rows': 44, 'sums': [47434626048, 62648853504, 4140, 166466893824, 215520307200, 13776, 9882],
                'top': {'aten::empty': [32961693696, 32961693696, 2724, 32961693696, 32961693696, 2724, 4212],
                        'CudnnConvolutionBackward': [0, 0, 0, 8716646400, 20520142848, 972, 318],
                        'aten::cudnn_convolution_backward': [0, 0, 0, 8716646400, 20520142848, 972, 318]}}}
TB = {
    'kineto_resnet50/num_workers_0/worker0.1623143089861.pt.trace.json.gz': (_W0, {'CPU': 57803264, 'GPU0': 2791636480}),
    'kineto_resnet50/num_workers_0/worker0.1623143566756.pt.trace.json.gz': (_W0, {'CPU': 57803264, 'GPU0': 2791636480}),
    'kineto_resnet50/num_workers_4/worker0.1623212756351.pt.trace.json.gz': (_W4, {'CPU': 57803520, 'GPU0': 2791505408}),
    'kineto_resnet50/num_workers_4/worker0.1623213129365.pt.trace.json.gz': (_W4, {'CPU': 19267840, 'GPU0': 2791505408}),
}
# fmt: on


def _row(r: object) -> list[int]:
    return [getattr(r, k) for k in (
        "self_size_increase", "self_allocation_size", "self_allocation_count", "size_increase",
        "allocation_size", "allocation_count", "calls")]


@pytest.mark.parametrize("rel", sorted(TB))
def test_legacy_operator_memory_statistics_equal_torch_tb_profiler(rel: str) -> None:
    ref, peaks = TB[rel]
    m = run_analyses(stepscope.load(str(shared_trace(rel)))).memory
    assert m is not None
    assert m.note == CUMULATIVE_NOTE
    assert [d.device for d in m.devices] == ["CPU", "GPU0"]
    for d in m.devices:
        want = ref[d.device]
        rows = {r.name: _row(r) for r in d.operators}
        assert len(rows) == want["rows"]
        sums = [sum(r[i] for r in rows.values()) for i in range(7)]
        assert sums == want["sums"]  # every metric of every row, summed: exact
        for name, values in want["top"].items():
            assert rows[name] == values
        # the cumulative curve (running sum of Bytes; tb draws none for these records)
        assert d.cumulative and d.peak_allocated == peaks[d.device]
        assert d.peak_reserved == -1 and d.allocations > 0 and d.matched == 0


def test_modern_trace_has_an_allocator_curve_and_modules() -> None:
    path = shared_trace("outside/tracelens-h100-qwen/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz")
    a = run_analyses(stepscope.load(str(path)))
    assert a.memory is not None and a.modules is not None
    gpu = a.memory.device("GPU0")
    assert gpu is not None and not gpu.cumulative
    assert gpu.records == 2250
    assert gpu.peak_allocated == 2_088_508_416
    assert gpu.peak_reserved == 2_629_828_608
    assert gpu.peak_operator == "aten::mul"
    assert (gpu.allocations, gpu.matched, gpu.unfreed_count) == (1125, 1125, 0)
    assert int(gpu.allocated.max()) == gpu.peak_allocated  # the peak survives down-sampling
    mods = a.modules
    assert mods.module_events == 316 and len(mods.nodes) == 316
    root = mods.nodes[0]
    assert root.path == "Qwen2Model_0" and root.parent == -1
    assert sum(n.name.startswith("Qwen2DecoderLayer_") for n in mods.nodes if n.depth == 1) == 24
    assert root.device_total_ns == pytest.approx(mods.device_ns_in_modules)
    assert root.device_total_ns / 1000 == pytest.approx(31905.473, abs=0.01)
    for n in mods.nodes:  # totals = self + children
        kids = [c for c in mods.nodes if c.parent == n.id]
        assert n.device_total_ns == pytest.approx(n.device_self_ns + sum(
            c.device_total_ns for c in kids))


def test_hta_memory_timeline_categories() -> None:
    c = category_timeline(read_memory_timeline(
        str(shared_trace("hta/memory_analysis/memory_timeline.raw.gz"))))
    assert c.peak_bytes == 3_082_832_104
    assert c.at_peak["activation"] == 2_592_465_920
    assert c.at_peak["parameter"] == 102_440_608
    assert c.at_peak["optimizer_state"] == 102_228_128
    assert c.peak_ns - c.origin_ns == 98_424_324
    assert sum(c.at_peak.values()) == c.peak_bytes


def _real_snapshot() -> Path:
    env = os.environ.get("STEPSCOPE_REAL_SNAPSHOT")
    if env and Path(env).exists():
        return Path(env)
    return shared_trace("memory_snapshots/eor_nn/snapshot.pickle")


def test_real_snapshot_from_a_gpu_run() -> None:
    """JasperSolt/EoR_NN snapshot.pickle (commit 6686e9f4, sha256 fa856e8d...), written by
    torch.cuda.memory._dump_snapshot on a real GPU run; not redistributed here."""
    r = snapshot_analysis(read_snapshot(str(_real_snapshot())))
    (d,) = r.devices
    assert (d.segments, d.reserved, d.allocated) == (10, 134_217_728, 48_760_832)
    assert d.inactive == 85_456_896 and d.split_inactive_blocks == 9
    assert d.split_inactive_bytes == 37_222_400
    assert d.trace_entries == 5803 and d.actions["alloc"] == 1935
    assert d.peak_allocated == 108_270_580 and d.before_trace == 8_783_856
    assert d.sites[0].site.endswith("counterfactuals.py:102 in generate_counterfactuals")
    assert d.peak_sites[0].bytes == 23_592_964 and "PowBackward0" in d.peak_sites[0].site
