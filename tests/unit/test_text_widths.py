"""The terminal report reads well at 60, 80, 120 and 200 columns and when piped."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from rich.console import Console
from tests.builders import TraceBuilder

from stepscope import build_report
from stepscope.report.text.layout import Column, fit_table, short_name, short_names
from stepscope.report.text.render import render_text

KERNELS = [
    "void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>, "
    "at::detail::Array<char*, 3> >(int, at::native::AddFunctor<float>, "
    "at::detail::Array<char*, 3>)",
    "void implicit_convolve_sgemm<float, float, 1024, 6, 7, 3, 3, 5, 1, false, true, true>"
    "(int, int, int, float const*, int, float*, float const*, kernel_conv_params, "
    "unsigned long long, int, float, float, int, float const*, float const*, bool, int, int)",
    "void implicit_convolve_sgemm<float, float, 128, 6, 7, 3, 3, 5, 1, false, true, true>"
    "(int, int, int, float const*, int, float*, float const*, kernel_conv_params, "
    "unsigned long long, int, float, float, int, float const*, float const*, bool, int, int)",
    "<script>alert(1)</script>[bold]x[/]",
]


def fits(lines: list[str], width: int) -> bool:
    """Every line fits, but one holding a word too long to share a line (the trace's path),
    which stays whole rather than being cut mid-token."""
    long = [line for line in lines if len(line) > width]
    assert all(len(max(line.split(), key=len)) > width // 2 for line in long), long
    return True


def _report(tmp_path: Path) -> object:
    b = TraceBuilder()
    t = 0.0
    for step in range(2):
        with b.step(step, t, 6_000):
            for i, k in enumerate(KERNELS * 3):
                op = b.op("aten::add", t + 10, 100)
                b.launch(op, "cudaLaunchKernel", t + 20, 5, kernel=k, k_ts=t + 40,
                         k_dur=400 + 100 * i)
                t += 450
        t += 1_000
    return build_report(b.load(tmp_path))


def _render(report: object, width: int) -> str:
    out = io.StringIO()
    render_text(report, Console(file=out, width=width, color_system=None),  # type: ignore[arg-type]
                view="all")
    return out.getvalue()


@pytest.mark.parametrize("width", [60, 80, 120, 200])
def test_no_line_exceeds_the_width_and_numbers_never_wrap(tmp_path: Path, width: int) -> None:
    text = _render(_report(tmp_path), width)
    lines = text.splitlines()
    assert fits(lines, width)
    # A unit or a number never sits alone on a line (the "46.66" / "ms" wrap).
    assert not any(re.fullmatch(r"\s*(ms|µs|%)\s*", line) for line in lines)
    assert "<script>alert(1)</script>" in text  # shown as text, never interpreted


@pytest.mark.parametrize("width", [80, 120, 200])
def test_distinct_kernels_stay_distinct(tmp_path: Path, width: int) -> None:
    text = _render(_report(tmp_path), width)
    block = text.split("Top kernels")[1].split("\n\n")[0].splitlines()
    names = [m.group(1) for row in block if (m := re.match(r"^(\S.*?)\s{2,}[\d,]+\s", row))]
    assert len(names) == len(KERNELS) and len(set(names)) == len(KERNELS), names


def test_one_unit_per_time_column(tmp_path: Path) -> None:
    text = _render(_report(tmp_path), 120)
    table = text.split("Top kernels")[1].split("\n\n")[0]
    assert "(ms)" in table or "(µs)" in table
    assert " ms" not in table.split("\n", 3)[-1] and " µs" not in table.split("\n", 3)[-1]


def test_piped_output_is_80_columns(tmp_path: Path) -> None:
    out = io.StringIO()
    render_text(_report(tmp_path), Console(file=out))  # type: ignore[arg-type]
    assert fits(out.getvalue().splitlines(), 80)


def test_short_name_keeps_the_distinguishing_tail() -> None:
    a, b = KERNELS[1], KERNELS[2]
    sa, sb = short_names([a, b], 40)
    assert sa != sb and len(sa) <= 40 and len(sb) <= 40
    assert short_name("aten::mm", 40) == "aten::mm"
    assert short_name(KERNELS[0], 60).startswith("vectorized_elementwise_kernel<4, AddFunctor")


def test_narrow_tables_drop_the_least_important_columns() -> None:
    out = io.StringIO()
    console = Console(file=out, width=30, color_system=None)
    cols = [Column("keep me", ["1.00"], keep=9), Column("drop me", ["2.00"], keep=0),
            Column("next", ["3.00"], keep=5), Column("also gone", ["4.00"], keep=1)]
    fitted = fit_table(console, "name", ["a long operator name here"], cols)
    assert fitted.dropped == ["drop me", "also gone"]


def test_zero_categories_are_listed_not_tabulated(tmp_path: Path) -> None:
    text = _render(_report(tmp_path), 120)
    assert "zero in this trace:" in text
    assert "\nMemset " not in text


def test_code_comments_move_above_instead_of_folding() -> None:
    from stepscope.report.text.layout import comments_above

    code = ("loader = DataLoader(ds,\n"
            "    num_workers=8,   # load batches in parallel worker processes\n)")
    assert comments_above(code, 40).splitlines() == [
        "loader = DataLoader(ds,", "    # load batches in parallel worker processes",
        "    num_workers=8,", ")"]
    assert comments_above(code, 200) == code


def test_names_equal_without_namespaces_stay_distinct() -> None:
    names = ["KernelExecutor::compile", "CompiledKernel::compile", "x::f(int)", "x::f(float)"]
    shorts = short_names(names, 12)
    assert len(set(shorts)) == 4 and all(len(s) <= 12 for s in shorts), shorts


def test_names_differing_in_two_places_stay_distinct() -> None:
    names = [f"resnet50/conv{s}_block{b}_2_conv/Conv2D + resnet50/conv{s}_block{b}_2_relu/Relu"
             for s in (2, 4, 5) for b in (1, 2, 3)]
    for width in (18, 24, 40):
        shorts = short_names(names, width)
        assert len(set(shorts)) == len(names) and all(len(s) <= width for s in shorts), shorts


@pytest.mark.parametrize("width", [60, 80, 120, 200])
def test_memory_command_text_fits(tmp_path: Path, width: int) -> None:
    import json
    import pickle

    from tests.unit.test_memory_files import built_snapshot

    from stepscope.cli.memory import analyse, render_memory_text

    snap = tmp_path / "s.pickle"
    snap.write_bytes(pickle.dumps(built_snapshot(oom=True), protocol=4))
    timeline = tmp_path / "t.raw.json"
    timeline.write_text(json.dumps([[1000, 2, 64, 4], [2000, 2, 1 << 20, 1]]))
    for path in (snap, timeline):
        out = io.StringIO()
        render_memory_text(analyse(str(path)), Console(file=out, width=width, color_system=None))
        lines = out.getvalue().splitlines()
        assert max(len(line) for line in lines) <= width
        assert not any(re.fullmatch(r"\s*(MiB|GiB|B|[\d,.]+)\s*", line) for line in lines)
    rows = [line.split() for line in lines]
    assert ["optimizer_state", "1.00"] in rows  # MiB, the unit in the header
