"""The Dask executor: a LocalCluster and an existing scheduler give the serial result."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.distributed_builders import write_run

from stepscope.report.run import build_run_report, find_run

distributed = pytest.importorskip("dask.distributed", reason="dask[distributed] not installed")


def test_dask_local_cluster_and_scheduler_equal_serial(tmp_path: Path) -> None:
    write_run(tmp_path, [1000, 1000, 4000, 1000])
    run = find_run([str(tmp_path)])
    serial = build_run_report(run, executor="serial").to_json()
    done: list[int] = []
    local = build_run_report(run, executor="dask", workers=1,
                             progress=lambda d, t: done.append(d)).to_json()
    assert local == serial and done[-1] == 4
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                  dashboard_address=None, host="127.0.0.1") as cluster:
        remote = build_run_report(run, executor="dask", scheduler=cluster.scheduler_address)
    assert remote.to_json() == serial
    assert remote.distributed.stragglers[0].rank == 2


def test_unreachable_scheduler_is_one_line(tmp_path: Path) -> None:
    from tests.cloud_emulators import free_port

    from stepscope.errors import StepscopeError

    write_run(tmp_path, [1000, 2000])
    address = f"tcp://127.0.0.1:{free_port()}"
    with pytest.raises(StepscopeError,
                       match=f"cannot reach the Dask scheduler at {address} within 3 s"):
        build_run_report(find_run([str(tmp_path)]), executor="dask", scheduler=address)


def test_scheduler_connect_timeout_is_a_few_seconds(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """The timeout dask is given, not a measured wait: a test never depends on speed."""
    from stepscope.errors import StepscopeError
    from stepscope.parallel import executor

    asked: list[object] = []

    def client(address: str, timeout: object) -> None:
        asked.append(timeout)
        raise OSError(f"Timed out trying to connect to {address} after {timeout}")

    monkeypatch.setattr(distributed, "Client", client)
    write_run(tmp_path, [1000, 2000])
    with pytest.raises(StepscopeError) as err:
        build_run_report(find_run([str(tmp_path)]), executor="dask",
                         scheduler="tcp://10.0.0.1:8786")
    assert asked == ["3s"] and executor.SCHEDULER_CONNECT_S == 3.0
    assert "\n" not in str(err.value) and "tcp://10.0.0.1:8786" in str(err.value)
