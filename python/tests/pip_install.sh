#!/usr/bin/env bash
# `pip install` of the repository into a fresh virtual environment, then `import tempo` and a
# Python example from there. Reuses what BUILD_DIR compiled: Tempo's C++ package is installed
# into a temporary prefix and pip builds only the module against it
# (-DTEMPO_PYTHON_ONLY_FROM). Offline: pip takes its wheels from scripts/wheels_prefix.sh's
# folder (scripts/setup.sh downloads them). Usage: pip_install.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build="$(cd "${1:?usage: pip_install.sh BUILD_DIR SOURCE_DIR}" && pwd)"
src="$(cd "${2:?usage: pip_install.sh BUILD_DIR SOURCE_DIR}" && pwd)"
wheels="$(bash "$src/scripts/wheels_prefix.sh")"
python="$(bash "$src/scripts/pip_python.sh")"
if ! ls "$wheels"/scikit_build_core-*.whl > /dev/null 2>&1; then
  echo "SKIP: no wheels in $wheels (scripts/setup.sh downloads scripts/requirements-pip.txt)"
  exit 77
fi
# A fixed folder of the build tree, and the build's compiler launcher (ccache) if it has one, so
# that a second run finds the module's objects in the compiler cache.
work="$build/python/pip_install"
rm -rf "$work"
mkdir -p "$work"
trap 'rm -rf "$work"' EXIT
launcher="$(sed -n 's/^CMAKE_CXX_COMPILER_LAUNCHER:[A-Z]*=//p' "$build/CMakeCache.txt")"
[[ -z "$launcher" ]] || export CMAKE_CXX_COMPILER_LAUNCHER="$launcher"

log() { echo "$(date +%T) $*"; }
# Prints a step's log when it fails.
run_logged() {  # LOG COMMAND...
  local out="$1"
  shift
  "$@" > "$out" 2>&1 || { cat "$out"; echo "FAIL: $*"; exit 1; }
}

log "C++ package from $build"
run_logged "$work/install.log" cmake --install "$build" --prefix "$work/prefix" --component Tempo
log "virtual environment with $python"
run_logged "$work/venv.log" "$python" -m venv "$work/venv"
py="$work/venv/bin/python"
pip=("$py" -m pip --disable-pip-version-check --no-input)
run_logged "$work/deps.log" "${pip[@]}" install --no-index --find-links "$wheels" \
  -r "$src/scripts/requirements-pip.txt"
log "pip install $src (the module only)"
run_logged "$work/pip.log" "${pip[@]}" install -v --no-index --find-links "$wheels" \
  --no-build-isolation --config-settings=build-dir="$work/skbuild" \
  --config-settings=cmake.define.TEMPO_PYTHON_ONLY_FROM="$work/prefix" "$src"
if ! grep -q "Python module for $work/venv/bin/python" "$work/pip.log"; then
  cat "$work/pip.log"
  echo "FAIL: the module was not built for the environment's Python"
  exit 1
fi

log "import tempo"
cd "$work"  # nothing of the source or build tree on the path
site="$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["platlib"])')"
"$py" - "$site" <<'PY'
import sys
import tempo
assert tempo.__file__.startswith(sys.argv[1]), tempo.__file__
print("tempo", tempo.__file__)
PY
log "examples/python/recurrence.py"
"$py" "$src/examples/python/recurrence.py"
log "done"
