#!/usr/bin/env bash
# On a machine with an NVIDIA GPU: builds the CUDA build, runs the whole suite on the GPU
# (TEMPO_DEVICE=cuda), then the GPU benchmarks and the main job, and appends their tables to
# $TEMPO_GPU_OUT/results.md (default out/gpu). Fails with one line on a machine without a GPU.
#   bash scripts/gpu.sh [STAGE...]   stages: build test rl decode agreement profile main (default:
#   all, in order); each stage builds first if needed, so that a machine that limits a command's
#   time can run them one call at a time. TEMPO_GPU_DECODE_LENGTHS: the decode stage's lengths
#   (default "512 2048"); TEMPO_GPU_AGREEMENT_LENGTH: the agreement stage's (default 2048).
#
# LibTorch: python3's torch where it is a CUDA build (as on GPU machines with PyTorch), else the
# one scripts/setup.sh --cuda installs. Packages that a machine without network access lacks
# (isl, GoogleTest, Google Benchmark) come from Debian packages fetched beforehand by
# scripts/gpu_deps.sh into .gpu-deps/ (unpacked here, installed nowhere). Where .gpu-pack/ holds
# a CUDA build packed on another machine (scripts/gpu_pack.sh), the build stage unpacks it instead
# of building: minutes of the GPU machine's time saved.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! nvidia-smi -L 2> /dev/null | grep -q '^GPU'; then
  echo "gpu.sh: no NVIDIA GPU on this machine (nvidia-smi lists none)" >&2
  exit 1
fi
out="${TEMPO_GPU_OUT:-out/gpu}"
mkdir -p "$out"
log() { echo "[gpu.sh] $*" | tee -a "$out/log.txt"; }

packed=false
[ -f .gpu-pack/build.tar.xz ] && packed=true
torch_dir="$(python3 -c 'import torch; assert torch.version.cuda; print(torch.utils.cmake_prefix_path)' 2> /dev/null || true)"
if $packed; then
  [ -n "$torch_dir" ] ||
    { echo "gpu.sh: .gpu-pack needs python3's torch, a CUDA build" >&2; exit 1; }
  torch_lib="$torch_dir/../../lib"  # torch/share/cmake -> torch/lib
  # The packed programs load LibTorch, its CUDA libraries and the packed ones from here.
  libs="$torch_lib:$torch_lib/../../nvidia/cu13/lib:$PWD/.gpu-pack/lib"
  export LD_LIBRARY_PATH="$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  [ -d .gpu-pack/assets ] && export TEMPO_MUJOCO_ASSETS="$PWD/.gpu-pack/assets"
elif [ -z "$torch_dir" ]; then
  bash scripts/setup.sh --cuda
  torch_dir="$(bash scripts/torch_prefix.sh)/torch"
