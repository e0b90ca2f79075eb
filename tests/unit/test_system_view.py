"""A monitor output beside a trace joins its report (issue 23 item 3): the ``system`` section,
the DataLoader finding's evidence, the folder report. The fixture tests/data/monitor_run/loader
is a real run: ``stepscope run --monitor --logdir DIR --run loader --
tests/data/monitor/loader.py 6 2`` (2 DataLoader workers on a slow per-sample transform, on
this project's loaded 2-core machine): its trace, monitor.json and monitor.parquet."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import inlined_data

from stepscope.analysis.system.series import chart_series
from stepscope.analysis.system.verdict import verdict
from stepscope.cli.main import main
from stepscope.formats import load_trace
from stepscope.formats.monitor.read import read_samples, samples_beside
from stepscope.report.build import build_report
from stepscope.report.bundle import find_bundle

RUN = Path(__file__).resolve().parents[1] / "data" / "monitor_run" / "loader"
TRACE = "vm_13337.1795509081314.pt.trace.json.gz"


def _report(folder: Path, **kw: Any) -> dict[str, Any]:
    return build_report(load_trace(str(folder / TRACE), use_cache=False), **kw).to_json()


def test_the_report_gains_the_monitor_verdict_and_series() -> None:
    written = json.loads((RUN / "monitor.json").read_text())
    system = _report(RUN)["system"]
    assert system["file"] == str(RUN / "monitor.parquet")
    # recomputed from the samples (analysis/system): what `stepscope run --monitor` said
    assert system["verdict"] == written["verdict"]
    assert system["verdict"]["bound"] == "input" and system["verdict"]["confidence"] == "high"
    for key in ("window", "phases", "throughput", "metrics", "samples", "hz", "cores"):
        assert system[key] == written[key], key
    assert system["phases"]["data"] == pytest.approx(0.9459, abs=1e-4)
    charts = system["charts"]
    samples = read_samples(str(RUN / "monitor.parquet"))
    assert len(charts["t_s"]) == samples.n == 301 and charts["bucket_s"] == 0.1
    for name, s in charts["series"].items():
        assert len(s["values"]) == samples.n, name
    assert charts["series"]["workers_cpu"]["values"] == [
        None if v is None else round(float(v), 3) for v in samples.series("workers_cpu")]
    # the data-wait share over the steady window's ticks is the verdict's data share
    w = system["window"]
    t = charts["t_s"]
    inside = [v for x, v in zip(t, charts["series"]["data_pct"]["values"], strict=True)
              if w["start_s"] <= x < w["end_s"] and v is not None]
    assert sum(inside) / len(inside) == pytest.approx(100 * system["phases"]["data"], abs=1.0)


def test_chart_series_average_buckets() -> None:
    """A long run is averaged into at most 400 buckets (mean of the ticks in each)."""
    samples = read_samples(str(RUN / "monitor.parquet"))
    charts = chart_series(samples, points=100)
    cpu = [float(v) for v in samples.series("cpu")]
    assert charts["bucket_s"] == 0.4 and len(charts["t_s"]) == 76  # ceil(301 / 4)
    assert charts["series"]["cpu"]["values"][1] == pytest.approx(sum(cpu[4:8]) / 4, abs=1e-3)


def test_the_dataloader_finding_cites_the_monitor() -> None:
    report = _report(RUN)
    (f,) = [f for f in report["findings"] if f["id"] == "input-pipeline"]
    s = verdict(read_samples(str(RUN / "monitor.parquet"))).shares
    assert (s.workers, round(s.worker_cpu), round(100 * s.worker_demand)) == (2, 14, 86)
    assert f["evidence"][-2:] == [
        f"stepscope monitor, over its {s.window.seconds:.1f} s steady window: the main process "
        "waited for the next batch 95 % of the time (verdict: input, high confidence)",
        f"stepscope monitor, over its {s.window.seconds:.1f} s steady window: 2 DataLoader "
        "workers, each on a CPU 14 % of a core and runnable (on a CPU or waiting for one) 86 % "
        "of the time; host CPU 100 % of 2 cores"]
    # saturated workers with every core busy: more workers cannot help; no snippet asks for them
    assert f["fix"]["text"].startswith(
        "The DataLoader workers are saturated and every core is busy")
    assert f["fix"]["code"] is None


def test_without_a_monitor_nothing_changes(tmp_path: Path) -> None:
    shutil.copyfile(RUN / TRACE, tmp_path / TRACE)
    report = _report(tmp_path)
    assert report["system"] is None and samples_beside(str(tmp_path / TRACE)) is None
    (f,) = [f for f in report["findings"] if f["id"] == "input-pipeline"]
    assert not any("stepscope monitor" in e for e in f["evidence"])
    assert f["fix"]["text"].startswith("Load batches in background workers")
    assert _report(RUN, monitor=None)["system"] is None  # asked for none


def test_an_unreadable_monitor_is_said_not_fatal(tmp_path: Path) -> None:
    for name in (TRACE, "monitor.json"):
        shutil.copyfile(RUN / name, tmp_path / name)
    (tmp_path / "monitor.parquet").write_bytes(b"PAR1 not really")
    report = _report(tmp_path)
    err = report["system"]["error"]
    assert err.startswith(f"cannot read monitor samples {tmp_path / 'monitor.parquet'}: ")
    assert "\n" not in err and report["findings"]


def test_report_on_the_folder(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(RUN), "--format", "json", "--no-cache"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["source"]["format"] == "spans"
    assert doc["system"]["verdict"]["bound"] == "input"
    assert doc["system"]["file"] == str(RUN / "monitor.parquet")
    (f,) = [f for f in doc["findings"] if f["id"] == "input-pipeline"]
    assert any(e.startswith("stepscope monitor, over its") for e in f["evidence"])


@pytest.mark.skipif(find_bundle() is None, reason="front end not built (setup.sh)")
def test_html_on_a_folder_of_one_capture_writes_its_report(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`stepscope run --monitor` writes one capture and the monitor output: --html on that
    folder writes the capture's report (as `report FILE --html`), the JSON stays `spans`."""
    out = tmp_path / "loader.html"
    assert main(["report", str(RUN), "--format", "json", "--no-cache", "--executor", "serial",
                 "--html", str(out)]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["source"]["format"] == "spans"
    assert captured.err.strip() == f"HTML report: {out}"
    data = inlined_data(out.read_text())
    report = data["report"]
    assert data["trace"] == TRACE and report["source"]["format"] == "kineto"
    assert report["system"]["verdict"]["bound"] == "input"  # the monitor beside it
    assert report["critical_path"] is not None and len(report["steps"]) == 3


def test_a_wait_counted_when_it_ends_is_drawn_where_it_ran() -> None:
    """The hooks add a DataLoader wait when __next__ returns: 0.3 s counted at t = 0.3 ran
    over [0, 0.3], so each of the three ticks before is 100 % data wait, the next 0 %."""
    from stepscope.model.system import SystemSamples

    t = [0.0, 0.1, 0.2, 0.3, 0.4, 0.5]
    samples = SystemSamples(columns={"t": t, "phase_data": [0.0, 0.0, 0.0, 0.3, 0.3, 0.35]},
                            hz=10.0, n_cores=2)
    values = chart_series(samples)["series"]["data_pct"]["values"]
    assert values == [100.0, 100.0, 100.0, 0.0, 50.0, None]


def test_gpu_series_one_per_reporting_gpu() -> None:
    """List columns give one series per GPU; a GPU whose driver reports nothing (NaN) has none."""
    from stepscope.model.system import SystemSamples

    nan = float("nan")
    samples = SystemSamples(columns={"t": [0.0, 0.1, 0.2],
                                     "gpu_util": [[50.0, nan], [70.0, nan], [90.0, nan]],
                                     "gpu_mem_used": [[1e9, 2e9], [1e9, 2e9], [1e9, nan]]},
                            hz=10.0, n_cores=2, gpu_names=["A", "B"])
    series = chart_series(samples, points=2)["series"]
    assert sorted(series) == ["gpu0_mem_used", "gpu0_util", "gpu1_mem_used"]
    assert series["gpu0_util"] == {"unit": "%", "values": [60.0, 90.0]}  # buckets of 2 ticks
    assert series["gpu1_mem_used"]["values"] == [2e9, None]


def test_the_text_report_starts_with_the_system_verdict(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(RUN / TRACE), "--no-cache"]) == 0
    out = capsys.readouterr().out
    written = json.loads((RUN / "monitor.json").read_text())["verdict"]
    head = out[: out.index("Findings")]
    assert "System (stepscope monitor beside the trace, 301 samples over 30.981 s): bound " \
        "input (high confidence)" in " ".join(head.split())
    assert " ".join(written["reason"].split()) in " ".join(head.split())


def test_the_dashboard_reloads_a_trace_when_its_monitor_output_appears(tmp_path: Path) -> None:
    """`stepscope run --monitor` writes the trace, then (when the program ends) the monitor
    output: a trace loaded in between is loaded again, with its system view."""
    import time

    pytest.importorskip("httpx")
    from starlette.testclient import TestClient

    from stepscope.server.app import ViewConfig, create_app

    shutil.copyfile(RUN / TRACE, tmp_path / TRACE)

    def report(c: Any) -> dict[str, Any]:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            r = c.get("/api/report", params={"trace": TRACE})
            if r.status_code == 200:
                return r.json()  # type: ignore[no-any-return]
            time.sleep(0.05)
        raise AssertionError("never loaded")

    with TestClient(create_app(ViewConfig(root=str(tmp_path), use_cache=False)),
                    base_url="http://127.0.0.1:6006") as c:
        assert report(c)["system"] is None
        for name in ("monitor.json", "monitor.parquet"):
            shutil.copyfile(RUN / name, tmp_path / name)
        assert report(c)["system"]["verdict"]["bound"] == "input"
