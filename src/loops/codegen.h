// C code for a scheduled loop-nest program: isl's AST generator builds the loops from the
// schedule, statements print as calls of macros holding their bodies, marked loops get OpenMP
// or unroll pragmas. The whole file allocates and initializes the arrays from a fixed seed, times
// the kernel over several repetitions (the minimum counts) and prints a checksum of the written
// arrays. Binaries are cached by a hash of their source and compiler command.
#pragma once

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "loops/program.h"
#include "loops/transform.h"

namespace tempo::loops {

struct LoopMark {
  bool parallel = false;
  int unroll = 0;
};
// The mark of a loop at schedule dimension `dim` holding the named statements.
using MarkFn = std::function<LoopMark(int dim, const std::set<std::string>& stmts)>;

// The kernel's statements (loops from isl's AST generator) for a schedule map over the program's
// statements. Only the outermost of nested parallel loops gets a parallel pragma.
std::string kernel_code(const Program& p, const std::string& schedule_isl, const MarkFn& marks);
std::string kernel_code(const Program& p, const Schedule& s);  // marks from the schedule's rows
// Marks the loops that carry no dependence parallel (for schedules from elsewhere).
MarkFn auto_parallel(const Dependences& deps, const std::string& schedule_isl);

// The whole C file around a kernel (see above).
std::string c_file(const Program& p, const std::string& kernel);

struct RunOptions {
  int threads = 0;  // OMP_NUM_THREADS; 0: the OpenMP default
  int reps = 5;
  std::string compiler = "cc";
  std::string flags = "-O3 -fopenmp -march=native";
  std::string cache_dir;  // empty: $TEMPO_LOOPS_CACHE or /tmp/tempo-loops-cache
  bool reuse_binaries = true;  // false: compile every time (to measure what memoization saves)
  // Measurements are kept next to the binaries (by source, threads and repetitions) and read
  // back by later processes instead of running again: the dataset of timings that trainings
  // share (§5.1 of Pearl). Off by default: a benchmark wants this machine's timing of today.
  bool reuse_timings = false;
  // A run (all reps) still going after this is killed and measured as timed out: a legal
  // schedule can be slower by orders of magnitude (a parallel loop inside millions of others).
  double time_limit_s = 60;
};

struct Measurement {
  double ms = 0.0;
  double checksum = 0.0;
  // Killed at the time limit: ms is the limit's share per run (the kernel took longer), the
  // checksum NaN.
  bool timed_out = false;
};

// Compiles (unless cached) and runs; a compiler failure or unreadable output is an Error with
// the compiler's first message line.
Measurement compile_and_run(const std::string& source, const RunOptions& o);
bool same_checksum(double a, double b);  // relative tolerance 1e-9
// Compiles the sources whose binaries are not cached yet, `jobs` at a time, so that the runs
// that follow (one at a time, for clean timings) only run them. Compiler errors are left for
// compile_and_run to report.
void precompile(const std::vector<std::string>& sources, const RunOptions& o, int jobs);

// Memoized measurements, keyed by schedule (Schedule::key or any other canonical string).
class Evaluator {
 public:
  // memoize false: every measurement compiles and runs (with o.reuse_binaries off as well).
  explicit Evaluator(RunOptions o = {}, bool memoize = true)
      : o_(std::move(o)), memoize_(memoize) {
    if (!memoize_) o_.reuse_binaries = false;
  }
  // time_limit_s > 0 replaces the options' limit for this measurement.
  Measurement measure(const std::string& key, const std::function<std::string()>& source,
                      double time_limit_s = 0);
  Measurement measure(const Program& p, const Schedule& s, double time_limit_s = 0);
  const MemoStats& stats() const { return stats_; }
  const RunOptions& options() const { return o_; }

 private:
  RunOptions o_;
  std::unordered_map<std::string, Measurement> memo_;
  bool memoize_ = true;
  MemoStats stats_;
};

}  // namespace tempo::loops
