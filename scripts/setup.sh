#!/usr/bin/env bash
# Create .venv (idempotent) and install stepscope with its torch, test and dev extras.
# torch is pinned to 2.13.0: on the project's machines that is a local CPU wheel; any other
# version would download gigabytes of CUDA packages.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet "torch==2.13.0"
.venv/bin/python -m pip install --quiet -e ".[torch,test,lightning,dask,cloud-test]"
# Azure Blob emulator for the cloud tests (Azurite from npm), project-local and git-ignored;
# the tests skip the Azure case with the reason when node/npm is missing.
if command -v npm >/dev/null 2>&1 && [ ! -x .cloud-emulators/node_modules/.bin/azurite-blob ]; then
  mkdir -p .cloud-emulators
  npm install --silent --no-audit --no-fund --prefix .cloud-emulators azurite@3 || true
fi
