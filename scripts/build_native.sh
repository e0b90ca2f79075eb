#!/usr/bin/env bash
# Build the native accelerators, each loaded with ctypes and each optional (without it
# stepscope gives the same results by its numpy path, only slower):
#   src/stepscope/formats/kineto/scan.c -> _scan.so     the Kineto event scanner (scan.py)
#   src/stepscope/analysis/graph/longest.c -> _longest.so  the longest-path pass (native.py)
#   src/stepscope/analysis/events/nest.c -> _nest.so        ranges' nesting (events/native.py)
# A missing compiler or a failed build is a warning, never an error
# (tests/unit/test_native_build.py fails where a compiler is and a library is not, and
# compiles each source with -Werror).
# Used by scripts/setup.sh and by the wheel's build hook (hatch_build.py).
set -euo pipefail
cd "$(dirname "$0")/.."
CC="${CC:-cc}"
if ! command -v "$CC" >/dev/null 2>&1; then
  echo "build_native.sh: no C compiler ($CC): the numpy paths are used" >&2
  exit 0
fi
for pair in src/stepscope/formats/kineto/scan.c:src/stepscope/formats/kineto/_scan.so \
            src/stepscope/analysis/graph/longest.c:src/stepscope/analysis/graph/_longest.so \
            src/stepscope/analysis/events/nest.c:src/stepscope/analysis/events/_nest.so; do
  SRC=${pair%%:*}
  OUT=${pair#*:}
  # -O2, no -march: the library may travel in a wheel to another machine of the same kind.
  if "$CC" -O2 -std=c99 -Wall -Wextra -shared -fPIC -o "$OUT.tmp" "$SRC"; then
    mv "$OUT.tmp" "$OUT"
  else
    rm -f "$OUT.tmp"
    echo "build_native.sh: $CC could not build $SRC: its numpy path is used" >&2
  fi
done
