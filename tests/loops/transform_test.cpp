// Legality of loop transformations by dependence analysis, on the benchmarks' small sizes.
#include "loops/transform.h"

#include <gtest/gtest.h>

#include <random>

#include "loops/benchmarks.h"
#include "loops/codegen.h"
#include "util/error.h"

namespace tempo::loops {
namespace {

Action act(Kind k, int l1 = 0, int l2 = -1, int f = 0, int x = 0, int y = 0) {
  return {k, l1, l2 < 0 ? l1 : l2, f, x, y};
}

int index_of(const Action& a) {
  const auto& space = action_space();
  for (size_t k = 0; k < space.size(); ++k)
    if (space[k].to_string() == a.to_string()) return static_cast<int>(k);
  return -1;
}

TEST(Transform, ActionSpaceHasAFixedSize) {
  EXPECT_EQ(num_actions(), 77);
  EXPECT_EQ(action_space().back().kind, Kind::Next);
}

TEST(Transform, Seidel2dInterchangeIsIllegal) {
  LoopEnv env(benchmark("seidel2d", Size::Small));
  EXPECT_FALSE(env.try_action(act(Kind::Interchange, 0, 1)));
  EXPECT_FALSE(env.try_action(act(Kind::Interchange, 1, 2)));
  EXPECT_FALSE(env.try_action(act(Kind::Parallelize, 0)));
  EXPECT_FALSE(env.try_action(act(Kind::Parallelize, 1)));
  // Skewing makes the wavefront: then the space loops can be tiled.
  EXPECT_TRUE(env.try_action(act(Kind::Skew, 0, 1, 1)));
}

TEST(Transform, ReversingADependenceCarryingLoopIsIllegal) {
  LoopEnv jac(benchmark("jacobi2d", Size::Small));
  EXPECT_FALSE(jac.try_action(act(Kind::Reversal, 0)));  // time
  EXPECT_TRUE(jac.try_action(act(Kind::Reversal, 1)));   // space: out of place
  LoopEnv mvt(benchmark("mvt", Size::Small));
  EXPECT_FALSE(mvt.try_action(act(Kind::Reversal, 1)));  // the reduction's order
  EXPECT_TRUE(mvt.try_action(act(Kind::Reversal, 0)));
}

TEST(Transform, ParallelizingACarryingLoopIsIllegal) {
  LoopEnv jac(benchmark("jacobi2d", Size::Small));
  EXPECT_FALSE(jac.try_action(act(Kind::Parallelize, 0)));
  EXPECT_TRUE(jac.try_action(act(Kind::Parallelize, 1)));
  LoopEnv mvt(benchmark("mvt", Size::Small));
  EXPECT_FALSE(mvt.try_action(act(Kind::Parallelize, 1)));
  EXPECT_TRUE(mvt.try_action(act(Kind::Parallelize, 0)));
}

TEST(Transform, ReversingTwiceGivesTheLoopBack) {
  const Program p = benchmark("mvt", Size::Small);
  const Schedule s = Schedule::original(p);
  const Schedule once = *apply(s, 0, act(Kind::Reversal, 0));
  EXPECT_NE(once.key(p), s.key(p));
  EXPECT_EQ(apply(once, 0, act(Kind::Reversal, 0))->key(p), s.key(p));
  // A skewed loop reversed twice: the outer parentheses are the reversal's alone.
  const Schedule skewed = *apply(s, 0, act(Kind::Skew, 0, 1, 1));
  const Schedule back =
      *apply(*apply(skewed, 0, act(Kind::Reversal, 1)), 0, act(Kind::Reversal, 1));
  EXPECT_EQ(back.key(p), skewed.key(p));
  // In an episode the second reversal returns to a visited schedule: not offered.
  LoopEnv env(p);
  EXPECT_TRUE(env.step(index_of(act(Kind::Reversal, 0))));
  EXPECT_FALSE(env.try_action(act(Kind::Reversal, 0)));
}

// Parallelization is checked for carried dependences only (it changes no order): the same
// answers as the whole check, after random legal transformations of every benchmark.
TEST(Transform, ParallelizationNeedsNoOrderCheck) {
  std::mt19937 rng(7);
  int checked = 0;
  for (const std::string& name : benchmark_names()) {
    LoopEnv env(benchmark(name, Size::Small));
    for (int step = 0; step < 3; ++step) {
      const int a = static_cast<int>(rng() % (num_actions() - 1));
      if (action_space()[a].kind != Kind::Parallelize) env.step(a);
    }
    for (int level = 0; level < kMaxLevels; ++level) {
      std::optional<Schedule> s =
          apply(env.schedule(), env.branch(), act(Kind::Parallelize, level));
      if (!s) continue;
      EXPECT_EQ(env.try_action(act(Kind::Parallelize, level)).has_value(), env.deps().legal(*s))
          << name << " level " << level;
      ++checked;
    }
  }
  EXPECT_GE(checked, 16);
}

// Parallel loops stay outside: an interchange does not move one in, and tiling one makes its
// tile loop the parallel one.
TEST(Transform, ParallelLoopsStayOutside) {
  const Program p = benchmark("doitgen", Size::Small);
  const Schedule par = *apply(Schedule::original(p), 0, act(Kind::Parallelize, 0));
  EXPECT_FALSE(apply(par, 0, act(Kind::Interchange, 0, 1)));
  const Schedule inner = *apply(Schedule::original(p), 0, act(Kind::Parallelize, 1));
  const Schedule out = *apply(inner, 0, act(Kind::Interchange, 0, 1));
  EXPECT_TRUE(out.rows[0][1].parallel);
  const Schedule tiled = *apply(par, 0, act(Kind::Tile, 0, 1, 0, 2, 2));
  EXPECT_TRUE(tiled.rows[0][1].parallel);  // the tile loop of the parallel loop
  for (size_t k = 3; k < tiled.rows[0].size(); ++k) EXPECT_FALSE(tiled.rows[0][k].parallel) << k;
  LoopEnv env(p);
  EXPECT_TRUE(env.legal(tiled));
  Evaluator ev(RunOptions{.threads = 2, .reps = 1});
  EXPECT_TRUE(
      same_checksum(ev.measure(p, tiled).checksum, ev.measure(p, Schedule::original(p)).checksum));
  EXPECT_NE(kernel_code(p, tiled).find("#pragma omp parallel for"), std::string::npos);
}

// 3-D tiling: three tile loops, then the point loops; the same results as the original.
TEST(Transform, ThreeDimensionalTiling) {
  int cubes = 0;
  for (const Action& a : action_space()) cubes += a.kind == Kind::Tile && a.size3 != 0;
  EXPECT_EQ(cubes, 9);
  const Program p = benchmark("heat3d", Size::Small);
  LoopEnv env(p);
  const Action cube = act(Kind::Tile, 1, 3, 0, 2, 2);
  EXPECT_FALSE(apply(env.schedule(), 0, cube));  // two sizes for three loops
  Action a = cube;
  a.size3 = 2;
  EXPECT_EQ(a.to_string(), "tile(1,2,3,2x2x2)");
  const Schedule tiled = *apply(env.schedule(), 0, a);
  EXPECT_EQ(tiled.loops(0), env.schedule().loops(0) + 3);
  EXPECT_TRUE(env.legal(tiled));
  Evaluator ev(RunOptions{.threads = 2, .reps = 1});
  EXPECT_TRUE(same_checksum(ev.measure(p, tiled).checksum,
                            ev.measure(p, Schedule::original(p)).checksum));
  a.level = 0;  // with the time loop, shared with S1: not a band of S0 alone
  a.level2 = 2;
  EXPECT_FALSE(apply(env.schedule(), 0, a));
}

TEST(Transform, LegalTransformationsAreAccepted) {
  LoopEnv jac(benchmark("jacobi2d", Size::Small));
  EXPECT_TRUE(jac.try_action(act(Kind::Tile, 1, 2, 0, 32, 32)));
  const Schedule tiled = *apply(jac.schedule(), 0, act(Kind::Tile, 1, 2, 0, 32, 32));
  EXPECT_FALSE(apply(tiled, 0, act(Kind::Tile, 1, 2, 0, 32, 32)));  // a statement is tiled once
  EXPECT_TRUE(apply(tiled, 1, act(Kind::Tile, 1, 2, 0, 32, 32)));   // S1 is not tiled yet
  EXPECT_FALSE(jac.try_action(act(Kind::Tile, 0, 1, 0, 32, 32)));   // time loop shared by S1
  LoopEnv mvt(benchmark("mvt", Size::Small));
  EXPECT_TRUE(mvt.try_action(act(Kind::Interchange, 0, 1)));
  EXPECT_TRUE(mvt.step(index_of(act(Kind::Interchange, 0, 1))));
  // After the interchange the outer loop is the reduction's.
  EXPECT_FALSE(mvt.try_action(act(Kind::Parallelize, 0)));
  EXPECT_TRUE(mvt.try_action(act(Kind::Parallelize, 1)));
  LoopEnv doit(benchmark("doitgen", Size::Small));
  EXPECT_TRUE(doit.try_action(act(Kind::Parallelize, 0)));
  EXPECT_TRUE(doit.try_action(act(Kind::Interchange, 0, 1)));
}

TEST(Transform, StructuralLimits) {
  LoopEnv mvt(benchmark("mvt", Size::Small));
  EXPECT_FALSE(mvt.try_action(act(Kind::Interchange, 1, 2)));  // only two loops
  auto mask = mvt.legal_mask();
  ASSERT_EQ(static_cast<int>(mask.size()), num_actions());
  EXPECT_TRUE(mask.back());  // next
  // Next walks the branches and ends the episode.
  EXPECT_TRUE(mvt.step(num_actions() - 1));
  EXPECT_EQ(mvt.branch(), 1);
  EXPECT_TRUE(mvt.step(num_actions() - 1));
  EXPECT_TRUE(mvt.done());
  EXPECT_FALSE(mvt.step(0));
  EXPECT_THROW(mvt.step(num_actions()), UserError);
}

TEST(Transform, AnEpisodeDoesNotGoBackToASchedule) {
  LoopEnv mvt(benchmark("mvt", Size::Small));
  ASSERT_TRUE(mvt.step(index_of(act(Kind::Interchange, 0, 1))));
  EXPECT_FALSE(mvt.try_action(act(Kind::Interchange, 0, 1)));  // back to the original order
  mvt.reset();
  EXPECT_TRUE(mvt.try_action(act(Kind::Interchange, 0, 1)));
}

TEST(Transform, FinishedEpisodeHasNoLegalAction) {
  LoopEnv env(benchmark("cvtcolor", Size::Small));
  EXPECT_TRUE(env.step(num_actions() - 1));
  ASSERT_TRUE(env.done());
  for (bool legal : env.legal_mask()) EXPECT_FALSE(legal);
}

TEST(Transform, ScheduleKeysTellLoopMarksApart) {
  Program p = benchmark("cvtcolor", Size::Small);
  Schedule s = Schedule::original(p);
  Schedule par = *apply(s, 0, act(Kind::Parallelize, 0));
  Schedule unr = *apply(s, 0, act(Kind::Unroll, 0, 0, 8));
  EXPECT_NE(s.key(p), par.key(p));
  EXPECT_NE(s.key(p), unr.key(p));
  EXPECT_EQ(s.to_isl(p), par.to_isl(p));
  EXPECT_FALSE(apply(par, 0, act(Kind::Parallelize, 0)));  // already parallel
}

TEST(Transform, LegalityIsMemoized) {
  LoopEnv env(benchmark("jacobi2d", Size::Small));
  env.legal_mask();
  MemoStats first = env.stats();
  EXPECT_GT(first.legality_misses, 0);
  env.legal_mask();
  EXPECT_EQ(env.stats().legality_misses, first.legality_misses);
  EXPECT_GT(env.stats().legality_hits, first.legality_hits);
}

TEST(Program, BadInputIsAUserError) {
  EXPECT_THROW(benchmark("nope", Size::Small), UserError);
  EXPECT_THROW(ProgramBuilder("p").build(), UserError);
  EXPECT_THROW(ProgramBuilder("p")
                   .array("A", {4})
                   .statement("S0", {"i"}, "0 <= i <", "A[i] = 0", {}, {"A[i]"}, {"0", "i", "0"})
                   .build(),
               UserError);
  EXPECT_THROW(ProgramBuilder("p")
                   .array("A", {4})
                   .statement("S0", {"i"}, "0 <= i < 4", "A[i] = 0", {}, {"A[i]"}, {"0", "i"})
                   .build(),
               UserError);
}

}  // namespace
}  // namespace tempo::loops
