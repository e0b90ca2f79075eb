"""stepscope.profile on real CPU workloads: files, names, steps where the schedule put them."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

import stepscope
from stepscope.capture import Profile, paths
from stepscope.errors import UsageError

torch = pytest.importorskip("torch")

NAME = re.compile(r"^(?P<host>[\w.-]+)_(?P<pid>\d+)(_rank(?P<rank>\d+))?\.(?P<ms>\d{13})"
                  r"\.pt\.trace\.json(?P<gz>\.gz)?$")


def _train(prof: Profile, steps: int) -> None:
    model = torch.nn.Linear(32, 8)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(steps):
        model(torch.randn(4, 32)).sum().backward()
        opt.step()
        opt.zero_grad()
        prof.step()


def _steps(path: str) -> list[str]:
    trace = stepscope.load(path, cache=False)
    return sorted({trace.name(int(i)) for i in trace.host.name
                   if trace.name(int(i)).startswith("ProfilerStep#")})


def test_schedule_writes_one_gzip_trace_with_the_active_steps(tmp_path: Path) -> None:
    with stepscope.profile(str(tmp_path), run="exp 1", wait=2, warmup=1, active=2) as prof:
        _train(prof, 8)
    assert len(prof.trace_paths) == 1
    path = prof.trace_paths[0]
    assert os.path.dirname(path) == str(tmp_path / "exp_1")
    match = NAME.match(os.path.basename(path))
    assert match, path
    assert match["pid"] == str(os.getpid()) and match["gz"] and match["rank"] is None
    with open(path, "rb") as fh:
        assert fh.read(2) == b"\x1f\x8b"
    # wait 2 (steps 0-1) + warmup 1 (step 2): steps 3 and 4 are recorded
    assert _steps(path) == ["ProfilerStep#3", "ProfilerStep#4"]
    trace = prof.load()
    assert trace.meta.format == "kineto" and not trace.has_gpu
    assert oct(os.stat(path).st_mode & 0o777) == oct(0o666 & ~_umask())


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_repeat_writes_one_file_per_cycle(tmp_path: Path) -> None:
    with stepscope.profile(str(tmp_path), run="r", wait=0, warmup=1, active=1,
                            repeat=2) as prof:
        _train(prof, 6)
    assert [_steps(p) for p in prof.trace_paths] == [["ProfilerStep#1"], ["ProfilerStep#3"]]


def test_active_none_records_every_step_until_exit(tmp_path: Path) -> None:
    with stepscope.profile(str(tmp_path), run="r", active=None, gzip=False) as prof:
        _train(prof, 3)
    assert len(prof.trace_paths) == 1
    assert prof.trace_paths[0].endswith(".pt.trace.json")
    assert _steps(prof.trace_paths[0]) == [f"ProfilerStep#{i}" for i in range(4)]


def test_unfinished_cycle_is_written_on_exit(tmp_path: Path) -> None:
    with stepscope.profile(str(tmp_path), run="r", wait=0, warmup=1, active=5) as prof:
        _train(prof, 3)
    assert _steps(prof.trace_paths[0])[:2] == ["ProfilerStep#1", "ProfilerStep#2"]


def test_rank_in_file_name_and_callback(tmp_path: Path) -> None:
    seen: list[object] = []
    with stepscope.profile(str(tmp_path), run="r", rank=3, wait=0, warmup=1, active=1,
                            on_trace_ready=seen.append) as prof:
        _train(prof, 3)
    match = NAME.match(os.path.basename(prof.trace_paths[0]))
    assert match and match["rank"] == "3"
    assert seen == [prof]


def test_rank_from_torchrun_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORLD_SIZE", "4")
    monkeypatch.setenv("RANK", "2")
    assert paths.worker_name().endswith(f"_{os.getpid()}_rank2")
    monkeypatch.setenv("TORCHELASTIC_RUN_ID", "job/42")
    assert paths.default_run_name() == "job_42"
    monkeypatch.setenv("STEPSCOPE_RUN", "mine")
    assert paths.default_run_name() == "mine"


def test_default_run_name_single_process(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("STEPSCOPE_RUN", "TORCHELASTIC_RUN_ID", "WORLD_SIZE", "RANK"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr("sys.argv", ["/x/train.py", "--lr", "1"])
    assert re.fullmatch(r"train-\d{8}-\d{6}", paths.default_run_name())


def test_fsspec_url_logdir(tmp_path: Path) -> None:
    fsspec = pytest.importorskip("fsspec")
    with stepscope.profile("memory://logs", run="r", wait=0, warmup=1, active=1) as prof:
        _train(prof, 3)
    url = prof.trace_paths[0]
    assert url.startswith("memory://logs/r/") and url.endswith(".pt.trace.json.gz")
    assert fsspec.filesystem("memory").exists(url)
    assert _steps(url) == ["ProfilerStep#1"]


def test_cpu_only_activities() -> None:
    from stepscope.capture.env import default_activities

    acts = default_activities()
    assert acts[0] == torch.profiler.ProfilerActivity.CPU
    if not torch.cuda.is_available():
        assert acts == [torch.profiler.ProfilerActivity.CPU]


@pytest.mark.parametrize("kwargs", [{"wait": -1}, {"active": 0}, {"repeat": -2}])
def test_bad_schedule(kwargs: dict[str, int]) -> None:
    with pytest.raises(UsageError):
        stepscope.profile("logs", **kwargs)


def test_load_before_any_trace(tmp_path: Path) -> None:
    prof = stepscope.profile(str(tmp_path))
    with pytest.raises(UsageError, match="no trace written yet"):
        prof.load()
