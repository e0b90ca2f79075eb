#!/usr/bin/env bash
# Build the native event scanner (src/stepscope/formats/kineto/scan.c -> _scan.so), loaded
# by scan.py with ctypes. Optional: without it stepscope reads traces the same way, only
# ~2x slower (the reader's Python path), so a missing compiler or a failed build is a
# warning, never an error (tests/unit/test_native_scanner.py fails where a compiler is and
# the library is not, and compiles scan.c with -Werror).
# Used by scripts/setup.sh and by the wheel's build hook (hatch_build.py).
set -euo pipefail
cd "$(dirname "$0")/.."
SRC=src/stepscope/formats/kineto/scan.c
OUT=src/stepscope/formats/kineto/_scan.so
CC="${CC:-cc}"
if ! command -v "$CC" >/dev/null 2>&1; then
  echo "build_scanner.sh: no C compiler ($CC): traces are read by the Python path" >&2
  exit 0
fi
# -O2, no -march: the library may travel in a wheel to another machine of the same kind.
if "$CC" -O2 -std=c99 -Wall -Wextra -shared -fPIC -o "$OUT.tmp" "$SRC"; then
  mv "$OUT.tmp" "$OUT"
else
  rm -f "$OUT.tmp"
  echo "build_scanner.sh: $CC could not build $SRC: traces are read by the Python path" >&2
fi
