#!/usr/bin/env bash
# Set up and run the whole test suite: lint, types, unit + integration tests.
# Integration tests read real traces from ../shared/traces when present (skipped otherwise).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# Browser tests drive Debian's chromium (never a downloaded browser): install it when missing.
if [ ! -x /usr/bin/chromium ] && command -v apt-get >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && apt-get install -y -qq chromium
  else
    echo "test.sh: /usr/bin/chromium missing and not root; browser tests will be skipped" >&2
  fi
fi
echo "== ruff"
.venv/bin/ruff check src tests benchmarks
echo "== mypy --strict"
.venv/bin/mypy
echo "== lint-imports (layer contracts, pyproject.toml)"
.venv/bin/lint-imports
echo "== pytest"
.venv/bin/python -m pytest -q -p no:cacheprovider "$@"
