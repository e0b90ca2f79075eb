"""s3://, gs://, az:// end to end through the CLI, against local emulators."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.cloud_emulators import (
    AZURITE_KEY,
    BUCKET,
    Upload,
    azure_emulator,
    gcs_emulator,
    s3_emulator,
    upload_dir,
)
from tests.conftest import ROOT
from tests.distributed_builders import write_capture, write_run

__all__ = ["azure_emulator", "gcs_emulator", "s3_emulator"]  # fixtures used by name

SCHEMES = {"s3_emulator": "s3", "gcs_emulator": "gs", "azure_emulator": "az"}


def _cli(env: dict[str, str], *args: str, cache: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "from stepscope.cli.main import entry_point; entry_point()",
         "report", *args],
        env=env | {"XDG_CACHE_HOME": str(cache)}, cwd=ROOT, capture_output=True, text=True,
        timeout=180,
    )


@pytest.fixture(params=list(SCHEMES))
def cloud(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, dict[str, str], Any]:
    env, upload = request.getfixturevalue(request.param)
    scheme = SCHEMES[request.param]
    src = tmp_path / "run"
    src.mkdir()
    write_run(src, [1000, 3500, 1000])
    upload_dir(upload, src, "job")
    spans = tmp_path / "spans"  # two captures of one process (torch.profiler's names)
    spans.mkdir()
    write_capture(spans, "host_7.100.pt.trace.json", base_us=1e6)
    write_capture(spans, "host_7.200.pt.trace.json", base_us=5e6)
    upload_dir(upload, spans, "spans")
    return scheme, env, upload


def test_report_a_cloud_logdir(cloud: tuple[str, dict[str, str], Upload], tmp_path: Path) -> None:
    scheme, env, _ = cloud
    proc = _cli(env, f"{scheme}://{BUCKET}/job/", "--format", "json", "--executor", "serial",
                cache=tmp_path / "cache")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["distributed"]["world_size"] == 3
    assert out["distributed"]["stragglers"][0]["rank"] == 1
    single = _cli(env, f"{scheme}://{BUCKET}/job/rank0.pt.trace.json", "--format", "json",
                  cache=tmp_path / "cache")
    assert single.returncode == 0, single.stderr
    assert json.loads(single.stdout)["distributed"]["rank"] == 0
    # a prefix holding captures of one process: that process's findings, not 2 ranks
    spans = _cli(env, f"{scheme}://{BUCKET}/spans/", "--format", "json", "--executor",
                 "serial", cache=tmp_path / "cache")
    assert spans.returncode == 0, spans.stderr
    doc = json.loads(spans.stdout)
    assert doc["source"]["format"] == "spans" and doc["source"]["process"] == "host_7 (pid 1000)"
    assert [s["steps"] for s in doc["spans"]] == [3, 3] and "distributed" not in doc


def test_missing_object_is_one_line(cloud: tuple[str, dict[str, str], Upload],
                                    tmp_path: Path) -> None:
    scheme, env, _ = cloud
    proc = _cli(env, f"{scheme}://{BUCKET}/job/nope.pt.trace.json", cache=tmp_path / "c")
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "no such object" in proc.stderr


def test_s3_wrong_credentials(s3_emulator: tuple[dict[str, str], Upload], tmp_path: Path,
                              monkeypatch: pytest.MonkeyPatch) -> None:
    import moto.settings

    env, upload = s3_emulator
    upload("auth/rank0.pt.trace.json", b"{}")
    monkeypatch.setattr(moto.settings, "INITIAL_NO_AUTH_ACTION_COUNT", 0)  # check signatures
    bad = env | {"AWS_SECRET_ACCESS_KEY": "wrong-secret-123"}
    for target in (f"s3://{BUCKET}/auth/rank0.pt.trace.json", f"s3://{BUCKET}/auth/"):
        proc = _cli(bad, target, cache=tmp_path / "c")
        assert proc.returncode == 2
        assert proc.stderr.count("\n") == 1 and "access denied" in proc.stderr
        assert "AWS_SECRET_ACCESS_KEY" in proc.stderr and "wrong-secret-123" not in proc.stderr


def test_azure_wrong_credentials(azure_emulator: tuple[dict[str, str], Upload],
                                 tmp_path: Path) -> None:
    env, upload = azure_emulator
    upload("auth/rank0.pt.trace.json", b"{}")
    wrong = "d3Jvbmcta2V5" + "A" * 76
    bad = env | {"AZURE_STORAGE_CONNECTION_STRING":
                 env["AZURE_STORAGE_CONNECTION_STRING"].replace(AZURITE_KEY, wrong)}
    proc = _cli(bad, f"az://{BUCKET}/auth/rank0.pt.trace.json", cache=tmp_path / "c")
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "access denied" in proc.stderr
    assert wrong not in proc.stderr


def test_gcs_wrong_credentials_message() -> None:
    # gcp-storage-emulator accepts any request (it does not authenticate), so the GCS case
    # checks the message for the error google-auth raises on refused credentials.
    from stepscope.io.cloud_errors import storage_error

    class RefreshError(Exception):
        pass

    msg = storage_error("gs://b/x.json", RefreshError("invalid_grant: bad key abc"))
    assert msg == ("gs://b/x.json: access denied; check the credentials "
                   "(GOOGLE_APPLICATION_CREDENTIALS)")
