#!/usr/bin/env bash
# Packs a CUDA build made on this machine for a GPU machine without network access, where
# building would spend the GPU's time: the build's programs (stripped) and CTest files, the
# shared libraries they load that such a machine lacks (isl, GMP, MuJoCo) and Gymnasium's MuJoCo
# models, into .gpu-pack/ (ignored by git, ~20 MiB). scripts/gpu.sh unpacks it instead of
# building. The GPU machine's python3 must hold the same torch as the build (2.11.0).
#   bash scripts/gpu_pack.sh [BUILD_DIR]   (default build-cuda, configured with -DTEMPO_CUDA=ON
#                                           -DTEMPO_BUILD_BENCH=ON and built)
set -euo pipefail
cd "$(dirname "$0")/.."
build="$(realpath "${1:-build-cuda}")"
fail() { echo "gpu_pack.sh: $*" >&2; exit 1; }
grep -q '^TEMPO_CUDA:BOOL=ON' "$build/CMakeCache.txt" 2> /dev/null ||
  fail "$build is not a CUDA build"
for program in tempo bench_rl_vs_eager bench_decode; do
  [ -x "$build/$program" ] || fail "$build/$program is missing (build with -DTEMPO_BUILD_BENCH=ON)"
done

pack=.gpu-pack
rm -rf "$pack" && mkdir -p "$pack/lib"
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
# The programs and what CTest reads; not objects, archives or the Python module (whose Python
# differs there).
(cd "$build" && tar cf - --exclude=CMakeFiles --exclude=Testing --exclude='*.a' --exclude='*.o' \
  --exclude='*.ninja' --exclude='.ninja*' --exclude='*.so' --exclude=compile_commands.json .) |
  (cd "$stage" && tar xf -)
find "$stage" -type f -perm -u+x \
  -exec sh -c 'file "$1" | grep -q ELF && strip --strip-unneeded "$1"' _ {} \;
tar cJf "$pack/build.tar.xz" -C "$stage" .
# CTest's files name the build and source folders of this machine: gpu.sh rewrites them.
source="$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$build/CMakeCache.txt")"
printf 'packed_build=%s\npacked_source=%s\n' "$build" "$source" > "$pack/origin"
ldd "$build/tempo" | awk '/libisl|libgmp|libmujoco/ {print $3}' | xargs -r cp -L -t "$pack/lib"
assets="$(bash scripts/peers_prefix.sh)/gymnasium/envs/mujoco/assets"
[ -d "$assets" ] && cp -r "$assets" "$pack/assets"
du -sh "$pack"
