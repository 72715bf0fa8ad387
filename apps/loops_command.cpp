// `tempo loops`: loop-nest optimization on the polyhedral model (src/loops): the Pearl
// benchmarks under isl's scheduler, a beam search over the transformation action space, and Polly.
#include <cmath>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "commands.h"
#include "loops/baselines.h"
#include "loops/benchmarks.h"
#include "loops/codegen.h"
#include "loops/transform.h"
#include "parse_args.h"
#include "util/error.h"

namespace {

using namespace tempo;
using namespace tempo::loops;

const char* kUsage =
    "usage: tempo loops <bench|optimize|actions> [options]\n"
    "Loop nests scheduled with isl: transformations (interchange, reversal, skew, tiling,\n"
    "parallelization, unrolling) checked by dependence analysis, compiled to C with OpenMP and\n"
    "timed (the minimum of several runs; checksums compared with the unoptimized program).\n\n"
    "  tempo loops bench [--quick] [--threads N] [--width W] [--depth D] [--only NAME]\n"
    "      times every benchmark unoptimized and prints the speedups of isl's scheduler (also\n"
    "      with its permutable bands tiled by 32), the beam search (width W, default 2; depth\n"
    "      D, default 3) and Polly (clang-14), with geometric means; --quick searches with\n"
    "      width 1 and depth 2 and times 3 runs, not 5\n"
    "  tempo loops optimize NAME [--quick] [--small] [--threads N] [--width W] [--depth D]\n"
    "      beam-searches one benchmark and prints the transformations, the generated C kernel\n"
    "      and the speedup; --small uses the test size\n"
    "  tempo loops actions\n"
    "      lists the action space (the agent's choices on one branch of the loop tree)\n\n"
    "benchmarks: blur cvtcolor doitgen heat2d heat3d jacobi2d mvt seidel2d\n";

using cli::Args;

Args parse(int argc, char** argv, const std::vector<std::string>& valued,
           const std::vector<std::string>& flags) {
  return cli::parse_options(argc, argv, 2, valued, flags, "loops");
}

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
  b.depth = get_int(a, "--depth", a.has("--quick") ? 2 : 3, 0);
  return b;
}

std::string speedup(const Result& r, const Result& base) {
  if (!r.ok) return "-";
  return cat(std::to_string(base.ms / r.ms).substr(0, 5), "x",
             same_checksum(r.checksum, base.checksum) ? "" : "!");
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
  const char* kColumns[] = {"isl", "isl+tile", "beam", "polly"};
  constexpr int kN = 4;
  std::printf("%-9s %11s", "benchmark", "unopt (ms)");
  for (const char* c : kColumns) std::printf(" %8s", c);
  std::printf("  beam schedule\n");
  double log_sum[kN] = {};
  int count[kN] = {};
  bool mismatch = false;
  for (const std::string& name : names) {
    Program p = benchmark(name, Size::Bench);
    Evaluator ev(ro);
    Result base = run_unoptimized(p, ev);
    LoopEnv env(p);
    Result results[kN] = {run_isl_scheduler(p, env.deps(), ev),
                          run_isl_scheduler(p, env.deps(), ev, 32),
                          run_beam(env, ev, bo, base.checksum), run_polly(p, ro)};
    std::printf("%-9s %11.2f", name.c_str(), base.ms);
    for (int k = 0; k < kN; ++k) {
      std::printf(" %8s", speedup(results[k], base).c_str());
      if (!results[k].ok) continue;
      log_sum[k] += std::log(base.ms / results[k].ms);
      ++count[k];
      mismatch |= !same_checksum(results[k].checksum, base.checksum);
    }
    std::printf("  %s\n", results[2].note.c_str());
    std::fflush(stdout);
  }
  std::printf("%-9s %11s", "geomean", "");
  for (int k = 0; k < kN; ++k)
    std::printf(" %8s",
                count[k]
                    ? cat(std::to_string(std::exp(log_sum[k] / count[k])).substr(0, 5), "x").c_str()
                    : "-");
  std::printf("\n");
  if (!polly_available())
    std::printf("polly: skipped, clang-14 with Polly and OpenMP is not installed\n");
  if (mismatch) std::printf("!: checksum differs from the unoptimized program's\n");
  return mismatch ? 1 : 0;
}

int optimize(const Args& a) {
  if (a.positional.size() != 1) throw UserError("tempo loops optimize expects one benchmark name");
  Program p = benchmark(a.positional[0], a.has("--small") ? Size::Small : Size::Bench);
  Evaluator ev(run_options(a));
  Result base = run_unoptimized(p, ev);
  LoopEnv env(p);
  Result r = run_beam(env, ev, beam_options(a), base.checksum);
  std::printf("benchmark: %s\ntransformations: %s\n\n%s\n", p.name.c_str(), r.note.c_str(),
              r.code.c_str());
  std::printf("unoptimized %.3f ms, optimized %.3f ms: speedup %s\n", base.ms, r.ms,
              speedup(r, base).c_str());
  const MemoStats& st = ev.stats();
  const MemoStats& ls = env.stats();
  std::printf("memoization: legality %lld hits / %lld misses, timing %lld hits / %lld misses\n",
              static_cast<long long>(ls.legality_hits), static_cast<long long>(ls.legality_misses),
              static_cast<long long>(st.time_hits), static_cast<long long>(st.time_misses));
  return same_checksum(r.checksum, base.checksum) ? 0 : 1;
}

int actions() {
  const auto& space = action_space();
  for (size_t k = 0; k < space.size(); ++k)
    std::printf("%3zu %s\n", k, space[k].to_string().c_str());
  std::printf("%d actions\n", num_actions());
  return 0;
}

}  // namespace

int run_loops_command(int argc, char** argv) {
  if (argc < 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h") {
    std::fputs(kUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  const std::string sub = argv[1];
  for (int k = 2; k < argc; ++k)
    if (std::string(argv[k]) == "--help" || std::string(argv[k]) == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    }
  if (sub == "bench")
    return bench(parse(argc, argv, {"--threads", "--width", "--depth", "--only"}, {"--quick"}));
  if (sub == "optimize")
    return optimize(parse(argc, argv, {"--threads", "--width", "--depth"}, {"--quick", "--small"}));
  if (sub == "actions") {
    Args a = parse(argc, argv, {}, {});
    if (!a.positional.empty()) throw UserError(cat("unexpected argument '", a.positional[0], "'"));
    return actions();
  }
  throw UserError(cat("unknown loops command '", sub, "' (bench, optimize or actions)"));
}
