"""Every kernel name of real traces, shortened for a table, is whole pieces of itself and
stays distinct (issue: 'implic…loat, 128, 6, 7, 3, … true>')."""

from __future__ import annotations

import numpy as np
import pytest
from tests.conftest import shared_trace
from tests.unit.test_shortnames import assert_whole

import stepscope
from stepscope.shortnames import short_names

TRACES = [
    "outside/tracelens-h100-qwen/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",
    "kineto_resnet50/num_workers_0/worker0.1623143089861.pt.trace.json.gz",
]


@pytest.fixture(scope="module")
def kernel_names() -> list[str]:
    names: set[str] = set()
    for rel in TRACES:
        trace = stepscope.load(str(shared_trace(rel)), cache=False)
        names |= {trace.strings[int(i)] for i in np.unique(trace.device.name)}
    return sorted(names)


@pytest.mark.parametrize("width", [24, 40, 50, 80])
def test_real_kernel_names_shorten_to_whole_pieces(kernel_names: list[str],
                                                  width: int) -> None:
    assert len(kernel_names) > 80
    shorts = short_names(kernel_names, width)
    if width >= 40:  # narrower, names that differ in two far-apart places may not fit both
        assert len(set(shorts)) == len(kernel_names)
    for short, full in zip(shorts, kernel_names, strict=True):
        assert_whole(short, full, width)
