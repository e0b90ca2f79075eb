#!/usr/bin/env bash
# Create .venv and install stepscope with its torch, test and dev extras; build the web front
# end. Idempotent and quick to rerun: each step stamps what it installed (the hash of its
# inputs) and is skipped while the stamp still matches.
# torch is pinned to 2.13.0: on the project's machines that is a local CPU wheel; any other
# version would download gigabytes of CUDA packages.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
TORCH="torch==2.13.0"
EXTRAS="torch,test,lightning,web,nsys,dask,cloud-test,sql,mcp,monitor"

stamp_of() {  # the hash of the named files' contents and of the extra words given after --
  local files=() words=()
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do files+=("$1"); shift; done
  [ $# -gt 0 ] && shift && words=("$@")
  { cat "${files[@]}" 2>/dev/null; printf '%s\n' "${words[@]}"; } | sha256sum | cut -c1-16
}
fresh() { [ -f "$1" ] && [ "$(cat "$1")" = "$2" ]; }  # stamp file holds this hash

if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
PY_STAMP=$(stamp_of pyproject.toml -- "$TORCH" "$EXTRAS" "$(.venv/bin/python -VV)")
if ! fresh .venv/.stepscope-setup "$PY_STAMP"; then
  .venv/bin/python -m pip install --quiet --upgrade pip
  .venv/bin/python -m pip install --quiet "$TORCH"
  .venv/bin/python -m pip install --quiet -e ".[$EXTRAS]"
  echo "$PY_STAMP" > .venv/.stepscope-setup
fi

# The native accelerators (optional; without them the numpy paths give the same results).
NATIVE_STAMP=$(stamp_of src/stepscope/formats/kineto/scan.c src/stepscope/analysis/graph/longest.c \
    src/stepscope/analysis/events/nest.c scripts/build_native.sh -- "$("${CC:-cc}" --version 2>/dev/null | head -1)")
if ! fresh src/stepscope/.native-build "$NATIVE_STAMP" \
    || [ ! -f src/stepscope/formats/kineto/_scan.so ] \
    || [ ! -f src/stepscope/analysis/graph/_longest.so ] \
    || [ ! -f src/stepscope/analysis/events/_nest.so ]; then
  bash scripts/build_native.sh
  echo "$NATIVE_STAMP" > src/stepscope/.native-build
fi

# The web front end (dashboard + HTML report): npm packages from the npm registry, built by
# Vite into src/stepscope/report/static (package data; not committed). package.json pins
# rollup (an "override") to a version whose every platform package the registry serves, so
# the lock file is complete and `npm ci` installs exactly it.
if command -v npm >/dev/null 2>&1; then
  LOCK_STAMP=$(stamp_of frontend/package.json frontend/package-lock.json -- "$(node --version)")
  if ! fresh frontend/node_modules/.stepscope-setup "$LOCK_STAMP"; then
    (cd frontend && npm ci --no-audit --no-fund --loglevel=error)
    echo "$LOCK_STAMP" > frontend/node_modules/.stepscope-setup
  fi
  BUNDLE_STAMP=$(stamp_of $(find frontend/src frontend/index.html frontend/vite.config.ts \
      frontend/tsconfig.json -type f 2>/dev/null | sort) -- "$LOCK_STAMP")
  if ! fresh src/stepscope/report/static/.stepscope-build "$BUNDLE_STAMP" \
      || [ ! -f src/stepscope/report/static/index.html ]; then
    (cd frontend && npm run --silent build >/dev/null)
    echo "$BUNDLE_STAMP" > src/stepscope/report/static/.stepscope-build
  fi
else
  echo "setup.sh: npm not found: the front end is not built (stepscope view and --html need" \
       "it; the browser tests skip)" >&2
fi

# Azure Blob emulator for the cloud tests (Azurite from npm), project-local and git-ignored.
if command -v npm >/dev/null 2>&1 && [ ! -x .cloud-emulators/node_modules/.bin/azurite-blob ]; then
  mkdir -p .cloud-emulators
  if ! npm install --no-audit --no-fund --loglevel=error --prefix .cloud-emulators azurite@3 \
      >/dev/null; then
    echo "setup.sh: azurite could not be installed: the Azure cloud tests will skip" >&2
  fi
fi
