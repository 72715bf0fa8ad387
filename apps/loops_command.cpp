// `tempo loops`: loop-nest optimization on the polyhedral model (src/loops): the Pearl
// benchmarks under isl's scheduler, a beam search over the transformation action space, and Polly.
#include <chrono>
#include <cmath>
#include <filesystem>
#include <memory>
#include <cstdio>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "commands.h"
#include "loops/baselines.h"
#include "loops/benchmarks.h"
#include "loops/codegen.h"
#include "loops/generator.h"
#include "loops/pearl.h"
#include "loops/schedule_model.h"
#include "loops/text.h"
#include "loops/transform.h"
#include "parse_args.h"
#include "util/error.h"

namespace {

using namespace tempo;
using namespace tempo::loops;

const char* kUsage =
    "usage: tempo loops <bench|train|optimize|schedules|actions> [options]\n"
    "Loop nests scheduled with isl: transformations (interchange, reversal, skew, tiling,\n"
    "parallelization, unrolling) checked by dependence analysis, compiled to C with OpenMP and\n"
    "timed (the minimum of several runs; checksums compared with the unoptimized program).\n\n"
    "  tempo loops bench [--quick] [--threads N] [--width W] [--depth D] [--only NAME]\n"
    "                    [--agent FILE | --train] [--no-memo-check] [training options]\n"
    "      trains the Pearl agent on generated programs (never on the benchmarks), then times\n"
    "      every benchmark unoptimized and prints the speedups of isl's scheduler (also with\n"
    "      its permutable bands tiled by 32), the beam search (width W, default 2; depth D,\n"
    "      default 3), Polly (clang-14), Pearl (greedy) and Pearl+sel (the fastest schedule\n"
    "      its greedy episode passed through), with geometric means, on all\n"
    "      threads and on one; then trains once more without memoization to show what it\n"
    "      saves (unless --no-memo-check); --agent FILE: plays that agent instead of training\n"
    "      one (no memoization check); --quick: 3 runs, beam width 1 and depth 1 (candidates\n"
    "      run once, killed past 4x the original's time), and the agent shipped in\n"
    "      data/loops_agent.safetensors (--train or any training option: a smaller training)\n"
    "  tempo loops train [--quick] [--no-memo] [--out FILE] [training options]\n"
    "      trains the agent and prints its training curve and memoization figures, and saves\n"
    "      it to FILE (safetensors): pre-training (run-time regression), imitation of\n"
    "      measured demonstrations (a one-step look-ahead episode per training program),\n"
    "      then PPO (each transformation timed and rewarded); the learners are Tempo programs\n"
    "  training options:\n"
    "      --programs N       generated training programs (default 48, --quick 16)\n"
    "      --iterations N     PPO batches (default 16, --quick 5; 0: the imitated network\n"
    "                         is the agent)\n"
    "      --imitation-steps N  Adam steps of imitation of the demonstrations (default 200;\n"
    "                         0: none, as --no-imitation)\n"
    "      --entropy X        PPO's entropy bonus at the start, decaying to 0 (default\n"
    "                         0.01 after imitation, else 0.1)\n"
    "      --final-reward     one reward per episode (its log4 speedup) instead of per step\n"
    "      --no-imitation     PPO from the pre-trained network, without demonstrations\n"
    "      --uniform-start    PPO's policy starts uniform over the actions, not over the\n"
    "                         kinds of transformation\n"
    "      --reuse-timings    timings measured by earlier trainings (kept with the compiled\n"
    "                         programs in $TEMPO_LOOPS_CACHE) are not measured again\n"
    "  tempo loops optimize NAME|FILE [--agent FILE [--select]] [--actions LIST] [--quick]\n"
    "                       [--small] [--threads N] [--width W] [--depth D]\n"
    "      optimizes a benchmark or a loop program in the text format (see README.md,\n"
    "      'Learned loop optimization') and prints the transformations, the generated C\n"
    "      kernel and the speedup: with a trained agent (--agent; --select: the fastest\n"
    "      schedule of its episode), the given action indices\n"
    "      (--actions 3,76: branch by branch, 76 = next), or else the beam search; --small\n"
    "      uses a benchmark's test size\n"
    "  tempo loops schedules --data FILES [--test FILES] [--model FILE | --out FILE]\n"
    "                        [--steps N] [--unsure X]\n"
    "  tempo loops schedules --generate N --timings FILE [--seed S]\n"
    "      the learned loop schedule of Tempo's own generated loops (loops/schedule_model.h):\n"
    "      trains the cost model (a Tempo program; --steps Adam steps, default 1500) on the\n"
    "      loop timings in FILES (comma-separated CSV files that programs run with\n"
    "      TEMPO_LOOP_TIMINGS=FILE wrote), saves it to --out (learned:FILE for\n"
    "      `tempo train --loop-schedules` and Python's loop_schedules) and prints how its\n"
    "      choices score against the measured ones, on the training data and on --test; with\n"
    "      --model, scores that model instead of training one; --unsure X: scored leaving to\n"
    "      the measurement the sizes predicted within X (log time) of the threshold (default\n"
    "      0.1, as the policy does; 0: the model decides all); --generate: appends to FILE\n"
    "      the timings of N generated programs (random chains of elementwise ops and row\n"
    "      reductions over rows of 1-16 columns), training data without Tempo's own programs\n"
    "  tempo loops actions\n"
    "      lists the action space (the agent's choices on one branch of the loop tree)\n\n"
    "benchmarks: blur cvtcolor doitgen heat2d heat3d jacobi2d mvt seidel2d\n";

using cli::Args;

// The integer value of option `k` (dflt when absent), at least `lo`.
int get_int(const Args& a, const std::string& k, int dflt, int lo) {
  if (!a.has(k)) return dflt;
  int64_t v = cli::parse_int(k, a.get(k, ""));
  if (v < lo || v > 1000000) throw UserError(cat(k, " must be at least ", lo));
  return static_cast<int>(v);
}

RunOptions run_options(const Args& a) {
  RunOptions o;
  o.threads = get_int(a, "--threads", 0, 1);
  o.reps = a.has("--quick") ? 3 : 5;
  return o;
}

BeamOptions beam_options(const Args& a) {
  BeamOptions b;
  b.width = get_int(a, "--width", a.has("--quick") ? 1 : 2, 1);
  b.depth = get_int(a, "--depth", a.has("--quick") ? 1 : 3, 0);
  if (a.has("--quick")) {
    // One run per candidate, none past 4 runs of the original: the beam's pick is timed again.
    b.candidate_reps = 1;
    b.max_slowdown = 4;
  }
  return b;
}

std::string speedup(const Result& r, const Result& base) {
  if (!r.ok) return "-";
  return cat(std::to_string(base.ms / r.ms).substr(0, 5), "x",
             same_checksum(r.checksum, base.checksum) ? "" : "!");
}

std::string ratio(double x) {
  return cat(std::to_string(x).substr(0, 5), "x");
}

// The agent's sizes and training budget (--quick: 16 programs, 3-11 min on 2 cores, most of it
// timing the imitation's demonstrations unless their timings are cached).
PearlOptions pearl_options(const Args& a) {
  const bool quick = a.has("--quick");
  PearlOptions o;
  o.iterations = get_int(a, "--iterations", quick ? 5 : 16, 0);
  if (a.has("--imitation-steps")) o.imitation_steps = get_int(a, "--imitation-steps", 0, 0);
  o.batch = quick ? 48 : 64;
  o.pretrain_steps = quick ? 150 : 300;
  o.run.reps = 2;  // training programs run 1-20 ms: the minimum of 2 runs
  o.run.time_limit_s = 5;
  o.memoize = !a.has("--no-memo");
  o.step_rewards = !a.has("--final-reward");
  o.kind_prior = !a.has("--uniform-start");
  if (a.has("--no-imitation")) {
    o.imitation_steps = 0;
    o.entropy_start = 0.1;  // the paper's, for a policy that starts uniform
  }
  o.run.reuse_timings = a.has("--reuse-timings");
  if (a.has("--entropy")) {
    o.entropy_start = cli::parse_double("--entropy", a.get("--entropy", ""));
    if (!(o.entropy_start >= 0 && o.entropy_start < 10))
      throw UserError("--entropy must be in [0, 10)");
  }
  return o;
}

std::vector<Program> training_programs(const Args& a) {
  // Seeds from 1000: the tests use small ones.
  return generate_programs(1000, get_int(a, "--programs", a.has("--quick") ? 16 : 48, 1));
}

void print_training(const PearlTraining& t, int programs) {
  std::printf("Pearl: %d generated programs, %lld episodes, %lld transformations, %.1f s (%.1f s "
              "pre-training)\n",
              programs, static_cast<long long>(t.episodes),
              static_cast<long long>(t.transformations), t.seconds, t.pretrain_seconds);
  std::printf("  episodes %.1f s (compiling and timing %.1f s), learner and the rest %.1f s\n",
              t.episode_seconds, t.measure_seconds,
              t.seconds - t.episode_seconds - t.pretrain_seconds - t.imitation_seconds);
  if (!t.pretrain_loss.empty())
    std::printf("  pre-training loss (run-time regression): %.3f -> %.3f\n",
                t.pretrain_loss.front(), t.pretrain_loss.back());
  if (!t.imitation_loss.empty())
    std::printf("  imitation: %lld demonstrated states (%lld transformations, the rest \"next\"), "
                "%.1f s (compiling and timing %.1f s), loss %.3f -> %.3f\n",
                static_cast<long long>(t.demonstrations),
                static_cast<long long>(t.demonstrated_moves), t.imitation_seconds,
                t.demo_measure_seconds, t.imitation_loss.front(), t.imitation_loss.back());
  std::printf("  mean reward (log4 speedup) per PPO batch:");
  for (double r : t.mean_reward) std::printf(" %.3f", r);
  std::printf("\n");
  const MemoStats& m = t.memo;
  auto rate = [](int64_t h, int64_t miss) { return h + miss ? 100.0 * h / (h + miss) : 0.0; };
  std::printf("  memoization: legality %lld hits / %lld misses (%.1f%%), timing %lld hits / %lld "
              "misses (%.1f%%)\n",
              static_cast<long long>(m.legality_hits), static_cast<long long>(m.legality_misses),
              rate(m.legality_hits, m.legality_misses), static_cast<long long>(m.time_hits),
              static_cast<long long>(m.time_misses), rate(m.time_hits, m.time_misses));
  if (t.illegal_picks) std::printf("  the masked policy picked %lld illegal actions\n",
                                   static_cast<long long>(t.illegal_picks));
  std::fflush(stdout);
}

// The agent that `tempo loops bench --quick` plays instead of training one (its training is
// what takes minutes), and the command that rebuilds it.
const char* kShippedAgentRecipe =
    "tempo loops train --quick --programs 96 --iterations 0 --imitation-steps 800 --out";
std::string shipped_agent() {
#ifdef TEMPO_SOURCE_DIR
  return cat(TEMPO_SOURCE_DIR, "/data/loops_agent.safetensors");
#else
  return "data/loops_agent.safetensors";
#endif
}

// The agent file bench plays (--agent, or the shipped one with --quick); empty: train one.
std::string bench_agent_file(const Args& a) {
  if (a.has("--agent") && a.has("--train"))
    throw UserError("--agent and --train exclude each other");
  if (a.has("--agent")) return a.get("--agent", "");
  bool train = a.has("--train");
  for (const char* k : {"--programs", "--iterations", "--imitation-steps", "--entropy",
                        "--final-reward", "--uniform-start", "--no-imitation", "--reuse-timings"})
    train |= a.has(k);  // training options ask for a training
  if (!a.has("--quick") || train) return "";
  const std::string file = shipped_agent();
  if (!std::filesystem::exists(file))
    throw UserError(cat("--quick plays the agent in ", file,
                        ", which does not exist: rebuild it with `", kShippedAgentRecipe, " ",
                        file, "`, or pass --agent FILE or --train"));
  return file;
}

int bench(const Args& a) {
  if (!a.positional.empty()) throw UserError(cat("unexpected argument '", a.positional[0], "'"));
  std::vector<std::string> names = benchmark_names();
  if (a.has("--only")) {
    benchmark(a.get("--only", ""), Size::Small);  // UserError for an unknown name
    names = {a.get("--only", "")};
  }
  RunOptions ro = run_options(a);
  BeamOptions bo = beam_options(a);
  PearlOptions po = pearl_options(a);
  po.memoize = true;
  const std::string agent_file = bench_agent_file(a);
  std::vector<Program> train;
  PearlTraining t;
  if (agent_file.empty()) {
    train = training_programs(a);
    t = train_pearl(train, po);
    print_training(t, static_cast<int>(train.size()));
  } else {
    t.network = std::make_shared<PearlNetwork>(PearlNetwork::load(agent_file, po));
    std::printf("Pearl: the agent in %s (trained before; played live on each benchmark)\n",
                agent_file.c_str());
  }
  if (a.has("--quick"))
    std::printf("quick: %s, %d repetitions, beam width %d and depth %d (candidates run once, "
                "killed past %.0fx the original's time)%s\n",
                agent_file.empty() ? "a shorter training" : cat("agent from ", agent_file).c_str(),
                ro.reps, bo.width, bo.depth, bo.max_slowdown,
                agent_file.empty() ? "" : ", no memoization check");

  const char* kColumns[] = {"isl", "isl+tile", "beam", "polly", "pearl", "pearl+sel"};
  constexpr int kN = 6;
  PearlOptions select = po;
  select.select_measured = true;
  RunOptions one = ro;
  one.threads = 1;
  double log_sum[2][kN] = {}, lin_sum[2] = {};
  int count[2][kN] = {};
  bool mismatch = false;
  std::vector<std::string> single_rows, schedules;
  std::printf("\nspeedup over the unoptimized program, %s threads\n",
              ro.threads ? std::to_string(ro.threads).c_str() : "all");
  std::printf("%-9s %11s", "benchmark", "unopt (ms)");
  for (const char* c : kColumns) std::printf(" %8s", c);
  std::printf("\n");
  for (const std::string& name : names) {
    Program p = benchmark(name, Size::Bench);
    Evaluator ev(ro);
    Result base = run_unoptimized(p, ev);
    LoopEnv env(p);
    Result results[kN] = {run_isl_scheduler(p, env.deps(), ev),
                          run_isl_scheduler(p, env.deps(), ev, 32),
                          run_beam(env, ev, bo, base.checksum), run_polly(p, ro),
                          run_pearl(p, *t.network, po, ev),
                          run_pearl(p, *t.network, select, ev)};
    std::printf("%-9s %11.2f", name.c_str(), base.ms);
    for (int k = 0; k < kN; ++k) {
      std::printf(" %8s", speedup(results[k], base).c_str());
      if (!results[k].ok) continue;
      log_sum[0][k] += std::log(base.ms / results[k].ms);
      ++count[0][k];
      mismatch |= !same_checksum(results[k].checksum, base.checksum);
    }
    std::printf("\n");
    schedules.push_back(cat(name, ": beam ", results[2].note, "; pearl ", results[4].note,
                            "; pearl+sel ", results[5].note));
    // The same schedules on one thread: what is left without parallel loops.
    Measurement b1 = compile_and_run(c_file(p, base.code), one);
    char head[64];
    std::snprintf(head, sizeof head, "%-9s %11.2f", name.c_str(), b1.ms);
    std::string row = head;
    for (int k = 0; k < kN; ++k) {
      std::string cell = "-";
      if (results[k].ok) {
        Measurement m = k == 3 ? [&] {
          Result r = run_polly(p, one);
          return Measurement{r.ms, r.checksum};
        }()
                               : compile_and_run(c_file(p, results[k].code), one);
        cell = ratio(b1.ms / m.ms);
        log_sum[1][k] += std::log(b1.ms / m.ms);
        ++count[1][k];
      }
      char buf[32];
      std::snprintf(buf, sizeof buf, " %8s", cell.c_str());
      row += buf;
    }
    single_rows.push_back(row);
    lin_sum[0] += base.ms;
    lin_sum[1] += b1.ms;
    std::fflush(stdout);
  }
  auto geomean_row = [&](int w) {
    std::printf("%-9s %11s", "geomean", "");
    for (int k = 0; k < kN; ++k)
      std::printf(" %8s", count[w][k] ? ratio(std::exp(log_sum[w][k] / count[w][k])).c_str() : "-");
    std::printf("\n");
  };
  geomean_row(0);
  std::printf("\nthe same schedules on 1 thread\n%-9s %11s", "benchmark", "unopt (ms)");
  for (const char* c : kColumns) std::printf(" %8s", c);
  std::printf("\n");
  for (const std::string& r : single_rows) std::printf("%s\n", r.c_str());
  geomean_row(1);
  std::printf("\npaper (Pearl on Tiramisu, 64-core nodes): 3.16x geomean over unoptimized, 2.02x over "
              "the Tiramisu autoscheduler, 3.36x over Pluto\n");
  if (count[0][4] && count[0][3] && count[0][1])
    std::printf("here: Pearl %s over unoptimized, %s over Polly, %s over isl+tile\n",
                ratio(std::exp(log_sum[0][4] / count[0][4])).c_str(),
                ratio(std::exp(log_sum[0][4] / count[0][4] - log_sum[0][3] / count[0][3])).c_str(),
                ratio(std::exp(log_sum[0][4] / count[0][4] - log_sum[0][1] / count[0][1])).c_str());
  std::printf("\nchosen transformations\n");
  for (const std::string& s : schedules) std::printf("  %s\n", s.c_str());
  if (!polly_available())
    std::printf("polly: skipped, clang-14 with Polly and OpenMP is not installed\n");
  if (mismatch) std::printf("!: checksum differs from the unoptimized program's\n");
  if (agent_file.empty() && !a.has("--no-memo-check")) {
    std::printf("\nthe same training without memoization (legality and timings recomputed, every "
                "schedule compiled):\n");
    po.memoize = false;
    const PearlTraining t2 = train_pearl(train, po);
    print_training(t2, static_cast<int>(train.size()));
    std::printf("memoization: %.1f s with, %.1f s without (%.2fx)\n", t.seconds, t2.seconds,
                t2.seconds / t.seconds);
  }
  return mismatch ? 1 : 0;
}

int train(const Args& a) {
  if (!a.positional.empty()) throw UserError(cat("unexpected argument '", a.positional[0], "'"));
  const std::string out = a.get("--out", "");
  if (!out.empty()) {
    auto dir = std::filesystem::path(out).parent_path();
    if (!dir.empty() && !std::filesystem::is_directory(dir))
      throw UserError(cat("--out: directory '", dir.string(), "' does not exist"));
  }
  const std::vector<Program> programs = training_programs(a);
  const PearlTraining t = train_pearl(programs, pearl_options(a));
  print_training(t, static_cast<int>(programs.size()));
  if (!out.empty()) {
    t.network->save(out);
    std::printf("saved the agent to %s\n", out.c_str());
  }
  return 0;
}

// Applies action indices branch by branch (as the agent would).
Result run_actions(const Program& p, const std::string& list, Evaluator& ev) {
  LoopEnv env(p);
  Result r;
  r.method = "actions";
  for (const std::string& item : cli::split_commas(list)) {
    const int64_t index = cli::parse_int("--actions", item);
    if (index < 0 || index >= num_actions())
      throw UserError(cat("--actions: action ", index, " is outside 0..", num_actions() - 1,
                          " (tempo loops actions lists them)"));
    if (env.done()) throw UserError(cat("--actions: action ", index, " comes after the last branch"));
    const int branch = env.branch();
    const Action& a = action_space()[static_cast<size_t>(index)];
    if (!env.step(static_cast<int>(index)))
      throw UserError(cat("--actions: ", a.to_string(), " (action ", index,
                          ") is not legal on branch ", p.statements[static_cast<size_t>(branch)].name));
    if (a.kind != Kind::Next) r.actions.emplace_back(branch, a);
  }
  for (const auto& [b, a] : r.actions)
    r.note += cat(r.note.empty() ? "" : " ", "S", b, ":", a.to_string());
  if (r.note.empty()) r.note = "(none)";
  r.code = kernel_code(p, env.schedule());
  Measurement m = ev.measure(p, env.schedule());
  r.ok = true;
  r.ms = m.ms;
  r.checksum = m.checksum;
  return r;
}

int optimize(const Args& a) {
  if (a.positional.size() != 1)
    throw UserError("tempo loops optimize expects one benchmark name or loop program file");
  const std::string what = a.positional[0];
  bool is_benchmark = false;
  for (const std::string& n : benchmark_names()) is_benchmark |= n == what;
  Program p = is_benchmark ? benchmark(what, a.has("--small") ? Size::Small : Size::Bench)
                           : read_program_file(what);
  Evaluator ev(run_options(a));
  Result r;
  if (a.has("--actions") && a.has("--agent"))
    throw UserError("--actions and --agent exclude each other");
  std::optional<PearlNetwork> net;
  PearlOptions po;
  if (a.has("--agent")) net.emplace(PearlNetwork::load(a.get("--agent", ""), po));
  if (a.has("--select") && !net) throw UserError("--select needs --agent");
  po.select_measured = a.has("--select");
  Result base = run_unoptimized(p, ev);
  LoopEnv env(p);
  if (a.has("--actions")) r = run_actions(p, a.get("--actions", ""), ev);
  else if (net) r = run_pearl(p, *net, po, ev);
  else r = run_beam(env, ev, beam_options(a), base.checksum);
  std::printf("program: %s\nmethod: %s\ntransformations: %s\n\n%s\n", p.name.c_str(),
              a.has("--actions") ? "given actions" : net ? "Pearl agent" : "beam search",
              r.note.c_str(), r.code.c_str());
  std::printf("unoptimized %.3f ms, optimized %.3f ms: speedup %s\n", base.ms, r.ms,
              speedup(r, base).c_str());
  const MemoStats& st = ev.stats();
  const MemoStats& ls = env.stats();  // the beam search's environment
  if (!a.has("--actions") && !net)
    std::printf("memoization: legality %lld hits / %lld misses, timing %lld hits / %lld misses\n",
                static_cast<long long>(ls.legality_hits),
                static_cast<long long>(ls.legality_misses), static_cast<long long>(st.time_hits),
                static_cast<long long>(st.time_misses));
  return same_checksum(r.checksum, base.checksum) ? 0 : 1;
}

// Loop timings from comma-separated CSV files.
std::vector<LoopTiming> loop_timings(const std::string& files) {
  std::vector<LoopTiming> out;
  for (const std::string& path : cli::split_commas(files))
    for (LoopTiming& t : read_loop_timings(path)) out.push_back(std::move(t));
  if (out.empty()) throw UserError(cat("no loop timings in '", files, "'"));
  return out;
}

void print_score(const char* what, const std::vector<LoopTiming>& data, const ScheduleModel& m,
                 double unsure) {
  const ScheduleScore learned = score_schedules(
      data, [&](const LoopTiming& t) { return m.choose(t.cluster, t.rows, t.cols, unsure); });
  std::printf("%-9s %5lld decisions: learned agrees with the measured choice on %.1f%% (%lld left"
              " to the measurement where it is not sure); seconds summed: learned %.6f, rows outer"
              " %.6f, columns outer %.6f, best %.6f\n",
              what, static_cast<long long>(learned.decisions),
              100.0 * static_cast<double>(learned.agreements) / learned.decisions,
              static_cast<long long>(learned.measured), learned.chosen_s, learned.rows_outer_s,
              learned.columns_outer_s, learned.best_s);
}

int schedules(const Args& a) {
  if (!a.positional.empty()) throw UserError(cat("unexpected argument '", a.positional[0], "'"));
  if (a.has("--generate") || a.has("--timings")) {
    if (!a.has("--generate") || !a.has("--timings") || a.has("--data") || a.has("--model"))
      throw UserError("--generate N needs --timings FILE (and no --data or --model)");
    const int n = get_int(a, "--generate", 0, 1);
    const auto t0 = std::chrono::steady_clock::now();
    const int64_t decisions = generate_loop_timings(
        n, static_cast<uint64_t>(get_int(a, "--seed", 1, 0)), a.get("--timings", ""));
    std::printf("%d generated programs: %lld loop timings appended to %s in %.1f s\n", n,
                static_cast<long long>(decisions), a.get("--timings", "").c_str(),
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    return 0;
  }
  if (a.has("--model") == a.has("--data"))
    throw UserError("tempo loops schedules needs --data FILES (to train) or --model FILE");
  if (a.has("--model") && (a.has("--out") || a.has("--steps")))
    throw UserError("--out and --steps train a model: not with --model");
  const double unsure = a.has("--unsure") ? cli::parse_double("--unsure", a.get("--unsure", ""))
                                          : ScheduleModel::kUnsure;
  if (!(unsure >= 0)) throw UserError(cat("--unsure must not be negative, got ", unsure));
  std::optional<ScheduleModel> model;
  if (a.has("--model")) {
    model = ScheduleModel::load(a.get("--model", ""));
  } else {
    const std::vector<LoopTiming> data = loop_timings(a.get("--data", ""));
    ScheduleModelOptions o;
    o.steps = get_int(a, "--steps", static_cast<int>(o.steps), 1);
    std::vector<double> losses;
    const auto t0 = std::chrono::steady_clock::now();
    model = ScheduleModel::train(data, o, &losses);
    std::printf("trained on %zu loop timings in %.1f s: loss %.4f at the first step, %.4f at the"
                " last\n",
                data.size(),
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
                losses.front(), losses.back());
    print_score("training", data, *model, unsure);
    if (a.has("--out")) {
      model->save(a.get("--out", ""));
      std::printf("saved to %s\n", a.get("--out", "").c_str());
    }
  }
  if (a.has("--test")) print_score("test", loop_timings(a.get("--test", "")), *model, unsure);
  return 0;
}

int actions(const Args& a) {
  if (!a.positional.empty()) throw UserError(cat("unexpected argument '", a.positional[0], "'"));
  const auto& space = action_space();
  for (size_t k = 0; k < space.size(); ++k)
    std::printf("%3zu %s\n", k, space[k].to_string().c_str());
  std::printf("%d actions\n", num_actions());
  return 0;
}

}  // namespace

int run_loops_command(int argc, char** argv) {
  return cli::run_subcommand(
      argc, argv, "loops", kUsage,
      {{"bench",
        {"--threads", "--width", "--depth", "--only", "--programs", "--iterations",
         "--imitation-steps", "--entropy", "--agent"},
        {"--quick", "--final-reward", "--uniform-start", "--no-imitation", "--reuse-timings",
         "--no-memo-check", "--train"},
        bench},
       {"train",
        {"--programs", "--iterations", "--imitation-steps", "--entropy", "--out"},
        {"--quick", "--no-memo", "--final-reward", "--uniform-start", "--no-imitation",
         "--reuse-timings"},
        train},
       {"optimize",
        {"--threads", "--width", "--depth", "--agent", "--actions"},
        {"--quick", "--small", "--select"},
        optimize},
       {"schedules",
        {"--data", "--test", "--model", "--out", "--steps", "--generate", "--timings", "--seed",
         "--unsure"},
        {},
        schedules},
       {"actions", {}, {}, actions}});
}
