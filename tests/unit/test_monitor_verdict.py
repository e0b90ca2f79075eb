"""The monitor's verdict rules on synthetic samples, and NVML through a fake ``pynvml``."""

from __future__ import annotations

import math
import os
import sys
import types
from typing import Any

import pytest

from stepscope.analysis.system.summary import shares, window
from stepscope.analysis.system.verdict import verdict
from stepscope.model.system import SystemSamples
from stepscope.report.json.monitor import monitor_json
from stepscope.report.text.monitor import sparkline

N = 30


def _samples(*, oncpu: float = 0.0, runq: float = 0.0, state: str = "sleeping",
             phases: dict[str, float] | None = None, steps: bool = False,
             workers: int = 0, worker_demand: float = 0.0, worker_io: float = 0.0,
             gpu: dict[str, float] | None = None, n: int = N,
             read: float = 0.0, states: list[str] | None = None,
             worker_cpu: float | None = None) -> SystemSamples:
    """``n`` ticks at 10 Hz; phases given as shares of time, accumulated per tick."""
    t = [0.1 * (i + 1) for i in range(n)]
    cols: dict[str, list[Any]] = {
        "t": t, "cpu": [50.0] * n, "iowait": [0.0] * n, "tree_read": [read] * n,
        "main_oncpu": [oncpu] * n, "main_runqueue": [runq] * n, "main_state": states or [state] * n,
        "workers_count": [workers] * n, "workers_demand": [worker_demand * workers] * n,
        "workers_cpu": [(100 * worker_demand if worker_cpu is None else worker_cpu) * workers] * n,
        "workers_io": [worker_io * workers] * n,
    }
    hooked = phases is not None
    if hooked:
        for name in ("data", "forward", "backward", "optimizer", "sync", "collective"):
            share = (phases or {}).get(name, 0.0)
            cols[f"phase_{name}"] = [share * x for x in t]
        cols["phase_steps"] = [float(i) if steps else 0.0 for i in range(n)]
        cols["phase_batches"] = [float(i) for i in range(n)]
        cols["phase_samples"] = [8.0 * i for i in range(n)]
        cols["phase_running"] = [1.0] * n
        cols["phase_hooked"] = [1.0] * n
    for key, value in (gpu or {}).items():
        cols[f"gpu_{key}"] = [[value]] * n
    return SystemSamples(columns=cols, hz=10.0, n_cores=2, phases=hooked,
                         gpu_names=["H100"] if gpu else [], duration_s=0.1 * n)


def test_idle() -> None:
    v = verdict(_samples(oncpu=0.02))
    assert (v.bound, v.confidence) == ("idle", "high")


def test_cpu_counts_the_run_queue_on_a_loaded_machine() -> None:
    # on a CPU 40 % of the time, runnable another 50 %: CPU-bound, however busy the box
    v = verdict(_samples(oncpu=0.4, runq=0.5, state="running"))
    assert v.bound == "cpu"
    assert v.evidence["main_demand"] == pytest.approx(0.9)


def test_cpu_only_compute_phases() -> None:
    # a CPU-only run whose forward/backward/optimizer fill the window is CPU-bound even
    # when the main thread waits on torch's own worker threads
    v = verdict(_samples(oncpu=0.3, phases={"forward": 0.3, "backward": 0.4}, steps=True))
    assert v.bound == "cpu"


def test_io() -> None:
    v = verdict(_samples(oncpu=0.1, state="disk-sleep"))
    assert (v.bound, v.confidence) == ("io", "high")