fi
prefixes="$torch_dir"
if ! $packed && ! pkg-config --exists isl 2> /dev/null; then
  [ -d .gpu-deps ] || { echo "gpu.sh: isl is missing: run scripts/gpu_deps.sh where apt works" >&2; exit 1; }
  root="$PWD/.gpu-deps/root"
  rm -rf "$root" && mkdir -p "$root"
  for deb in .gpu-deps/*.deb; do dpkg -x "$deb" "$root"; done
  multiarch="$root/usr/lib/x86_64-linux-gnu"
  command -v pkg-config > /dev/null || export PKG_CONFIG="$root/usr/bin/pkgconf"
  export PKG_CONFIG_PATH="$multiarch/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
  # isl.pc names /usr as its prefix: point it at the unpacked tree.
  sed -i "s|^prefix=/usr|prefix=$root/usr|" "$multiarch/pkgconfig/isl.pc"
  export LD_LIBRARY_PATH="$multiarch${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  prefixes="$prefixes;$root/usr"
fi
# The Python module, where python3 has NumPy, pybind11 and its C headers.
python_args=(-DTEMPO_BUILD_PYTHON=OFF)
python3 -c 'import numpy, pybind11, os, sysconfig
assert os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h"))' 2> /dev/null &&
  python_args=(-DPython_EXECUTABLE="$(command -v python3)" -Dpybind11_DIR="$(python3 -m pybind11 --cmakedir)")

stages=("$@")
((${#stages[@]})) || stages=(build test rl decode agreement profile main)
results="$out/results.md"

unpack() {  # the packed build into build-gpu, its CTest files pointed at this checkout
  rm -rf build-gpu && mkdir build-gpu
  tar xJf .gpu-pack/build.tar.xz -C build-gpu
  local packed_build packed_source
  packed_build="$(sed -n 's/^packed_build=//p' .gpu-pack/origin)"
  packed_source="$(sed -n 's/^packed_source=//p' .gpu-pack/origin)"
  find build-gpu -name '*.cmake' -exec sed -i \
    -e "s|$packed_build|$PWD/build-gpu|g" -e "s|$packed_source|$PWD|g" {} +
  # The programs name files of the source tree by the path they were built at (test data).
  if [ ! -e "$packed_source" ]; then
    mkdir -p "$(dirname "$packed_source")" && ln -s "$PWD" "$packed_source"
  fi
}

build() {
  log "$(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader)"
  log "LibTorch: $torch_dir"
  if $packed; then
    unpack
    log "unpacked .gpu-pack"
  else
    build_here
  fi
  [ -f "$results" ] || {
    echo "# Tempo on $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)"
    echo
    echo "$(date -u +%F), CUDA build against $torch_dir"
  } > "$results"
}

build_here() {
  cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DTEMPO_CUDA=ON \
    -DCMAKE_PREFIX_PATH="$prefixes" "${python_args[@]}" > "$out/configure.txt" 2>&1 ||
    { tail -20 "$out/configure.txt"; exit 1; }
  cmake --build build-gpu -j"$(nproc)" > "$out/build.txt" 2>&1 ||
    { tail -40 "$out/build.txt"; exit 1; }
  log "built"
}

test_suite() {  # every program's device is cuda (backend::default_device)
  set +e
  # A packed build has no Python module and no libraries for the package test.
  local skip=()
  $packed && skip=(-E '^(package|python\.|example\.python\.|cli\.tokenizer_hf)')
  TEMPO_DEVICE=cuda ctest --test-dir build-gpu -j"$(nproc)" --timeout 900 --output-on-failure \
    "${skip[@]}" > "$out/tests.txt" 2>&1
  set -e
  {
    echo -e "\n## Test suite with TEMPO_DEVICE=cuda\n"
    grep -E "tests passed|tests failed" "$out/tests.txt" || echo "(ctest printed no summary)"
    sed -n '/The following tests FAILED/,$p' "$out/tests.txt"
  } >> "$results"
  log "suite done"
}

bench() {  # title, then the command; its output (Markdown tables) goes into the results
  local title="$1"
  shift
  log "$title"
  echo -e "\n## $title\n\n\`$*\`\n" >> "$results"
  (cd build-gpu && TEMPO_DEVICE=cuda "$@") >> "$results" 2> "$out/stderr.txt" ||
    echo "(failed: $(tail -1 "$out/stderr.txt"))" >> "$results"
}

decode_profile() {  # where a decoding step's time goes, per op: fused, unfused, unfused with
  # every launch waited for (its time then includes the GPU's), and a window of 32 (it slides
  # from step 32)
  local args=(generate --config 1b --layers 4 --tokens 64 --profile) setting
  for setting in "" "TEMPO_NO_PASS=fusion" "TEMPO_NO_PASS=fusion CUDA_LAUNCH_BLOCKING=1" \
    "--attention window:32"; do
    log "decode profile: ${setting:-all passes}"
    echo -e "\n## Decoding profile (4 layers of the 1B shape, 64 tokens):" \
      "${setting:-all passes}\n" >> "$results"
    echo '```' >> "$results"
    local envs=() extra=()
    # shellcheck disable=SC2206  # the setting's words: variables for env, or generate's flags
    if [[ "$setting" == --* ]]; then extra=($setting); else envs=($setting); fi
    env TEMPO_DEVICE=cuda "${envs[@]}" ./build-gpu/tempo "${args[@]}" "${extra[@]}" 2>&1 |
      grep -v '^sequence' >> "$results" || true
    echo '```' >> "$results"
  done
}

main_job() {  # the README's main job, on the GPU and on this machine's CPU
  for device in cuda cpu; do
    log "main job on $device"
    local start end
    start=$(date +%s%N)
    TEMPO_DEVICE=$device ./build-gpu/tempo train ppo --env CartPole-v1 --seed 1 \
      --out "$out/main-$device" > "$out/main-$device.txt" 2>&1 || true
    end=$(date +%s%N)  # nanoseconds: the GPU machines have no bc
    echo -e "\n## Main job (PPO on CartPole-v1), $device: $(((end - start) / 1000000)) ms\n" \
      >> "$results"
    tail -3 "$out/main-$device.txt" >> "$results"
  done
}

for stage in "${stages[@]}"; do
  case "$stage" in
    build) build ;;
    test) [ -x build-gpu/tempo ] || build; test_suite ;;
    rl)
      [ -x build-gpu/tempo ] || build
      # The eager baseline (bench/eager_rl.h) runs on the CPU: Tempo's figures are the GPU's.
      bench "RL training, base configurations (Tempo on the GPU, eager on the CPU)" \
        ./bench_rl_vs_eager --quick
      bench "RL under a 1 GiB device-memory budget (TEMPO Fig. 21)" \
        ./bench_rl_vs_eager --only budget --quick
      ;;
    decode)
      [ -x build-gpu/tempo ] || build
      # 4-8 ms per token on an H100: T = 512 and 2048 keep the stage within minutes.
      # shellcheck disable=SC2086  # the lengths are words
      bench "Decoding, Llama-3.2-1B shape, Tempo and the grown cache on the GPU" \
        ./bench_decode --gpu ${TEMPO_GPU_DECODE_LENGTHS:-512 2048}
      ;;
    agreement)
      [ -x build-gpu/tempo ] || build
      bench "Where window:512's greedy tokens at batch 16 part from the eager decoders'" \
        ./bench_decode --gpu-agreement "${TEMPO_GPU_AGREEMENT_LENGTH:-2048}"
      ;;
    profile) [ -x build-gpu/tempo ] || build; decode_profile ;;
    main) [ -x build-gpu/tempo ] || build; main_job ;;
    *)
      echo "gpu.sh: unknown stage $stage (build, test, rl, decode, agreement, profile, main)" >&2
      exit 2
      ;;
  esac
done
log "results in $results"
