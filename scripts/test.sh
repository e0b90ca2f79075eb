#!/usr/bin/env bash
# Set up and run the whole test suite: lint, types, unit + integration tests.
# Integration tests read real traces from ../shared/traces when present (skipped otherwise).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
echo "== ruff"
.venv/bin/ruff check src tests benchmarks
echo "== mypy --strict"
.venv/bin/mypy
echo "== pytest"
.venv/bin/python -m pytest -q -p no:cacheprovider "$@"