def test_io_when_disk_sleep_is_undersampled() -> None:
    # seen on this project's VM: 1 GB/s of O_DIRECT reads, sampled 'running' 85 % of the
    # time while on a CPU 16 % and queued 1 %: neither CPU, queue nor sleep -> storage
    states = ["running"] * 25 + ["disk-sleep"] * 5
    v = verdict(_samples(oncpu=0.16, runq=0.01, states=states, read=1e9))
    assert v.bound == "io"
    assert v.evidence["main_io"] == pytest.approx(0.83)
    # the same without bytes from storage is not io, nor idle (it is not asleep)
    unexplained = verdict(_samples(oncpu=0.16, runq=0.01, states=states))
    assert unexplained.bound not in ("io", "idle") and unexplained.confidence == "low"
    # a sleeper that reads a little stays idle; a CPU-bound reader stays cpu
    assert verdict(_samples(oncpu=0.02, read=1e6)).bound == "idle"
    assert verdict(_samples(oncpu=0.9, state="running", read=1e8)).bound == "cpu"


def test_input_main_process() -> None:
    v = verdict(_samples(oncpu=0.95, phases={"data": 0.9}, steps=True))
    assert v.bound == "input"
    assert "num_workers=0" in v.next_step


def test_input_saturated_and_idle_workers() -> None:
    v = verdict(_samples(oncpu=0.05, phases={"data": 0.9}, steps=True, workers=4,
                         worker_demand=0.97))
    assert v.bound == "input" and "4 workers saturated" in v.next_step
    v = verdict(_samples(oncpu=0.05, phases={"data": 0.9}, steps=True, workers=4,
                         worker_demand=0.2))
    assert v.bound == "input" and "not the limit" in v.next_step


def test_input_waiting_on_storage_is_io() -> None:
    v = verdict(_samples(oncpu=0.05, phases={"data": 0.9}, steps=True, workers=2,
                         worker_demand=0.1, worker_io=0.8))
    assert v.bound == "io"
    assert "DataLoader workers" in v.reason


def test_communication() -> None:
    v = verdict(_samples(oncpu=0.1, phases={"collective": 0.6, "forward": 0.2}, steps=True))
    assert v.bound == "communication"


def test_gpu_and_memory_bandwidth() -> None:
    v = verdict(_samples(oncpu=0.2, gpu={"util": 97.0, "mem_util": 30.0}))
    assert (v.bound, v.confidence) == ("gpu", "high")
    v = verdict(_samples(oncpu=0.2, gpu={"util": 97.0, "mem_util": 20.0, "dram_bw": 75.0}))
    assert v.bound == "memory-bandwidth"  # GPM's DRAM bandwidth wins over NVML's
    v = verdict(_samples(oncpu=0.2, gpu={"util": 97.0, "mem_util": 80.0, "dram_bw": 30.0}))
    assert v.bound == "gpu"


def test_gpu_starved_by_the_host_is_cpu() -> None:
    v = verdict(_samples(oncpu=0.95, gpu={"util": 35.0, "mem_util": 5.0}))
    assert v.bound == "cpu"
    assert "GPU is busy only 35%" in v.next_step


def test_spinning_in_cuda_sync_is_not_host_bound() -> None:
    # the main thread spins in torch.cuda.synchronize 60 % of the time (on a CPU, but
    # waiting for the GPU): not "the host cannot feed the GPU"
    v = verdict(_samples(oncpu=0.95, state="running", phases={"sync": 0.6, "forward": 0.3},
                         steps=True, gpu={"util": 65.0, "mem_util": 10.0}))
    assert v.bound != "cpu"
    v = verdict(_samples(oncpu=0.95, state="running", phases={"sync": 0.1, "forward": 0.8},
                         steps=True, gpu={"util": 65.0, "mem_util": 10.0}))
    assert v.bound == "cpu"


def test_too_few_samples_says_nothing() -> None:
    v = verdict(_samples(oncpu=0.9, n=3))
    assert v.bound is None
    data = monitor_json(_samples(oncpu=0.9, n=3), v)
    assert data["verdict"]["bound"] is None


def test_no_threshold_crossed_is_low_confidence() -> None:
    v = verdict(_samples(oncpu=0.5))
    assert (v.bound, v.confidence) == ("cpu", "low")


