"""Local cloud-storage emulators for the end-to-end tests, on loopback addresses only.

- S3: moto's ThreadedMotoServer (PyPI ``moto[server]``), in this process.
- GCS: gcp-storage-emulator (PyPI), in this process, in memory.
- Azure Blob: Azurite (npm), a child process installed by scripts/setup.sh into
  ``.cloud-emulators/`` (or found on PATH).

Each fixture yields (environment for the CLI child process, upload function) and skips with
the reason when its emulator cannot start. Start-up waits are bounded.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.conftest import ROOT

Upload = Callable[[str, bytes], None]  # (key inside the bucket, data)
BUCKET = "runs"
START_TIMEOUT_S = 30.0
# Azurite's documented development account (public, for the emulator only)
AZURITE_KEY = ("Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/"
               "KBHBeksoGMGw==")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for_port(port: int, timeout: float = START_TIMEOUT_S) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return True
        except OSError:
            time.sleep(0.2)
    return False


def _base_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("AWS_", "AZURE_", "GOOGLE_", "STORAGE_EMULATOR"))}
    env["PYTHONPATH"] = str(ROOT / "src") + os.pathsep + str(ROOT)
    env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1,localhost"
    env["GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT"] = "false"  # no gRPC bucket probe (60 s timeout)
    return env


@pytest.fixture(scope="module")
def s3_emulator() -> Iterator[tuple[dict[str, str], Upload]]:
    moto_server = pytest.importorskip("moto.server", reason="moto[server] not installed")
    boto3 = pytest.importorskip("boto3")
    pytest.importorskip("s3fs", reason="s3fs not installed")
    port = free_port()
    try:
        server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=port,
                                                verbose=False)
        server.start()
    except Exception as exc:
        pytest.skip(f"moto server cannot start: {exc}")
    if not wait_for_port(port):
        pytest.skip("moto server did not open its port")
    env = _base_env() | {
        "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "s3-secret-value-xyz",
        "AWS_DEFAULT_REGION": "us-east-1", "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}",
    }
    client = boto3.client("s3", endpoint_url=env["AWS_ENDPOINT_URL"], region_name="us-east-1",
                          aws_access_key_id="testing", aws_secret_access_key="x")
    client.create_bucket(Bucket=BUCKET)

    def upload(key: str, data: bytes) -> None:
        client.put_object(Bucket=BUCKET, Key=key, Body=data)

    yield env, upload
    server.stop()


@pytest.fixture(scope="module")
def gcs_emulator() -> Iterator[tuple[dict[str, str], Upload]]:
    server_mod = pytest.importorskip("gcp_storage_emulator.server",
                                     reason="gcp-storage-emulator not installed")
    pytest.importorskip("gcsfs", reason="gcsfs not installed")
    port = free_port()
    try:
        server = server_mod.create_server("127.0.0.1", port, in_memory=True,
                                          default_bucket=BUCKET)
        server.start()
    except Exception as exc:
        pytest.skip(f"gcp-storage-emulator cannot start: {exc}")
    if not wait_for_port(port):
        pytest.skip("gcp-storage-emulator did not open its port")
    env = _base_env() | {"STORAGE_EMULATOR_HOST": f"http://127.0.0.1:{port}"}
    import requests  # the emulator speaks the JSON API: a simple media upload

    def upload(key: str, data: bytes) -> None:
        r = requests.post(
            f"http://127.0.0.1:{port}/upload/storage/v1/b/{BUCKET}/o",
            params={"uploadType": "media", "name": key}, data=data, timeout=10,
        )
        r.raise_for_status()

    yield env, upload
    server.stop()


def _azurite() -> str | None:
    local = ROOT / ".cloud-emulators" / "node_modules" / ".bin" / "azurite-blob"
    return str(local) if local.exists() else shutil.which("azurite-blob")


@pytest.fixture(scope="module")
def azure_emulator() -> Iterator[tuple[dict[str, str], Upload]]:
    pytest.importorskip("adlfs", reason="adlfs not installed")
    blob = pytest.importorskip("azure.storage.blob")
    exe = _azurite()
    if exe is None:
        pytest.skip("Azurite not installed (scripts/setup.sh installs it with npm into "
                    ".cloud-emulators/)")
    port = free_port()
    location = tempfile.mkdtemp(prefix="azurite-")
    proc = subprocess.Popen(
        [exe, "--blobHost", "127.0.0.1", "--blobPort", str(port), "--location", location,
         "--silent", "--skipApiVersionCheck", "--loose"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        if not wait_for_port(port):
            pytest.skip("Azurite did not open its port")
        conn = (f"DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;"
                f"AccountKey={AZURITE_KEY};BlobEndpoint=http://127.0.0.1:{port}/devstoreaccount1;")
        svc = blob.BlobServiceClient.from_connection_string(conn)
        svc.create_container(BUCKET)
        env = _base_env() | {"AZURE_STORAGE_CONNECTION_STRING": conn}

        def upload(key: str, data: bytes) -> None:
            svc.get_blob_client(BUCKET, key).upload_blob(data, overwrite=True)

        yield env, upload
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        shutil.rmtree(location, ignore_errors=True)


def upload_dir(upload: Upload, directory: Path, prefix: str) -> None:
    for path in sorted(directory.iterdir()):
        upload(f"{prefix}/{path.name}", path.read_bytes())
