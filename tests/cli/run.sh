#!/usr/bin/env bash
# Checks the `tempo` command line. Usage: run.sh PATH_TO_TEMPO
set -u
tempo="${1:?usage: run.sh PATH_TO_TEMPO}"
failures=0

# expect_out "expected stdout" args...: exit status 0 and exactly this output.
expect_out() {
  local want="$1"
  shift
  local got
  got="$("$tempo" "$@" 2>/tmp/tempo_cli_err.$$)"
  local rc=$?
  if [[ $rc -ne 0 || "$got" != "$want" ]]; then
    echo "FAIL: tempo $*"
    echo "  want: $want"
    echo "  got:  $got (exit $rc) $(cat /tmp/tempo_cli_err.$$)"
    failures=$((failures + 1))
  fi
}

# expect_error "text in the message" args...: non-zero exit, one `tempo: error:` line on stderr.
expect_error() {
  local needle="$1"
  shift
  local out err rc
  out="$("$tempo" "$@" 2>/tmp/tempo_cli_err.$$)"
  rc=$?
  err="$(cat /tmp/tempo_cli_err.$$)"
  if [[ $rc -eq 0 || "$err" != "tempo: error: "* || "$err" != *"$needle"* || $(printf '%s\n' "$err" | wc -l) -ne 1 || -n "$out" ]]; then
    echo "FAIL (expected an error mentioning '$needle'): tempo $*"
    echo "  exit $rc, stdout: $out"
    echo "  stderr: $err"
    failures=$((failures + 1))
  fi
}

# Sections (CTest runs them side by side): commands (expr, show, generate), checkpoints
# (generate from Hugging Face checkpoints), train (train and eval), resume (kill and resume),
# launch (data-parallel jobs) and policies (mmap, loops, rewrite); all by default.
section="${2:-all}"
want() { [[ "$section" == all || "$section" == "$1" ]]; }
work="$(mktemp -d "${TMPDIR:-/tmp}/tempo-cli.XXXXXX")"
trap 'rm -rf "$work"' EXIT

if want commands; then
expect_out "min(T, t + 5) - t" expr simplify "min(t+5, T) - t" --dims t:T
expect_out "t" expr simplify "min(t, T)" --dims t:T
expect_out "t % 15 == 0" expr condition "t%5==0 && t%3==0" --dims t:T

expect_out "t:min(t + 4, T)" expr invert "max(0,t-3):t+1" --sink t:T --source t:T
expect_out "t - 3" expr invert "t+3" --sink t:T --source t:T
expect_out "0:t + 1" expr invert "t:T" --sink t:T --source t:T
expect_out "t:T" expr invert "0:t+1" --sink t:T --source t:T
expect_out "[b, i, 0:T]" expr invert "[b, i]" --sink b:B,i:I,t:T --source b:B,i:I
expect_out $'0:T\nwhen t == 0' expr invert "0" --sink t:T --source t:T

expect_out "[T] -> { sink[t] -> source[t'] : t >= 0 and t <= t' <= 2 + t and t' < T }" \
  expr isl "t:min(t+3,T)" --sink t:T --source t:T
expect_out "[T] -> { sink[t] -> source[t' = 1 + t] : (t) mod 2 = 0 and 0 <= t <= -2 + T }" \
  expr isl "t+1" --sink t:T --cond "t % 2 == 0"

expect_out "true" expr equal "min(t+4,T)" "min(T,4+t)" --dims t:T
expect_out "false" expr equal "min(t+4,T)" "t+4" --dims t:T
expect_out "true" expr equal "[i, t:min(t+4,T)]" "[i, t:min(T,4+t)]" --dims i:I,t:T

expect_out "10" expr eval "min(t+4,T)" --dims t:T --at t=8,T=10
expect_out "[3, 0:4]" expr eval "[t, max(0,t-3):t+1]" --dims t:T --at t=3,T=10
expect_out "true" expr eval "t % 3 == 0" --dims t:T --at t=9,T=10

