// Generated C against the unoptimized program: random legal transformation sequences, isl's
// scheduler, Polly and the beam search all keep the checksum; measurements are memoized.
#include "loops/codegen.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <random>

#include "loops/baselines.h"
#include "loops/benchmarks.h"
#include "util/error.h"

namespace tempo::loops {
namespace {

RunOptions test_options() {
  RunOptions o;
  o.threads = 2;
  o.reps = 1;
  return o;
}

TEST(Codegen, KernelHasPragmasOnMarkedLoops) {
  Program p = benchmark("jacobi2d", Size::Small);
  // Tiles of 4 on 10x10: the tile loops are real loops.
  Schedule s = *apply(Schedule::original(p), 0, {Kind::Tile, 1, 2, 0, 4, 4});
  s = *apply(s, 0, {Kind::Parallelize, 1, 1});
  s = *apply(s, 0, {Kind::Unroll, 0, 0, 4});
  std::string code = kernel_code(p, s);
  EXPECT_NE(code.find("#pragma omp parallel for"), std::string::npos) << code;
  EXPECT_NE(code.find("#pragma GCC unroll 4"), std::string::npos) << code;
  EXPECT_NE(code.find("S0("), std::string::npos);
  EXPECT_NE(code.find("S1("), std::string::npos);
}

TEST(Codegen, RandomLegalSequencesKeepTheChecksum) {
  std::mt19937 rng(7);
  Evaluator ev(test_options());
  int transformed = 0;
  for (const std::string& name : benchmark_names()) {
    Program p = benchmark(name, Size::Small);
    double reference = run_unoptimized(p, ev).checksum;
    for (int trial = 0; trial < 2; ++trial) {
      LoopEnv env(p);
      int applied = 0;
      for (int tries = 0; tries < 200 && applied < 4 && !env.done(); ++tries) {
        int a = static_cast<int>(rng() % num_actions());
        if (action_space()[a].kind == Kind::Next && rng() % 3) continue;
        if (env.step(a) && action_space()[a].kind != Kind::Next) ++applied;
      }
      transformed += applied > 0;
      Measurement m = ev.measure(p, env.schedule());
      std::string seq;
      for (const Action& a : env.history()) seq.append(" ").append(a.to_string());
      EXPECT_TRUE(same_checksum(m.checksum, reference))
          << name << ":" << seq << ": " << m.checksum << " vs " << reference << "\n"
          << kernel_code(p, env.schedule());
    }
  }
  EXPECT_GE(transformed, 12);  // most programs were really transformed
}

TEST(Codegen, MeasurementsAreMemoized) {
  Evaluator ev(test_options());
  Program p = benchmark("mvt", Size::Small);
  Schedule s = *apply(Schedule::original(p), 0, {Kind::Interchange, 0, 1});
  Measurement a = ev.measure(p, s);
  EXPECT_EQ(ev.stats().time_misses, 1);
  Measurement b = ev.measure(p, s);
  EXPECT_EQ(ev.stats().time_hits, 1);
  EXPECT_EQ(a.checksum, b.checksum);
}

TEST(Codegen, WithoutMemoizationEveryMeasurementRuns) {
  Evaluator ev(test_options(), /*memoize=*/false);
  Program p = benchmark("mvt", Size::Small);
  Schedule s = Schedule::original(p);
  Measurement a = ev.measure(p, s), b = ev.measure(p, s);
  EXPECT_EQ(ev.stats().time_hits, 0);
  EXPECT_EQ(ev.stats().time_misses, 2);
  EXPECT_EQ(a.checksum, b.checksum);
  LoopEnv env(p);
  env.set_memoize(false);
  env.legal_mask();
  env.legal_mask();
  EXPECT_EQ(env.stats().legality_hits, 0);
}

TEST(Baselines, IslSchedulerAndPollyKeepTheChecksum) {
  Evaluator ev(test_options());
  for (const char* name : {"jacobi2d", "seidel2d", "doitgen", "blur"}) {
    Program p = benchmark(name, Size::Small);
    double reference = run_unoptimized(p, ev).checksum;
    Dependences deps(p);
    Result isl = run_isl_scheduler(p, deps, ev);
    ASSERT_TRUE(isl.ok) << isl.note;
    EXPECT_TRUE(same_checksum(isl.checksum, reference)) << name << "\n" << isl.code;
    Result polly = run_polly(p, test_options());
    if (polly.ok) {
      EXPECT_TRUE(same_checksum(polly.checksum, reference)) << name;
    }
  }
}

TEST(Baselines, BeamSearchFindsALegalSchedule) {
  Evaluator ev(test_options());
  Program p = benchmark("cvtcolor", Size::Small);
  LoopEnv env(p);
  double reference = run_unoptimized(p, ev).checksum;
  Result r = run_beam(env, ev, {1, 1, true}, reference);
  ASSERT_TRUE(r.ok);
  EXPECT_TRUE(same_checksum(r.checksum, reference));
  EXPECT_GT(ev.stats().time_misses, 1);
}

TEST(Codegen, CompilerErrorsAreReported) {
  EXPECT_THROW(compile_and_run("this is not C", test_options()), Error);
}

// A schedule can be legal and yet run for hours: the run is killed at the limit and measured as
// timed out, memoized like any measurement, and a result from it is not ok.
TEST(Codegen, RunsPastTheTimeLimitAreKilled) {
  RunOptions o = test_options();
  o.time_limit_s = 0.5;
  const std::string forever = "int main(void) { for (volatile int k = 0;; k += 0) {} }\n";
  Evaluator ev(o);
  Measurement m = ev.measure("forever", [&] { return forever; });
  EXPECT_TRUE(m.timed_out);
  EXPECT_TRUE(std::isnan(m.checksum));
  EXPECT_GE(m.ms, 500.0);
  EXPECT_TRUE(ev.measure("forever", [&] { return forever; }).timed_out);
  EXPECT_EQ(ev.stats().time_hits, 1);
  Result r;
  record(r, m);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.note.find("timed out"), std::string::npos);
}

// On request, a measurement made once is read back by later measurements of the same source,
// threads and repetitions, also in other processes (a file next to the binary); a run killed at
// a limit is reused as killed under limits no longer than it.
TEST(Codegen, TimingsAreReusedOnRequest) {
  RunOptions o = test_options();
  o.cache_dir = ::testing::TempDir() + "tempo-loops-timings-" + std::to_string(::getpid());
  o.reuse_timings = true;
  const Program p = benchmark("mvt", Size::Small);
  const std::string source = c_file(p, kernel_code(p, Schedule::original(p)));
  const Measurement first = compile_and_run(source, o);
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(o.cache_dir))
    files += e.path().extension() == ".time";
  EXPECT_EQ(files, 1);
  for (int k = 0; k < 3; ++k) {
    const Measurement again = compile_and_run(source, o);
    EXPECT_EQ(again.ms, first.ms);  // read back to the last digit, not measured again
    EXPECT_EQ(again.checksum, first.checksum);
  }
  RunOptions other = o;
  other.reps = 2;  // another measurement
  EXPECT_TRUE(same_checksum(compile_and_run(source, other).checksum, first.checksum));

  o.time_limit_s = 0.5;
  const std::string forever = "int main(void) { for (volatile int k = 0;; k += 0) {} }\n";
  EXPECT_TRUE(compile_and_run(forever, o).timed_out);
  o.time_limit_s = 0.3;
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_TRUE(compile_and_run(forever, o).timed_out);  // read back: killed under 0.5 s
  // Not run again: that alone would take the limit.
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 0.3);
  std::filesystem::remove_all(o.cache_dir);
}

}  // namespace
}  // namespace tempo::loops
