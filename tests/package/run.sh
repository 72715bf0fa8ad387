#!/usr/bin/env bash
# Installs Tempo from a build directory into a temporary prefix, then configures, builds and runs
# a downstream project (tests/package/downstream) that finds it with find_package(Tempo).
# Usage: run.sh BUILD_DIR [C++ compiler]
set -euo pipefail
build="${1:?usage: run.sh BUILD_DIR [CXX]}"
cxx="${2:-}"
here="$(cd "$(dirname "$0")" && pwd)"
work="$(mktemp -d "${TMPDIR:-/tmp}/tempo-package.XXXXXX")"
trap 'rm -rf "$work"' EXIT

# The C++ package only (component Tempo): the test does not need the Python module built.
cmake --install "$build" --prefix "$work/prefix" --component Tempo >"$work/install.log" ||
  { cat "$work/install.log"; exit 1; }
for f in include/tempo/api/tempo.h lib/cmake/Tempo/TempoConfig.cmake \
  lib/cmake/Tempo/TempoConfigVersion.cmake lib/libtempo_api.a bin/tempo; do
  [[ -e "$work/prefix/$f" ]] || { echo "FAIL: the install has no $f"; exit 1; }
done

# Only the prefix tells the downstream project where Tempo is.
cmake -S "$here/downstream" -B "$work/build" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$work/prefix" ${cxx:+-DCMAKE_CXX_COMPILER="$cxx"} >"$work/configure.log" ||
  { cat "$work/configure.log"; exit 1; }
cmake --build "$work/build" >"$work/build.log" || { cat "$work/build.log"; exit 1; }
"$work/build/downstream"
"$work/prefix/bin/tempo" expr simplify "min(t+5, T) - t" --dims t:T