expect_error "not affine" expr invert "t*t" --sink t:T --source t:T
expect_error "not affine" expr isl "t*T" --sink t:T
expect_error "unknown symbol" expr simplify "t + x" --dims t:T
expect_error "column" expr simplify "t +" --dims t:T
expect_error "do not form a box" expr invert "t % 2" --sink t:T
expect_error "unknown action" expr frobnicate "t"
expect_error "unknown command" frobnicate
expect_error "takes 2 expressions" expr equal "t" --dims t:T
expect_error "needs --at" expr eval "t" --dims t:T
expect_error "bad dimension" expr simplify "t" --dims t

# tempo show: the examples list (name first), the SDG, the schedule, and errors.
if [[ "$("$tempo" show --list | head -1 | cut -d' ' -f1)" != "recurrence" ]]; then
  echo "FAIL: tempo show --list does not start with the recurrence example"
  failures=$((failures + 1))
fi
"$tempo" show recurrence --sdg | grep -q "^digraph" || { echo "FAIL: show --sdg is not DOT"; failures=$((failures + 1)); }
"$tempo" show future-window --schedule | grep -q "exec y#" || { echo "FAIL: show --schedule"; failures=$((failures + 1)); }
expect_error "unknown example 'nope'" show nope --sdg
expect_error "unknown option" show recurrence --bogus

# generate: the same tokens with the window whole and in tiles; bad patterns and prompts.
whole="$("$tempo" generate --tokens 12 --batch 2 --prompt-tokens 5,7 --attention window:4 | head -2)"
tiled="$("$tempo" generate --tokens 12 --batch 2 --prompt-tokens 5,7 --attention window:4 --tile 2 | head -2)"
if [[ "$whole" != "sequence 0: 5 7 "* || "$whole" != "$tiled" ]]; then
  echo "FAIL: generate whole vs tiled: '$whole' vs '$tiled'"
  failures=$((failures + 1))
fi
expect_error "expected causal, window:W or sinks:S:W" generate --attention sinks:2
expect_error "below the vocabulary size" generate --prompt-tokens 1000
expect_error "longer than --tokens" generate --prompt-tokens 1,2,3 --tokens 2
expect_error "window is longer" generate --attention window:40 --tokens 8
expect_error "temperature must be" generate --temperature -1
expect_error "expects a number" generate --temperature hot
# Under a memory budget: the same tokens where the program fits (2.2 MiB at its peak), a one-line
# error naming the K/V cache where it does not (every step reads all of it: nothing to swap).
sampled=(generate --tokens 512 --batch 16 --prompt-tokens 5,7 --temperature 1 --seed 3)
free="$("$tempo" "${sampled[@]}" | head -2)"
budgeted="$("$tempo" "${sampled[@]}" --memory-budget 3MiB | head -2)"
if [[ "$free" != "sequence 0: 5 7 "* || "$free" != "$budgeted" ]]; then
  echo "FAIL: generate under a budget that fits: '$free' vs '$budgeted'"
  failures=$((failures + 1))
fi
expect_error "k_cache+v_cache" "${sampled[@]}" --memory-budget 2MiB
expect_error "expected a size" generate --memory-budget lots
fi

if want checkpoints; then
source "$(dirname "$0")/generate_checkpoint.sh"

fi

if want train; then
# train: where results go is checked before anything compiles (no output but the error); the
# policy saved with --save runs again with `tempo eval`, and a trained one balances the pole.
touch "$work/file"
expect_error "--out $work/file is a file, not a directory" train reinforce --out "$work/file"
expect_error "--out /dev/null/run: cannot create the directory" train ppo --out /dev/null/run
expect_error "--save $work/file/policy: cannot create the directory" \
  train a2c --save "$work/file/policy"
expect_error "--save-every needs a directory" train ppo --save-every 5
expect_error "--save-every must be 0" train ppo --save "$work/p" --save-every -2
expect_error "unknown truncation 'sometimes' (expected bootstrap or terminate)" \
  train ppo --truncation sometimes
