#!/usr/bin/env bash
# Installs the peers of bench/rl_peers.py (scripts/requirements-bench.txt and
# requirements-bench-gym.txt) into $TEMPO_BENCH_PREFIX (default /opt/tempo-deps/bench) once, and
# runs it with the arguments given (e.g. --full, --algos dqn,ppo, --out table.md).
# Needs the CUDA torch of `scripts/setup.sh --cuda` (scripts/torch_prefix.sh), build/tempo and,
# for the environment table, build-bench/bench_envs (-DTEMPO_BUILD_BENCH=ON).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
prefix="${TEMPO_BENCH_PREFIX:-/opt/tempo-deps/bench}"
py=/usr/bin/python3
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi

# Installs requirements file $1 into folder $2 unless the same file was installed there already.
install() {
  local stamp="$2/.requirements.txt"
  if [ -f "$stamp" ] && cmp -s "$1" "$stamp"; then return; fi
  echo "installing $1 into $2" >&2
  $SUDO rm -rf "$2"
  $SUDO env PIP_BREAK_SYSTEM_PACKAGES=1 "$py" -m pip install -q --no-deps --ignore-requires-python \
    --disable-pip-version-check --root-user-action=ignore --target "$2" -r "$1"
  $SUDO cp "$1" "$stamp"
}
install "$root/scripts/requirements-bench.txt" "$prefix/gymnasium"
install "$root/scripts/requirements-bench-gym.txt" "$prefix/gym"

torch="$(bash "$root/scripts/torch_prefix.sh")"
if [ ! -d "$torch/torch" ]; then
  echo "no PyTorch in $torch: run scripts/setup.sh --cuda first (it runs on the CPU)" >&2
  exit 1
fi
exec "$py" "$root/bench/rl_peers.py" --prefix "$prefix" --torch-prefix "$torch" "$@"
