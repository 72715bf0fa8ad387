#!/usr/bin/env bash
# Builds the libFuzzer targets of fuzz/ (clang 16, ASan + UBSan) and runs each for SECONDS, one
# after the other, on one core:
#   bash scripts/fuzz.sh SECONDS [TARGET...]      e.g. bash scripts/fuzz.sh 60 json safetensors
# Targets (default: all): json safetensors tokenizer_parse tokenizer_codec checkpoint
# mmap_instance loops_text symbolic_parse expr_command.
# Each run starts from fuzz/corpus/TARGET (read only) and a working corpus under
# BUILD/fuzz-runs/TARGET/corpus that keeps what earlier runs found; a crash, hang (over 10 s for
# one input), leak or out-of-memory (over 2 GB) leaves its input in BUILD/fuzz-runs/TARGET/ and
# makes the script exit 1. Prints one summary line per target. BUILD: $TEMPO_FUZZ_BUILD, else
# build-fuzz.
set -euo pipefail
cd "$(dirname "$0")/.."

ALL=(json safetensors tokenizer_parse tokenizer_codec checkpoint mmap_instance loops_text
     symbolic_parse expr_command)
if [ $# -lt 1 ] || ! [[ "$1" =~ ^[0-9]+$ ]]; then
  echo "usage: scripts/fuzz.sh SECONDS [TARGET...]   (targets: ${ALL[*]})" >&2
  exit 2
fi
seconds=$1
shift
targets=("$@")
((${#targets[@]})) || targets=("${ALL[@]}")
for t in "${targets[@]}"; do
  [ -d "fuzz/corpus/$t" ] || { echo "fuzz.sh: unknown target '$t' (targets: ${ALL[*]})" >&2; exit 2; }
done

bash scripts/setup.sh --fuzz
build="${TEMPO_FUZZ_BUILD:-build-fuzz}"
if [ ! -f "$build/CMakeCache.txt" ]; then
  CC=clang-16 CXX=clang++-16 cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DTEMPO_FUZZ=ON -DTEMPO_BUILD_TESTS=OFF -DTEMPO_BUILD_BENCH=OFF -DTEMPO_BUILD_PYTHON=OFF
fi
cmake --build "$build" -j"${TEMPO_FUZZ_JOBS:-1}" --target "${targets[@]/%/_fuzz}"

# One field of libFuzzer's final statistics, or of its last status line ("cov: N ft: N").
stat() { grep -o "stat::$2: *[0-9]*" "$1" | tail -1 | grep -o '[0-9]*$' || echo '?'; }
status() { grep -o "$2: [0-9]*" "$1" | tail -1 | grep -o '[0-9]*$' || echo '?'; }

# Leaks inside libraries Tempo calls (isl) are not Tempo's: see fuzz/lsan.supp.
export LSAN_OPTIONS="suppressions=$PWD/fuzz/lsan.supp:print_suppressions=0"
failed=0
summary=()
for t in "${targets[@]}"; do
  runs="$build/fuzz-runs/$t"
  mkdir -p "$runs/corpus"
  dict=()
  [ -f "fuzz/dict/$t.dict" ] && dict=(-dict="fuzz/dict/$t.dict")
  log="$runs/last.log"
  echo "fuzz.sh: $t for ${seconds}s (log $log)"
  rc=0
  # New inputs go to the first folder (the working corpus); the checked-in seeds are only read.
  "$build/fuzz/${t}_fuzz" -max_total_time="$seconds" -print_final_stats=1 -timeout=10 \
    -rss_limit_mb=2048 -malloc_limit_mb=2048 -artifact_prefix="$runs/" "${dict[@]}" \
    "$runs/corpus" "fuzz/corpus/$t" > "$log" 2>&1 || rc=$?
  result=ok
  if [ "$rc" -ne 0 ]; then
    failed=1
    artifact=$(grep -o "Test unit written to [^ ]*" "$log" | tail -1 | cut -d' ' -f5)
    result="FAILED (exit $rc; reproducer ${artifact:-none}; see $log)"
    tail -40 "$log" >&2
  fi
  summary+=("$(printf '%-16s execs=%-10s exec/s=%-7s cov=%-6s ft=%-6s %s' "$t" \
    "$(stat "$log" number_of_executed_units)" "$(stat "$log" average_exec_per_sec)" \
    "$(status "$log" cov)" "$(status "$log" ft)" "$result")")
done
printf '%s\n' "${summary[@]}"
exit "$failed"