expect_error "dqn needs a discrete action space; Pendulum-v1's actions are continuous" \
  train dqn --env Pendulum-v1
expect_error "--buffer-size 10005 must be a positive multiple of num_envs x steps = 10" \
  train dqn --buffer-size 10005
# DQN saves its policy and a training checkpoint (replay buffer included) that --resume loads.
dqn=(train dqn --iterations 30 --learning-starts 100 --buffer-size 200 --target-every 50 --hidden 8)
if ! "$tempo" "${dqn[@]}" --save "$work/dqn" --save-every 10 >"$work/dqn.log" 2>&1 ||
  ! "$tempo" "${dqn[@]}" --resume "$work/dqn" 2>&1 | grep -q "holds all 30 iterations" ||
  [[ ! -f "$work/dqn/policy.safetensors" ]]; then
  echo "FAIL: tempo train dqn --save, --resume: $(tail -2 "$work/dqn.log")"
  failures=$((failures + 1))
fi
expect_error "td3 needs a continuous (box) action space; CartPole-v1's actions are discrete" \
  train td3 --env CartPole-v1
expect_error "--noise-clip must be a number >= 0, got -1" train td3 --env Pendulum-v1 --noise-clip -1
# --dump writes a compile stage's result (here the schedule AST) after it runs; a name that is
# not a stage's is an error that lists them.
dump="$("$tempo" train reinforce --iterations 1 --dump schedule 2>&1 >/dev/null)"
bad="$("$tempo" train reinforce --iterations 1 --dump passes,sched 2>&1 >/dev/null)"
if [[ "$dump" != *"---- after schedule ----"* || "$dump" != *"exec "* ||
  "$bad" != "tempo: error: unknown compile stage 'sched'"*"memory-plan"* ]]; then
  echo "FAIL: tempo train --dump schedule: $(printf '%s\n' "$dump" | head -3)"
  failures=$((failures + 1))
fi
expect_error "no saved policy in $work/none" eval --load "$work/none"
expect_error "missing --load" eval --episodes 3
expect_error "--episodes must be positive" eval --load "$work" --episodes 0
if ! "$tempo" train ppo --iterations 120 --save "$work/ppo" --save-every 50 --out "$work/out" \
  >"$work/train.log" 2>&1; then
  echo "FAIL: tempo train ppo --save: $(tail -3 "$work/train.log")"
  failures=$((failures + 1))
fi
for f in ppo/policy.json ppo/policy.safetensors out/curve.csv out/curve.svg; do
  [[ -s "$work/$f" ]] || { echo "FAIL: train wrote no $f"; failures=$((failures + 1)); }
