#!/usr/bin/env bash
# Run the test suite N times in a row with two CPU hogs beside it: a test that passes only on
# an idle machine depends on the machine's speed, which is a defect (docs/testing: timing goals
# belong in benchmarks/). Prints each run's passes, failures and wall time, then a summary;
# exits 1 if any run failed.
#
#   scripts/stress_suite.sh [-n RUNS] [-j HOGS] [PYTEST ARGS...]
#   scripts/stress_suite.sh -n 10                 # the whole suite, 10 runs, 2 hogs
#   scripts/stress_suite.sh -n 1 -k demo          # a subset, once
#
# PYTHON selects the interpreter (default: .venv/bin/python of this checkout). Each run's
# full pytest output is kept in $STRESS_LOGDIR (default: a fresh temporary folder).
set -euo pipefail
cd "$(dirname "$0")/.."

runs=10
hogs=2
while [ $# -gt 0 ]; do  # our options first; everything after them goes to pytest
  case "$1" in
    -n) runs=${2:-}; shift 2 ;;
    -j) hogs=${2:-}; shift 2 ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    --) shift; break ;;
    *) break ;;
  esac
done
for n in "$runs" "$hogs"; do
  case "$n" in ""|*[!0-9]*) echo "stress_suite.sh: -n and -j take whole numbers" >&2; exit 2 ;; esac
done

python=${PYTHON:-.venv/bin/python}
if [ ! -x "$python" ]; then
  echo "stress_suite.sh: no interpreter at $python (run scripts/setup.sh, or set PYTHON)" >&2
  exit 2
fi
logdir=${STRESS_LOGDIR:-$(mktemp -d -t stepscope-stress.XXXXXX)}
mkdir -p "$logdir"

hog_pids=()
stop_hogs() {
  for pid in "${hog_pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${hog_pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  hog_pids=()
}
trap stop_hogs EXIT
trap 'stop_hogs; exit 130' INT
trap 'stop_hogs; exit 143' TERM
for _ in $(seq 1 "$hogs"); do
  "$python" -c 'while True: pass' &
  hog_pids+=($!)
done
echo "stress_suite.sh: $runs run(s) with $hogs CPU hog(s) (pids ${hog_pids[*]:-none}); logs in $logdir"

failed_runs=0
total_start=$SECONDS
for i in $(seq 1 "$runs"); do
  log="$logdir/run-$i.log"
  start=$SECONDS
  rc=0
  "$python" -m pytest -q -p no:cacheprovider "$@" >"$log" 2>&1 || rc=$?
  wall=$((SECONDS - start))
  # pytest's last line: "== 3 failed, 120 passed, 2 skipped in 81.2s ==" (counts in any order).
  summary=$(tail -n 1 "$log" | sed -e 's/^=* *//' -e 's/ *=*$//')
  count() { printf '%s\n' "$summary" | grep -oE "[0-9]+ $1" | grep -oE '^[0-9]+' || echo 0; }
  passed=$(count passed); failures=$(( $(count failed) + $(count error) ))
  status=ok
  if [ "$rc" -ne 0 ]; then
    status="FAILED (pytest exit $rc)"
    failed_runs=$((failed_runs + 1))
  fi
  printf 'run %d/%d: %s passed, %s failed, %d s wall: %s\n' "$i" "$runs" "$passed" "$failures" \
    "$wall" "$status"
  if [ "$rc" -ne 0 ]; then
    grep -E '^(FAILED|ERROR) ' "$log" | sed 's/^/    /' || true
  fi
done
echo "stress_suite.sh: $((runs - failed_runs))/$runs runs passed under $hogs CPU hog(s)," \
  "$((SECONDS - total_start)) s in all"
[ "$failed_runs" -eq 0 ]
