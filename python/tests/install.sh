#!/usr/bin/env bash
# Installs the Python module (component Python) into a temporary prefix and runs a program with
# it from there. Usage: install.sh BUILD_DIR PYTHON SITE_DIR (relative to the prefix)
set -euo pipefail
build="${1:?usage: install.sh BUILD_DIR PYTHON SITE_DIR}"
python="${2:?}"
site="${3:?}"
work="$(mktemp -d "${TMPDIR:-/tmp}/tempo-python.XXXXXX")"
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" --component Python >"$work/install.log" ||
  { cat "$work/install.log"; exit 1; }
cd "$work"  # nothing of the source or build tree on the path
PYTHONPATH="$work/prefix/$site" "$python" - "$work/prefix/$site" <<'PY'
import sys
import tempo
assert tempo.__file__.startswith(sys.argv[1]), tempo.__file__
ctx = tempo.Context()
t, T = ctx.dim("t", "T")
y = ctx.symbol(t).cast(tempo.float32)[0:T].sum(0).retain()
exe = ctx.compile({T: 10})
exe.run()
assert float(exe.get(y)) == 45.0
print("installed tempo module:", tempo.__file__)
PY