done
if [[ "$(wc -l <"$work/out/curve.csv")" -lt 100 ]] || ls "$work"/ppo/*.tmp >/dev/null 2>&1; then
  echo "FAIL: curve.csv has $(wc -l <"$work/out/curve.csv") lines, or a temporary file was left"
  failures=$((failures + 1))
fi
grep -q '"iterations": 120' "$work/ppo/policy.json" || { echo "FAIL: policy.json"; failures=$((failures + 1)); }
eval_out="$("$tempo" eval --load "$work/ppo" --episodes 8 --seed 5 2>&1)"
mean="$(printf '%s\n' "$eval_out" | sed -n 's/^mean return: //p')"
if [[ -z "$mean" ]] || ! awk -v m="$mean" 'BEGIN { exit !(m >= 150) }'; then
  echo "FAIL: tempo eval of a trained CartPole policy: $eval_out"
  failures=$((failures + 1))
fi
again="$("$tempo" eval --load "$work/ppo" --episodes 8 --seed 5 2>&1 | sed -n 's/^mean return: //p')"
[[ "$again" == "$mean" ]] || { echo "FAIL: eval is not deterministic ($mean, $again)"; failures=$((failures + 1)); }

expect_error "does not have the same spaces" eval --load "$work/ppo" --env Pendulum-v1
fi

if want resume; then
# Kill and resume: `tempo train --save-every 1` killed (SIGKILL) at random moments of its training
# leaves a checkpoint that `--resume` loads and continues; the run finished that way saves the
# policy and curve of the uninterrupted run, byte for byte.
kr="$work/kill"
kargs=(train a2c --iterations 100 --num-envs 2 --steps 64 --hidden 16)
"$tempo" "${kargs[@]}" --save "$kr/straight" --out "$kr/straight" >"$kr.log" 2>&1 ||
  { echo "FAIL: tempo train (uninterrupted): $(tail -2 "$kr.log")"; failures=$((failures + 1)); }
RANDOM=33  # the same kill moments every time
kills=0
# Each attempt is killed once the log reaches its iteration (then within one iteration's time),
# so the kills land on any machine, however fast: later ones nearer the end of the run.
for reach in 12 31 47 66 83; do
  resume=()
  [[ -f "$kr/run/checkpoint.json" ]] && resume=(--resume "$kr/run")
  "$tempo" "${kargs[@]}" --save "$kr/run" --save-every 1 "${resume[@]}" >"$kr.$reach.log" 2>&1 &
  pid=$!
  for _ in $(seq 6000); do  # at most 60 s
    grep -q "^iteration $reach " "$kr.$reach.log" 2>/dev/null && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.01
  done
  sleep "$(awk -v r=$RANDOM 'BEGIN { printf "%.3f", 0.01 * r / 32767 }')"
  kill -KILL "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  [[ $? -eq 137 ]] && kills=$((kills + 1))
  if [[ -n "${resume[*]}" ]] && ! grep -q "^resuming from\|holds all" "$kr.$reach.log"; then
    echo "FAIL: --resume after a kill: $(tail -2 "$kr.$reach.log")"
    failures=$((failures + 1))
  fi
done
if ! "$tempo" "${kargs[@]}" --save "$kr/run" --save-every 1 --resume "$kr/run" --out "$kr/run" \
  >"$kr.final.log" 2>&1; then
  echo "FAIL: tempo train --resume: $(tail -2 "$kr.final.log")"
  failures=$((failures + 1))
elif ! cmp -s "$kr/straight/policy.safetensors" "$kr/run/policy.safetensors" ||
  ! cmp -s "$kr/straight/curve.csv" "$kr/run/curve.csv" || [[ $kills -lt 4 ]] ||
  compgen -G "$kr/run/*.tmp.*" >/dev/null; then
  echo "FAIL: killed $kills times and resumed: the policy or curve differs from the uninterrupted"
  echo "  run's, or a temporary file was left: $(ls "$kr/run")"
  failures=$((failures + 1))
fi
expect_error "the checkpoint was trained with --lr" "${kargs[@]}" --lr 0.001 --resume "$kr/run"
expect_error "no training checkpoint in $kr/none" "${kargs[@]}" --resume "$kr/none"
fi

if want launch; then

# launch: a data-parallel job on loopback (rank 0 alone prints and writes the curve); bad usage,
# bad variables, a rank that fails, and a rendezvous nobody serves are clear errors.
expect_error "missing -n N" launch -- tempo train ppo
expect_error "the number of ranks must be 1..64" launch -n 0 -- tempo train ppo
expect_error "-n expects an integer" launch -n two -- tempo train ppo
expect_error "missing the command to run" launch -n 2
expect_error "unknown option --bogus" launch -n 2 --bogus -- tempo train ppo
WORLD_SIZE=2 RANK=2 expect_error "RANK=2 is outside [0, WORLD_SIZE=2)" train reinforce
WORLD_SIZE=2 expect_error "RANK is not set" train reinforce
dist="$(mktemp -d "${TMPDIR:-/tmp}/tempo-dist.XXXXXX")"
if ! "$tempo" launch -n 2 -- tempo train reinforce --iterations 3 --out "$dist/out" >"$dist/log" 2>&1 ||
  [[ "$(grep -c '^final mean return' "$dist/log")" -ne 1 ]] || ! grep -q '^data parallel: 2 ranks' "$dist/log" ||
  [[ ! -s "$dist/out/curve.csv" ]]; then
  echo "FAIL: tempo launch -n 2 -- tempo train: $(tail -3 "$dist/log")"
  failures=$((failures + 1))
fi
SECONDS=0
err="$("$tempo" launch -n 3 -- sh -c '[ "$RANK" = 1 ] || sleep 30; exit 3' 2>&1 >/dev/null)"
rc=$?
if [[ $rc -eq 0 || "$err" != *"rank 1 of 3 exited with status 3; stopping the other ranks"* || $SECONDS -gt 15 ]]; then
  echo "FAIL: a failing rank stops the job (exit $rc after ${SECONDS}s): $err"
  failures=$((failures + 1))
fi
port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
err="$(RANK=1 WORLD_SIZE=2 MASTER_PORT=$port TEMPO_DIST_TIMEOUT=1 "$tempo" train reinforce 2>&1 >/dev/null)"
if [[ $? -eq 0 || "$err" != *"tempo: error: distributed: rank 1 of 2: cannot reach the rendezvous at 127.0.0.1:$port"* ]]; then
  echo "FAIL: an unreachable rendezvous: $err"
  failures=$((failures + 1))
fi
rm -rf "$dist"

fi

if want policies; then
# Memory placement (src/mmap): a generated instance solved; bad instance files are one-line errors.
mmap_dir="$(mktemp -d)"
"$tempo" mmap generate --buffers 64 --seed 3 --out "$mmap_dir/i.txt" >/dev/null ||
  { echo "FAIL: tempo mmap generate"; failures=$((failures + 1)); }
if ! "$tempo" mmap solve "$mmap_dir/i.txt" --seconds 0.05 | grep -q "^synthetic-n64"; then
  echo "FAIL: tempo mmap solve"
  failures=$((failures + 1))
fi
if ! "$tempo" mmap solve "$mmap_dir/i.txt" --seconds 0.05 --simulations 20 | grep -q "mcts/heur"; then
  echo "FAIL: tempo mmap solve --simulations"
  failures=$((failures + 1))
fi
expect_error "--simulations expects a positive integer" mmap solve "$mmap_dir/i.txt" --simulations 0
printf 'mmap-instance 1\nname zero\ncapacity 0\nsupply 1 1\nbuffers 0\n' >"$mmap_dir/zero.txt"
expect_error "capacity must be positive" mmap solve "$mmap_dir/zero.txt"
printf 'mmap-instance 1\nname big\ncapacity 10\nsupply 1 1\nbuffers 1\n20 0 0 0 out 0 0 1 1\n' \
  >"$mmap_dir/big.txt"
expect_error "larger than the fast memory" mmap solve "$mmap_dir/big.txt"
printf 'mmap-instance 1\nname bad\ncapacity 10\nsupply 1 x\n' >"$mmap_dir/bad.txt"
expect_error "bad.txt:4: a supply value must be a number" mmap solve "$mmap_dir/bad.txt"
expect_error "cannot read the instance file" mmap solve "$mmap_dir/missing.txt"
expect_error "--capacity expects a fraction > 0" mmap extract --capacity 0 --out "$mmap_dir/x.txt"
expect_error "cannot load" mmap solve "$mmap_dir/i.txt" --agent "$mmap_dir/i.txt"
# MMap-MuZero: a short training run saves a network that solve plays.
if ! "$tempo" mmap train "$mmap_dir/i.txt" --out "$mmap_dir/net" --train-seconds 1 --rounds 2 |
  grep -q "^saved" || ! "$tempo" mmap solve "$mmap_dir/i.txt" --seconds 0.05 --agent "$mmap_dir/net" |
  grep -q "prod/heur"; then
  echo "FAIL: tempo mmap train / solve --agent"
  failures=$((failures + 1))
fi
expect_error "needs --out NET" mmap train "$mmap_dir/i.txt"
expect_error "--planning expects latent or game" mmap bench --planning dreams
expect_error "--swap-policy needs --memory-budget" train reinforce --swap-policy heuristic
expect_error "expected largest, heuristic or learned:FILE" train reinforce --env synthetic \
  --memory-budget 1GiB --swap-policy greedy
rm -rf "$mmap_dir"

# Loop nests (src/loops): a program file optimized by given actions; bad programs and actions are
# one-line errors.
loops_dir="$(mktemp -d)"
examples_dir="$(dirname "$0")/../../examples/loops"
if ! "$tempo" loops optimize "$examples_dir/matvec.loop" --actions 0,76 --threads 1 |
  grep -q "transformations: S0:interchange(0,1)"; then
  echo "FAIL: tempo loops optimize FILE --actions"
  failures=$((failures + 1))
fi
printf 'array A 8 8\nstatement S0 i j : 0 <= i < 8 and 0 <= j < 8\n  A[i][j] = A[i*j][j]\n' \
  >"$loops_dir/nonaffine.loop"
expect_error "nonaffine.loop:3: index \`i*j\` of A is not an affine expression" \
  loops optimize "$loops_dir/nonaffine.loop"
printf 'array A 8\nstatement S0 i : 0 <= i < 8\n  A[i] = C[i]\n' >"$loops_dir/unknown.loop"
expect_error "unknown.loop:3: unknown array \`C\`" loops optimize "$loops_dir/unknown.loop"
expect_error "action 99 is outside 0..76" loops optimize "$examples_dir/matvec.loop" --actions 99
expect_error "is not legal on branch S1" loops optimize "$examples_dir/sweep.loop" \
  --actions 76,59
expect_error "cannot read loop program" loops optimize "$loops_dir/missing.loop"
expect_error "not a Pearl agent" loops optimize "$examples_dir/matvec.loop" \
  --agent "$examples_dir/matvec.loop"
rm -rf "$loops_dir"

for args in "--help" "expr --help" "generate --help" "eval --help" "train --help" "mmap --help" \
  "loops --help"; do
  # shellcheck disable=SC2086
  if ! "$tempo" $args | grep -q "usage: tempo"; then
    echo "FAIL: tempo $args prints no usage"
    failures=$((failures + 1))
  fi
done

rm -f /tmp/tempo_cli_err.$$
# Graph rewrites (src/rewrite): the substitution library lists itself; an unknown model and a bad
# option value are one-line errors.
if ! "$tempo" rewrite substitutions --enumerate 1 | grep -q "substitutions in the library"; then
  echo "FAIL: tempo rewrite substitutions"
  failures=$((failures + 1))
fi
expect_error "unknown model 'vgg16'" rewrite bench --model vgg16
expect_error "--budget expects an integer" rewrite bench --budget many
expect_error "unknown rewrite command 'tune'" rewrite tune
# A saved agent: trained on one small model, played on a Tempo program's regions.
rewrite_dir="$(mktemp -d)"
if ! "$tempo" rewrite train --quick --models bert --seconds 5 --out "$rewrite_dir/a.safetensors" |
  grep -q "saved to"; then
  echo "FAIL: tempo rewrite train"
  failures=$((failures + 1))
fi
if ! "$tempo" train ppo --iterations 2 --rewrites "learned:$rewrite_dir/a.safetensors" \
  --verbose 2>&1 | grep -q "rewrites: .*ops, .*places a substitution applies"; then
  echo "FAIL: tempo train --rewrites learned:FILE"
  failures=$((failures + 1))
fi
expect_error "no tensor 'enc1.weight'" train ppo --iterations 2 \
  --rewrites "learned:$(dirname "$0")/../../data/loop_schedules.safetensors"
expect_error "tempo rewrite train needs --out FILE" rewrite train --quick
expect_error "no_such_agent.safetensors" rewrite bench --quick \
  --agent "$rewrite_dir/no_such_agent.safetensors"
rm -rf "$rewrite_dir"

fi

if [[ $failures -ne 0 ]]; then
  echo "$failures CLI check(s) failed"
  exit 1
fi
echo "all CLI checks passed"