def test_window_follows_steps() -> None:
    s = _samples(oncpu=0.5, phases={"forward": 0.5}, steps=True)
    w = window(s)
    assert w.from_steps and (w.start, w.end) == (2, N)
    assert shares(s).phases["forward"] == pytest.approx(0.5)
    assert shares(s).steps == N - 2


def test_sparkline() -> None:
    assert sparkline([0, 50, 100], 3, 100.0) == "▁▅█"
    assert len(sparkline([float(i) for i in range(1000)], 40)) == 40
    assert sparkline([math.nan, 1.0], 2) == " █"


def test_metric_summaries() -> None:
    """The JSON's per-metric mean, median, p95 and max (linear between ranks), NaN left out."""
    s = _samples(gpu={"power": 100.0})
    s.columns["cpu"] = [float(i) for i in range(N)]  # 0 .. 29
    s.columns["gpu_power"] = [[math.nan]] * 10 + [[100.0]] * 10 + [[300.0]] * 10
    data = monitor_json(s, verdict(s))["metrics"]
    assert data["cpu"] == {"unit": "%", "mean": 14.5, "p50": 14.5, "p95": 27.55, "max": 29.0}
    assert data["gpu0_power"] == {"unit": "W", "mean": 200.0, "p50": 200.0, "p95": 300.0,
                                  "max": 300.0}


