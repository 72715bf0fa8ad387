#!/usr/bin/env bash
# The default build's LibTorch choice: the same commands in two builds that differ only in their
# LibTorch, run alternately on one machine, each figure side by side.
#   bench/compare_libtorch.sh [BUILD_A] [BUILD_B] [OUT]   (default: build build-cuda out/libtorch)
# BUILD_A is the default build (Debian's LibTorch 1.13 on OpenBLAS), BUILD_B the CUDA build
# (PyPI's LibTorch 2.11 on its own BLAS, run on the CPU); both need their benchmarks built.
set -euo pipefail
cd "$(dirname "$0")/.."
a="${1:-build}" b="${2:-build-cuda}" out="${3:-out/libtorch}"
mkdir -p "$out"
run() {  # build, name, command...: the command's output in $out/<name>.<build>.txt, its wall time
  local build="$1" name="$2"
  shift 2
  local t0 t1
  t0=$(date +%s.%N)
  (cd "$build" && TEMPO_DEVICE=cpu "$@") > "$out/$name.$(basename "$build").txt" 2>&1
  t1=$(date +%s.%N)
  echo "$name $(basename "$build") $(echo "$t1 - $t0" | bc)" >> "$out/wall.txt"
}
rm -f "$out/wall.txt"
for build in "$a" "$b"; do
  for d in "$build"/bench_rl_vs_eager "$build"/bench_decode "$build"/tempo; do
    [ -x "$d" ] || { echo "compare_libtorch: $d is not built" >&2; exit 1; }
  done
done
# Alternating which build goes first, so that neither always runs on a warmer machine.
run "$a" rl ./bench_rl_vs_eager --quick
run "$b" rl ./bench_rl_vs_eager --quick
run "$b" decode ./bench_decode --quick
run "$a" decode ./bench_decode --quick
run "$a" main ./tempo train ppo --env CartPole-v1 --seed 1 --out "$PWD/$out/main-a"
run "$b" main ./tempo train ppo --env CartPole-v1 --seed 1 --out "$PWD/$out/main-b"
python3 bench/compare_libtorch.py "$out" "$(basename "$a")" "$(basename "$b")"
