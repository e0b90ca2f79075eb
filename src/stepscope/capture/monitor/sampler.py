"""The sampler: reads the machine and the monitored program's process tree at ``hz``.

It runs outside the program: in the ``stepscope monitor`` parent while the program runs
as its child, or as ``python -m stepscope.capture.monitor.sampler`` started by
``stepscope.monitor()``. One row per tick; rates are deltas over the tick divided by its
length. Column meanings are in docs/monitor.md.

The process tree: the main process (the program), its DataLoader workers and the other
descendants. Workers are the pids the program's DataLoader hook published
(``phases``); without hooks (no shared page), the direct children of the main process
that are ``multiprocessing`` children (a fork with the parent's command line, or a
``multiprocessing.spawn``/``forkserver`` command line) stand in for them.
"""

from __future__ import annotations

import math
import os
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import psutil

from stepscope.capture.monitor import phases
from stepscope.capture.monitor.amd import AmdGpus
from stepscope.capture.monitor.nvml import GPU_METRICS, Gpus

NAN = math.nan
_CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


@dataclass
class _Last:
    """A process's cumulative counters at the previous tick."""

    cpu: float
    run: float
    wait: float
    read: float
    write: float
    majflt: float


@dataclass
class Sampler:
    pid: int
    board: str | None = None  # the phases' shared page
    hz: float = 10.0
    columns: dict[str, list[Any]] = field(default_factory=dict)
    started: float = field(default_factory=time.monotonic)
    started_wall: float = field(default_factory=time.time)

    def __post_init__(self) -> None:
        self._main = psutil.Process(self.pid)
        self._main_cmdline = _cmdline(self._main)
        self._procs: dict[int, psutil.Process] = {self.pid: self._main}
        self._last: dict[int, _Last] = {}
        self._last_t = time.monotonic()
        self._host = _host_counters()
        psutil.cpu_percent(percpu=True)  # the first call only sets the baseline
        self.gpus: Gpus | AmdGpus = Gpus()
        if not self.gpus.names:  # no NVIDIA GPU: AMD SMI, when installed
            self.gpus.close()
            self.gpus = AmdGpus()
        self.n_cores = psutil.cpu_count() or 1
        self.ticks_cpu_s = 0.0  # the sampler's own CPU time, for the overhead figure
        self._published: list[int] = []
        self._tick(first=True)

    # -- the loop ------------------------------------------------------------------------

    def run_until(self, done: Callable[[], bool]) -> None:
        period = 1.0 / self.hz
        next_at = time.monotonic() + period
        while not done():
            delay = next_at - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            next_at = max(next_at + period, time.monotonic())
            if done():
                break
            self.tick()

    def tick(self) -> None:
        self._tick(first=False)

    def close(self) -> None:
        self.gpus.close()

    # -- one tick --------------------------------------------------------------------------

    def _tick(self, *, first: bool) -> None:
        cpu0 = time.process_time()
        now = time.monotonic()
        dt = max(now - self._last_t, 1e-6)
        self._last_t = now
        row: dict[str, Any] = {"t": now - self.started, "wall": time.time()}
        self._host_row(row, dt)
        self._tree_row(row, dt, first=first)
        self._phases_row(row)
        gpus = self.gpus.read(dt)
        for key in GPU_METRICS:
            row[f"gpu_{key}"] = [g[key] for g in gpus]
        if not first:
            self._append(row)
        self.ticks_cpu_s += time.process_time() - cpu0

    def _append(self, row: dict[str, Any]) -> None:
        """Add a tick's row to the columns, one entry per tick in every column, so they
        always line up (the Parquet table and the summaries index them together). The phase
        columns are cumulative counters: a tick whose phases page could not be read repeats
        the last reading, and counters that appear late (the program imported torch after
        sampling began) were 0 before."""
        ticks = len(self.columns.get("t", []))
        for key in row.keys() - self.columns.keys():
            self.columns[key] = [0 if key.startswith("phase_") else None] * ticks
        for key, values in self.columns.items():
            values.append(row[key] if key in row else (values[-1] if values else None))

    def _host_row(self, row: dict[str, Any], dt: float) -> None:
        cores = psutil.cpu_percent(percpu=True)
        row["cores"] = [float(c) for c in cores]
        row["cpu"] = float(sum(cores) / max(len(cores), 1))
        counters = _host_counters()
        last, self._host = self._host, counters
        busy = counters["cpu_total"] - last["cpu_total"]
        row["iowait"] = (100.0 * (counters["iowait"] - last["iowait"]) / busy
                         if busy > 0 else 0.0)
        for key in ("disk_read", "disk_write", "net_recv", "net_sent", "major_faults"):
            row[key] = max(counters[key] - last[key], 0.0) / dt

    def _tree_row(self, row: dict[str, Any], dt: float, *, first: bool) -> None:
        found = [self._procs.get(pid) or _process(pid) for pid in _descendants(self.pid)]
        children = [c for c in found if c is not None]
        workers = self._workers(children)
        groups: dict[str, list[psutil.Process]] = {
            "main": [self._main],
            "workers": [c for c in children if c.pid in workers],
            "others": [c for c in children if c.pid not in workers],
        }
        seen: set[int] = set()
        read = write = 0.0
        for group, procs in groups.items():
            cpu = rss = demand = in_io = 0.0
            alive = 0
            for proc in procs:
                proc = self._procs.setdefault(proc.pid, proc)
                seen.add(proc.pid)
                reading = _read_process(proc)
                if reading is None:
                    continue
                alive += 1
                now, state, rss_now = reading
                last = self._last.get(proc.pid)
                if last is None:  # a process born after the start counts from zero
                    born_after = _create_time(proc) >= self.started_wall
                    last = _Last(0, 0, 0, 0, 0, 0) if born_after and not first else now
                self._last[proc.pid] = now
                cpu += (now.cpu - last.cpu) / dt
                rss += rss_now
                demand += (now.run - last.run + now.wait - last.wait) / dt
                in_io += state == psutil.STATUS_DISK_SLEEP
                read += max(now.read - last.read, 0.0) / dt
                write += max(now.write - last.write, 0.0) / dt
                if group == "main":
                    row["main_oncpu"] = (now.run - last.run) / dt
                    row["main_runqueue"] = (now.wait - last.wait) / dt
                    row["main_state"] = state
                    row["main_major_faults"] = max(now.majflt - last.majflt, 0.0) / dt
            row[f"{group}_count"] = alive
            row[f"{group}_cpu"] = 100.0 * cpu
            row[f"{group}_rss"] = rss
            row[f"{group}_demand"] = demand
            row[f"{group}_io"] = in_io
        row.setdefault("main_oncpu", NAN)
        row.setdefault("main_runqueue", NAN)
        row.setdefault("main_state", "gone")
        row.setdefault("main_major_faults", NAN)
        row["tree_read"], row["tree_write"] = read, write
        for pid in list(self._procs):
            if pid not in seen:
                self._procs.pop(pid)
                self._last.pop(pid, None)

    def _workers(self, children: list[psutil.Process]) -> set[int]:
        if self.board is not None:
            return set(self._published)
        workers = set()
        for child in children:
            try:
                if child.ppid() != self.pid:
                    continue
            except psutil.Error:
                continue
            cmdline = _cmdline(child)
            if cmdline == self._main_cmdline or "multiprocessing" in " ".join(cmdline):
                workers.add(child.pid)
        return workers

    def _phases_row(self, row: dict[str, Any]) -> None:
        if self.board is None:
            return
        try:
            counters, pids = phases.read(self.board)
        except OSError:
            return
        self._published = pids
        for key, value in counters.items():
            row[f"phase_{key}"] = value