def test_text_report_numbers() -> None:
    """Every number the terminal view prints, from samples whose values are known."""
    import dataclasses
    import io

    from rich.console import Console

    from stepscope.report.text.monitor import render_monitor

    s = _samples(oncpu=0.9, phases={"forward": 0.5, "backward": 0.3, "optimizer": 0.004},
                 steps=True, read=2048.0, gpu={"util": 40.0, "power": 250.0})
    s.columns["cpu"] = [20.0, 80.0] * (N // 2)  # mean 50 %
    s.columns["main_cpu"] = [90.0] * N
    s.columns["main_rss"] = [3.0 * 2**30] * N
    s = dataclasses.replace(s, command="python train.py")
    data = monitor_json(s, verdict(s), samples_file="logs/r/monitor.parquet")
    out = io.StringIO()
    render_monitor(data, s, Console(file=out, width=80))
    lines = [line.rstrip() for line in out.getvalue().splitlines()]
    assert "30 samples at 10 Hz over 3.0 s; 2 cores; GPUs: H100" in lines
    assert "bound: cpu  (confidence high)" in lines
    # phases under 0.5 % (the optimizer's 0.4 %) are left out
    assert "main process (2.8 s window): forward 50%, backward 30%" in lines
    assert "28 optimizer steps, 28 batches, 10.00 steps/s, 80.0 samples/s" in lines
    means = {line[:18].strip(): line.split("  ")[-1].strip() for line in lines
             if line[18:19] in set("▁▂▃▄▅▆▇█")}
    assert means == {"host CPU": "50 %", "main process CPU": "90 %",
                     "main CPU demand": "90 %", "main process RSS": "3.00 GiB",
                     "program read": "2.00 KiB/s", "GPU0 util": "40 %",
                     "GPU0 power": "250 W"}
    assert "samples: logs/r/monitor.parquet" in lines


def test_phases_are_exclusive(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from stepscope.capture.monitor import phases

    page = str(tmp_path / "page")
    phases.create(page)
    board = phases.Board(page)
    clock = iter([0.0, 1.0, 3.0, 4.0, 10.0, 11.0, 12.0])
    monkeypatch.setattr(phases.time, "perf_counter", lambda: next(clock))
    board.enter("optimizer")  # 0
    board.enter("forward")  # 1: optimizer 1 s
    board.leave("forward")  # 3: forward 2 s
    board.leave("optimizer")  # 4: optimizer 1 s more
    board.enter("optimizer")  # 10
    board.enter("sync")  # 11: optimizer +1, then an exception skips the sync's end
    board.leave("optimizer")  # 12: sync 1 s, optimizer closed too
    counters, _ = phases.read(page)
    assert (counters["optimizer"], counters["forward"], counters["sync"]) == (3.0, 2.0, 1.0)
    board.publish_pids([11, 12])
    board.publish_pids([12, 13])
    assert phases.read(page)[1] == [11, 12, 13]


# -- NVML through a fake pynvml ---------------------------------------------------------


class _Value:
    def __init__(self, ull: int) -> None:
        self.nvmlReturn = 0
        self.valueType = 3
        self.value = types.SimpleNamespace(ullVal=ull)


def _fake_pynvml(gpm: bool) -> types.ModuleType:
    nv = types.ModuleType("pynvml")
    counter = {"n": 0}

    class MetricsGet:
        def __init__(self) -> None:
            self.version = 0
            self.numMetrics = 0
            self.sample1 = self.sample2 = None
            self.metrics = [types.SimpleNamespace(metricId=0, nvmlReturn=0, value=0.0)
                            for _ in range(8)]

    def field_values(handle: Any, fields: list[int]) -> list[_Value]:
        counter["n"] += 1
        return [_Value(counter["n"] * 1_000_000 * (f % 10 + 1)) for f in fields]

    def metrics_get(request: MetricsGet) -> MetricsGet:
        values = {2: 91.0, 3: 40.0, 5: 55.0, 10: 72.0}
        for m in request.metrics[:request.numMetrics]:
            m.value = values[m.metricId]
        return request

    def unsupported(*args: Any) -> Any:
        raise RuntimeError("NVML_ERROR_NOT_SUPPORTED")

    attrs: dict[str, Any] = {
        "nvmlInit": lambda: None, "nvmlShutdown": lambda: None,
        "nvmlDeviceGetCount": lambda: 1,
        "nvmlDeviceGetHandleByIndex": lambda i: f"h{i}",
        "nvmlDeviceGetName": lambda h: b"NVIDIA H100 80GB HBM3",
        "nvmlDeviceGetUtilizationRates": lambda h: types.SimpleNamespace(gpu=97, memory=64),
        "nvmlDeviceGetMemoryInfo": lambda h: types.SimpleNamespace(used=40 << 30),
        "nvmlDeviceGetPowerUsage": lambda h: 612_000,
        "NVML_CLOCK_SM": 1, "nvmlDeviceGetClockInfo": lambda h, c: 1980,
        "nvmlDeviceGetCurrentClocksEventReasons": lambda h: 4,
        "NVML_FI_DEV_PCIE_COUNT_RX_BYTES": 1, "NVML_FI_DEV_PCIE_COUNT_TX_BYTES": 2,
        "NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX": 3, "NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX": 4,
        "nvmlDeviceGetFieldValues": field_values,
        "NVML_GPM_METRIC_SM_UTIL": 2, "NVML_GPM_METRIC_SM_OCCUPANCY": 3,
        "NVML_GPM_METRIC_ANY_TENSOR_UTIL": 5, "NVML_GPM_METRIC_DRAM_BW_UTIL": 10,
        "NVML_GPM_METRICS_GET_VERSION": 1, "c_nvmlGpmMetricsGet_t": MetricsGet,
        "nvmlGpmQueryDeviceSupport": (
            (lambda h: types.SimpleNamespace(isSupportedDevice=1)) if gpm else unsupported),
        "nvmlGpmSampleAlloc": object, "nvmlGpmSampleGet": lambda h, s: None,
        "nvmlGpmSampleFree": lambda s: None, "nvmlGpmMetricsGet": metrics_get,
    }
    for key, value in attrs.items():
        setattr(nv, key, value)
    return nv


def test_nvml_readings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", _fake_pynvml(gpm=True))
    from stepscope.capture.monitor.nvml import Gpus

    gpus = Gpus()
    assert gpus.names == ["NVIDIA H100 80GB HBM3"]
    first = gpus.read(0.1)[0]
    assert math.isnan(first["pcie_rx"])  # a rate needs two readings
    second = gpus.read(0.1)[0]
    gpus.close()
    assert second["util"] == 97 and second["mem_util"] == 64
    assert second["power"] == 612.0 and second["sm_clock"] == 1980
    assert second["throttle"] == 4 and second["mem_used"] == 40 << 30
    assert second["pcie_rx"] == pytest.approx(2_000_000 / 0.1)  # field 1: +2e6 B a tick
    assert second["nvlink_tx"] == pytest.approx(5_000_000 * 1024 / 0.1)  # KiB
    assert (second["sm_active"], second["sm_occupancy"], second["tensor_active"],
            second["dram_bw"]) == (91.0, 40.0, 55.0, 72.0)


def test_nvml_without_gpm_or_driver(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", _fake_pynvml(gpm=False))
    from stepscope.capture.monitor.nvml import Gpus

    reading = Gpus().read(0.1)[0]
    assert reading["util"] == 97 and math.isnan(reading["dram_bw"])
    broken = _fake_pynvml(gpm=False)

    def no_driver() -> None:
        raise RuntimeError("NVML_ERROR_DRIVER_NOT_LOADED")

    broken.nvmlInit = no_driver  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "pynvml", broken)
    assert Gpus().names == []


def test_sampler_with_a_fake_gpu_gives_a_gpu_verdict(monkeypatch: pytest.MonkeyPatch) -> None:
    """The whole path: sampler rows (this process, a fake H100) -> verdict -> JSON."""
    pytest.importorskip("psutil")
    monkeypatch.setitem(sys.modules, "pynvml", _fake_pynvml(gpm=True))
    from stepscope.capture.monitor import store
    from stepscope.capture.monitor.sampler import Sampler

    sampler = Sampler(os.getpid(), None, 100.0)
    for _ in range(8):
        sampler.tick()
    sampler.close()
    samples = store.samples_of(sampler, command="x", duration_s=0.1)
    assert samples.gpu_names == ["NVIDIA H100 80GB HBM3"]
    v = verdict(samples)
    assert v.bound == "memory-bandwidth"  # util 97 %, GPM DRAM bandwidth 72 %
    data = monitor_json(samples, v)
    assert data["metrics"]["gpu0_util"]["mean"] == 97
    assert data["verdict"]["evidence"]["gpu0_dram_bw_pct"] == 72
    import io

    from rich.console import Console

    from stepscope.report.text.monitor import render_monitor

    out = io.StringIO()
    render_monitor(data, samples, Console(file=out, width=80))
    text = out.getvalue()
    assert "bound: memory-bandwidth" in text and "GPU0 util" in text
    assert "GPU0 dram_bw" in text and "NVIDIA H100 80GB HBM3" in text
    assert max(len(line) for line in text.splitlines()) <= 80


def test_without_the_monitor_extra(monkeypatch: pytest.MonkeyPatch,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    """No psutil: one line naming the extra, exit 2, before the program starts."""
    from stepscope.cli.main import main

    for name in [m for m in sys.modules if m.startswith("stepscope.capture.monitor")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "psutil", None)
    assert main(["monitor", "--", sys.executable, __file__]) == 2
    err = capsys.readouterr().err
    assert "pip install 'stepscope[monitor]'" in err
    assert len(err.strip().splitlines()) == 1


def _fake_amdsmi() -> types.ModuleType:
    smi = types.ModuleType("amdsmi")

    def no_clock(*args: Any) -> Any:
        raise RuntimeError("AMDSMI_STATUS_NOT_SUPPORTED")

    attrs: dict[str, Any] = {
        "amdsmi_init": lambda: None, "amdsmi_shut_down": lambda: None,
        "amdsmi_get_processor_handles": lambda: ["a0", "a1"],
        "amdsmi_get_gpu_asic_info": lambda h: {"market_name": "AMD Instinct MI300X"},
        "amdsmi_get_gpu_activity": lambda h: {"gfx_activity": 88, "umc_activity": 41,
                                              "mm_activity": "N/A"},
        "amdsmi_get_gpu_vram_usage": lambda h: {"vram_used": 1024, "vram_total": 196592},
        # MI300: current_socket_power; average_socket_power unsupported (UINT32_MAX)
        "amdsmi_get_power_info": lambda h: (
            {"current_socket_power": 550, "average_socket_power": (1 << 32) - 1}
            if h == "a0" else {"current_socket_power": "N/A", "average_socket_power": 300}),
        "AmdSmiClkType": types.SimpleNamespace(GFX=0),
        "amdsmi_get_clock_info": lambda h, t: {"clk": 2100} if h == "a0" else no_clock(),
    }
    for key, value in attrs.items():
        setattr(smi, key, value)
    return smi


def test_amd_gpus_through_a_fake_amdsmi(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "amdsmi", _fake_amdsmi())
    from stepscope.capture.monitor.amd import AmdGpus

    gpus = AmdGpus()
    assert gpus.names == ["AMD Instinct MI300X"] * 2
    first, second = gpus.read(0.1)
    gpus.close()
    assert (first["util"], first["mem_util"]) == (88.0, 41.0)
    assert first["mem_used"] == 1024 * (1 << 20)  # MB (MiB) -> bytes
    assert (first["power"], second["power"]) == (550.0, 300.0)  # whichever is supported
    assert first["sm_clock"] == 2100 and math.isnan(second["sm_clock"])
    assert math.isnan(first["dram_bw"]) and math.isnan(first["pcie_rx"])


def test_sampler_falls_back_to_amd_without_nvidia(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("psutil")
    no_nvml = _fake_pynvml(gpm=False)
    no_nvml.nvmlDeviceGetCount = lambda: 0  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "pynvml", no_nvml)
    monkeypatch.setitem(sys.modules, "amdsmi", _fake_amdsmi())
    from stepscope.capture.monitor.sampler import Sampler

    sampler = Sampler(os.getpid(), None, 100.0)
    sampler.tick()
    sampler.close()
    assert sampler.gpus.names == ["AMD Instinct MI300X"] * 2
    assert sampler.columns["gpu_util"][-1] == [88.0, 88.0]


def test_sampler_columns_line_up_when_the_phases_page_fails(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A phases page unreadable on one tick (or first read after sampling began) left the
    phase columns shorter than the others: the Parquet table could not be built."""
    pytest.importorskip("psutil")
    from stepscope.capture.monitor import phases
    from stepscope.capture.monitor.sampler import Sampler

    reads = iter([OSError, OSError, {"steps": 1.0}, OSError, {"steps": 3.0}])

    def read(board: object) -> tuple[dict[str, float], list[int]]:
        got = next(reads)
        if got is OSError:
            raise OSError("busy")
        assert isinstance(got, dict)
        return got, []

    monkeypatch.setattr(phases, "read", read)
    sampler = Sampler(os.getpid(), None, 100.0)
    sampler.board = object()  # type: ignore[assignment]
    for _ in range(4):  # fails, fails, reads 1 step, fails
        sampler.tick()
    sampler.close()
    lengths = {len(v) for v in sampler.columns.values()}
    assert lengths == {4}
    assert sampler.columns["phase_steps"] == [0, 0, 1.0, 1.0]  # 0 before, then carried


def test_saturated_workers_waiting_for_a_cpu_are_not_told_to_add_workers() -> None:
    """Workers that want a CPU 95 % of the time but run 14 % of a core wait for one: the host's
    other processes hold the cores, so adding workers cannot help."""
    v = verdict(_samples(oncpu=0.05, phases={"data": 0.9}, steps=True, workers=2,
                         worker_demand=0.95, worker_cpu=14.0))
    assert v.bound == "input" and "2 workers saturated, but waiting for a CPU" in v.next_step
    assert "runs only 14% of a core" in v.next_step and "add workers" not in v.next_step
    v = verdict(_samples(oncpu=0.05, phases={"data": 0.9}, steps=True, workers=2,
                         worker_demand=0.95))
    assert "(each runs 95% of a core" in v.next_step and "add workers" in v.next_step
