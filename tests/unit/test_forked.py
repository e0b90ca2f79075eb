"""stepscope.forked: a child's result is exactly the serial one, failures included; and the
report built with its critical paths and replays in children equals the serial report."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from tests.builders import TraceBuilder

from stepscope import forked
from stepscope.advice import Replays, advise_replayed
from stepscope.analysis.events.links import Links
from stepscope.analysis.graph.window import Window
from stepscope.analysis.suite import run_analyses
from stepscope.forked import Forked, Served
from stepscope.model.trace import Trace
from stepscope.report.build import build_report
from stepscope.report.json.render import render_json

needs_fork = pytest.mark.skipif(not hasattr(os, "fork") or (os.cpu_count() or 1) < 2,
                                reason="no fork or a single core")


@pytest.fixture(autouse=True)
def _one_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests fork on purpose: threads other tests left running (a browser test's
    server) would make ``can_fork`` refuse, which its own test below checks."""
    monkeypatch.setattr(forked.threading, "active_count", lambda: 1)


@needs_fork
def test_result_comes_from_the_child() -> None:
    job = Forked(lambda: (os.getpid(), [1, 2, 3]))
    pid, value = job.result()
    assert pid != os.getpid() and value == [1, 2, 3]


@needs_fork
def test_a_failing_child_is_recomputed_in_the_caller() -> None:
    parent = os.getpid()

    def flaky() -> int:
        if os.getpid() != parent:
            raise RuntimeError("only in the child")
        return 7

    assert Forked(flaky).result() == 7
    with pytest.raises(ZeroDivisionError):  # the caller sees the serial run's error
        Forked(lambda: 1 // 0).result()


@needs_fork
def test_unpicklable_result_is_recomputed() -> None:
    assert callable(Forked(lambda: (lambda: 3)).result())


@needs_fork
def test_close_stops_an_unwanted_child() -> None:
    job = Forked(lambda: time.sleep(60))
    job.close()  # returns at once: the child is killed and reaped
    job.close()


def test_no_fork_beside_other_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    """A child forked beside other threads could wait forever on a lock one of them held:
    in a threaded process (the dashboard's server) the work runs in the caller."""
    monkeypatch.setattr(forked.threading, "active_count", lambda: 2)
    assert not forked.can_fork()
    assert Forked(os.getpid).result() == os.getpid()


def test_disabled_runs_in_the_caller() -> None:
    assert Forked(os.getpid, enabled=False).result() == os.getpid()


@needs_fork
def test_served_answers_come_from_the_prepared_child() -> None:
    parent = os.getpid()
    job: Served[int, int, tuple[int, int, int]] = Served(
        os.getpid, lambda pid, q: (pid, os.getpid(), q * 2))
    try:
        first, second = job.ask(1), job.ask(21)
    finally:
        job.close()
    assert first[0] == first[1] != parent  # prepared and answered in the one child
    assert second == (first[0], first[1], 42)  # the same state answers every question


@needs_fork
def test_served_failures_are_answered_in_the_caller() -> None:
    parent = os.getpid()

    def prepare() -> int:
        if os.getpid() != parent:
            raise RuntimeError("only in the child")
        return 5

    job: Served[int, int, int] = Served(prepare, lambda s, q: s + q)
    assert job.ask(1) == 6 and job.ask(2) == 7  # prepared here once the child failed
    job.close()

    def answer(state: int, q: int) -> int:
        if os.getpid() != parent and q == 2:
            os._exit(3)  # a crash in the middle of the answers
        return state + q

    job = Served(lambda: 10, answer)
    assert [job.ask(1), job.ask(2), job.ask(3)] == [11, 12, 13]
    job.close()
    unpicklable: Served[int, int, object] = Served(lambda: 1, lambda s, q: lambda: s + q)
    reply = unpicklable.ask(1)
    assert callable(reply) and reply() == 2
    unpicklable.close()
    zero: Served[int, int, int] = Served(lambda: 0, lambda s, q: q // s)
    with pytest.raises(ZeroDivisionError):  # the caller sees the serial run's error
        zero.ask(1)


@needs_fork
def test_served_idle_work_runs_until_the_first_question(tmp_path: Path) -> None:
    """The child works ahead a step at a time while no question has come; a question
    stops it at the next step; the answers may use what was done ahead. (The caller waits
    for the child's first step, not for a time: the test holds on a loaded machine.)"""
    started = tmp_path / "started"

    def ahead(state: list[int]) -> Iterator[None]:
        for k in range(1000):
            yield
            state.append(k)
            started.touch()
            time.sleep(0.01)

    job: Served[list[int], int, list[int]] = Served(list, lambda s, q: [*s, q], idle=ahead)
    try:
        _wait_for(started)
        first = job.ask(-1)
        second = job.ask(-2)
    finally:
        job.close()
    done = first[:-1]
    assert done == list(range(len(done))) and 0 < len(done) < 1000  # stopped early
    assert second == [*done, -2]  # no more work ahead once asked


def _wait_for(path: Path, limit_s: float = 120.0) -> None:
    """Until ``path`` exists (a forked child's sign that it got somewhere)."""
    deadline = time.monotonic() + limit_s
    while not path.exists():
        assert time.monotonic() < deadline, f"the child never wrote {path.name}"
        time.sleep(0.01)


def test_served_idle_work_never_runs_in_the_caller() -> None:
    ran: list[int] = []

    def ahead(state: int) -> Iterator[None]:
        ran.append(state)
        yield

    job: Served[int, int, int] = Served(lambda: 3, lambda s, q: s + q, enabled=False,
                                        idle=ahead)
    assert job.ask(1) == 4 and ran == []
    job.close()


def test_served_not_enabled_prepares_only_when_asked() -> None:
    prepared: list[int] = []

    def prepare() -> int:
        prepared.append(1)
        return 4

    job: Served[int, int, int] = Served(prepare, lambda s, q: s * q, enabled=False)
    assert prepared == []
    assert job.ask(2) == 8 and job.ask(3) == 12 and prepared == [1]
    job.close()


@needs_fork
def test_served_close_stops_an_unasked_child() -> None:
    job: Served[None, int, int] = Served(lambda: time.sleep(60), lambda s, q: q)
    job.close()  # returns at once: the child is killed and reaped
    job.close()


def _trace(tmp_path: Path):  # type: ignore[no-untyped-def]
    """Steps where a host sync and many small launches leave findings to replay."""
    b = TraceBuilder()
    for s in range(4):
        t0 = 10_000.0 * s
        with b.step(s, t0, 9_000):
            b.small_launches(40, 20, start=t0 + 10)
            op = b.op("aten::item", t0 + 1_000, 3_000)
            b.launch(op, "cudaMemcpyAsync", t0 + 1_010, 2_900, kernel="Memcpy DtoH",
                     k_ts=t0 + 3_800, k_dur=100, cat="gpu_memcpy")
            b.runtime("cudaStreamSynchronize", t0 + 1_020, 2_950, owner=op)
            big = b.op("aten::mm", t0 + 4_100, 200)
            b.launch(big, "cudaLaunchKernel", t0 + 4_110, 5, kernel="sgemm", k_ts=t0 + 4_200,
                     k_dur=4_000)
    return b.load(tmp_path)


@needs_fork
def test_report_with_children_equals_the_serial_report(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    trace = _trace(tmp_path)
    serial = render_json(build_report(trace, monitor=None))
    calls: list[bool] = []
    real = Forked.__init__

    def spy(self: Forked[object], fn: object, *, enabled: bool = True) -> None:
        calls.append(enabled)
        real(self, fn, enabled=enabled)  # type: ignore[arg-type]

    monkeypatch.setattr(forked, "MIN_EVENTS", 0)
    monkeypatch.setattr(Forked, "__init__", spy)
    analyses = run_analyses(trace)
    findings, combined = advise_replayed(analyses)
    # the critical paths; the replays run one after another where the graph is
    assert calls == [True]
    assert combined is not None and any(f.method == "replay" for f in findings)
    served: list[bool] = []
    real_replays = Replays.__init__

    def spy_replays(self: Replays, trace: Trace, links: Links, windows: list[Window], *,
                    background: bool = False, aside: Callable[[], object] | None = None,
                    ) -> None:
        served.append(background)
        real_replays(self, trace, links, windows, background=background, aside=aside)

    monkeypatch.setattr(Replays, "__init__", spy_replays)
    assert render_json(build_report(trace, monitor=None)) == serial
    assert served == [True]  # the replay graph was built beside the analyses


def test_no_process_to_be_had_runs_in_the_caller(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse() -> int:
        raise BlockingIOError("fork: Resource temporarily unavailable")

    monkeypatch.setattr(os, "fork", refuse)
    monkeypatch.setattr(forked, "can_fork", lambda: True)
    before = len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else 0
    assert Forked(os.getpid).result() == os.getpid()
    after = len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else 0
    assert after == before  # the pipe was closed


@needs_fork
def test_the_replay_childs_runs_equal_the_serial_ones(tmp_path: Path) -> None:
    """The replay child, asked once its graph is built and its work aside done, answers
    what the replays in this process give."""
    trace = _trace(tmp_path)
    analyses = run_analyses(trace)
    windows = list(analyses.windows)
    wanted = (("drop_sync",), ("remove_launch_overhead",),
              ("drop_sync", "remove_launch_overhead"))
    here = Replays(trace, analyses.links, windows)
    serial = here.runs(wanted)
    here.close()
    child = Replays(trace, analyses.links, windows, background=True, aside=lambda: 1)
    try:
        time.sleep(0.5)  # past its graph and its work aside
        got = child.runs(wanted)
    finally:
        child.close()
    assert serial is not None and got == serial


@needs_fork
def test_work_aside_is_done_by_the_replay_child(tmp_path: Path) -> None:
    """The child does the work aside once its graph is built; the caller's meanwhile work
    gets its value (None where there is no child: it then does the work itself)."""
    trace = _trace(tmp_path)
    analyses = run_analyses(trace)
    windows = list(analyses.windows)
    wanted = (("drop_sync",),)
    got: list[object] = []
    done = tmp_path / "aside-done"

    def aside() -> int:
        done.touch()
        return os.getpid()

    replays = Replays(trace, analyses.links, windows, background=True, aside=aside)
    try:
        _wait_for(done)  # the child built its graph, then worked aside
        replays.meanwhile(got.append)
        runs = replays.runs(wanted)
    finally:
        replays.close()
    assert len(got) == 1 and isinstance(got[0], int) and got[0] != os.getpid()
    here = Replays(trace, analyses.links, windows, aside=os.getpid)
    here.meanwhile(got.append)
    assert here.runs(wanted) == runs and got[1] is None  # not forked: nothing aside
    here.close()


@needs_fork
def test_failed_work_aside_is_left_to_the_caller(tmp_path: Path) -> None:
    """A failure aside gives the meanwhile work None (the caller does the work and meets
    the error where it reads the value); the replays go on in the child. With no runs
    asked, ``settle`` runs the meanwhile work."""
    trace = _trace(tmp_path)
    analyses = run_analyses(trace)

    def fails() -> object:
        raise ValueError("no table")

    got: list[object] = []
    replays = Replays(trace, analyses.links, list(analyses.windows), background=True,
                      aside=fails)
    try:
        time.sleep(0.5)
        replays.meanwhile(got.append)
        runs = replays.runs((("drop_sync",),))
        replays.settle()  # nothing left: the meanwhile work ran once
    finally:
        replays.close()
    assert got == [None]
    assert runs is not None and runs[("drop_sync",)].after.step_ns > 0


@needs_fork
def test_settling_never_waits_for_the_replay_child(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """With nothing to replay, the meanwhile work runs here at once (None: do it yourself):
    the child, which may still be building its graph, is not asked."""
    trace = _trace(tmp_path)
    analyses = run_analyses(trace)

    def slow(*args: object) -> object:
        time.sleep(60)  # a graph that takes long to build
        raise AssertionError("never needed")

    monkeypatch.setattr("stepscope.advice.replay._replaying", slow)
    got: list[object] = []
    idle = Replays(trace, analyses.links, list(analyses.windows), background=True,
                   aside=os.getpid)
    started = time.monotonic()
    try:
        idle.meanwhile(got.append)
        idle.settle()
    finally:
        idle.close()
    assert got == [None] and time.monotonic() - started < 30
