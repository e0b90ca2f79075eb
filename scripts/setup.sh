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
.venv/bin/python -m pip install --quiet -e ".[torch,test,lightning,web,nsys,dask,cloud-test]"
# The web front end (dashboard + HTML report): npm packages from the npm registry, built by
# Vite into src/stepscope/report/static (package data; not committed).
if command -v npm >/dev/null 2>&1; then
  # npm ci installs exactly the lock; when a registry mirror lacks some platform-specific
  # optional packages the lock names (npm then calls it out of sync), npm install resolves.
  (cd frontend && { npm ci --no-audit --no-fund --loglevel=silent \
      || npm install --no-audit --no-fund --loglevel=error; } && npm run --silent build)
else
  echo "setup.sh: npm not found; skipping the front-end build (stepscope view / --html need it)" >&2
fi
# Azure Blob emulator for the cloud tests (Azurite from npm), project-local and git-ignored;
# the tests skip the Azure case with the reason when node/npm is missing.
if command -v npm >/dev/null 2>&1 && [ ! -x .cloud-emulators/node_modules/.bin/azurite-blob ]; then
  mkdir -p .cloud-emulators
  npm install --silent --no-audit --no-fund --prefix .cloud-emulators azurite@3 || true
fi