def _descendants(pid: int) -> list[int]:
    """Every descendant of ``pid``, from ``/proc/PID/task/TID/children`` (a few small
    files, where psutil's ``children()`` reads every process's stat file: ~5 ms a tick on
    a machine running 100 processes); psutil where the kernel has no such file."""
    if not os.path.exists(f"/proc/{pid}/task/{pid}/children"):
        try:
            return [c.pid for c in psutil.Process(pid).children(recursive=True)]
        except psutil.Error:
            return []
    out: list[int] = []
    todo = [pid]
    while todo:
        parent = todo.pop()
        try:
            tids = os.listdir(f"/proc/{parent}/task")
        except OSError:  # it ended meanwhile
            continue
        for tid in tids:
            try:
                with open(f"/proc/{parent}/task/{tid}/children", "rb") as fh:
                    found = [int(x) for x in fh.read().split()]
            except (OSError, ValueError):  # the thread ended meanwhile
                continue
            out += found
            todo += found
    return out


def _process(pid: int) -> psutil.Process | None:
    try:
        return psutil.Process(pid)
    except psutil.Error:
        return None


def _cmdline(proc: psutil.Process) -> list[str]:
    try:
        return list(proc.cmdline())
    except psutil.Error:
        return []


def _create_time(proc: psutil.Process) -> float:
    try:
        return float(proc.create_time())
    except psutil.Error:
        return 0.0


