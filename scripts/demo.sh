#!/usr/bin/env bash
# Set up and run the main job: profile the built-in workload before and after the advised
# fixes, print both reports and write the HTML report.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/stepscope demo "$@"