def _read_process(proc: psutil.Process) -> tuple[_Last, str, float] | None:
    """(cumulative counters, state, RSS) of a process; None when it is gone."""
    try:
        with proc.oneshot():
            times = proc.cpu_times()
            state = proc.status()
            rss = float(proc.memory_info().rss)
            try:
                io = proc.io_counters()
                read, write = float(io.read_bytes), float(io.write_bytes)
            except (psutil.AccessDenied, AttributeError):
                read = write = 0.0
    except psutil.Error:
        return None
    run, wait = _schedstat(proc.pid, times.user + times.system)
    return _Last(times.user + times.system, run, wait, read, write,
                 _major_faults(proc.pid)), state, rss


def _schedstat(pid: int, cpu_fallback: float) -> tuple[float, float]:
    """The main thread's time on a CPU and waiting for one (s), from
    ``/proc/PID/schedstat``; off Linux, CPU time and no wait."""
    try:
        with open(f"/proc/{pid}/schedstat", "rb") as fh:
            run_ns, wait_ns, _ = fh.read().split()
        return int(run_ns) / 1e9, int(wait_ns) / 1e9
    except (OSError, ValueError):
        return cpu_fallback, 0.0


def _major_faults(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            fields = fh.read().rsplit(b")", 1)[1].split()
        return float(fields[9])  # majflt: field 12 of proc(5), the 10th after the name
    except (OSError, ValueError, IndexError):
        return NAN


def _host_counters() -> dict[str, float]:
    times = psutil.cpu_times()
    disk = psutil.disk_io_counters()
    net = psutil.net_io_counters()
    return {
        "cpu_total": float(sum(times)),
        "iowait": float(getattr(times, "iowait", 0.0)),
        "disk_read": float(disk.read_bytes) if disk else 0.0,
        "disk_write": float(disk.write_bytes) if disk else 0.0,
        "net_recv": float(net.bytes_recv) if net else 0.0,
        "net_sent": float(net.bytes_sent) if net else 0.0,
        "major_faults": _vmstat("pgmajfault"),
    }


def _vmstat(name: str) -> float:
    try:
        with open("/proc/vmstat", "rb") as fh:
            for line in fh:
                key, _, value = line.partition(b" ")
                if key == name.encode():
                    return float(value)
    except OSError:
        pass
    return 0.0


def main(argv: list[str]) -> int:
    """``python -m stepscope.capture.monitor.sampler PID BOARD HZ OUT``: sample until
    SIGTERM or until PID ends, then write the samples (``stepscope.monitor()``)."""
    from stepscope.capture.monitor.store import write_samples

    pid, board, hz, out = int(argv[0]), argv[1], float(argv[2]), argv[3]
    stop = [False]

    def on_term(signum: int, frame: Any) -> None:
        stop[0] = True

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the program's to handle
    sampler = Sampler(pid, board or None, hz)
    with open(out + ".ready", "w"):  # the first reading is taken: the block may start
        pass
    try:
        sampler.run_until(lambda: stop[0] or not psutil.pid_exists(pid))
    finally:
        sampler.close()
        write_samples(out, sampler)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
