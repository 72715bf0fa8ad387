// A finished MMapGame as a program's swap policy: the shares it leaves in slow memory per op,
// the order in which the policy picks candidates, and the placement of a real traced program.
#include "driver/compile.h"
#include "mmap/placement.h"

#include <gtest/gtest.h>

#include "expect_error.h"
#include "mmap/test_instances.h"

namespace tempo::mmap {
namespace {

using namespace fixtures;

TEST(Placement, SharesInSlowMemoryPerOp) {
  // Tensor 0 (op 0, "A") written and read; tensor 1 (op 1, "B") written and read twice.
  const Instance inst = make(1000, 4,
                             {buf(100, 0, 0, 2, true, 0, 0, 1), buf(100, 1, 1, 3, true, 1, 1, 1),
                              buf(100, 2, 0, 2, false, 0, 2, 1), buf(100, 3, 1, 3, false, 1, 3, 1),
                              buf(100, 3, 1, 3, false, 1, 4, 1)});
  TraceSummary sum;
  sum.tensor_op = {0, 1};
  sum.op_names = {"A", "B"};
  using A = Action;
  const ProgramPlacement p =
      placement_from_game(inst, sum, {A::Drop, A::Copy, A::Drop, A::NoCopy, A::Drop});
  ASSERT_EQ(p.slow_share.size(), 2u);
  EXPECT_DOUBLE_EQ(p.slow_share.at("A"), 1.0);
  EXPECT_NEAR(p.slow_share.at("B"), 1.0 / 3.0, 1e-12);
}

TEST(Placement, PolicyPicksWhatTheGameLeftInSlowMemoryFirst) {
  ProgramPlacement p;
  p.slow_share = {{"small-slow", 1.0}, {"half", 0.5}, {"fast", 0.0}};
  const SwapPolicy policy = swap_policy(p);
  const int64_t MiB = 1 << 20;
  const std::vector<SwapCandidate> c = {
      {"fast", 40 * MiB}, {"half", 8 * MiB}, {"small-slow", 4 * MiB}, {"unknown", 20 * MiB}};
  // The largest-first policy would take "fast" alone; the placement takes its slow ones first.
  EXPECT_EQ(policy(c, 10 * MiB), (std::vector<size_t>{2, 1}));
  // When they do not cover the excess, the rest follow by size.
  EXPECT_EQ(policy(c, 30 * MiB), (std::vector<size_t>{2, 1, 0}));
  EXPECT_TRUE(policy(c, 0).empty());
}

TEST(Placement, HeuristicPlacementOfATracedProgram) {
  RlProgram prog;
  prog.obs_shape = {3, 8, 8};
  prog.num_envs = 2;
  prog.steps = 8;
  const ProgramPlacement p = place_rl_program(prog, "heuristic");
  EXPECT_EQ(p.solver, "heuristic");
  EXPECT_GT(p.game_return, 0.0);
  EXPECT_DOUBLE_EQ(p.game_return, p.heuristic_return);
  bool obs = false;
  for (const auto& [name, share] : p.slow_share) {
    EXPECT_GE(share, 0.0);
    EXPECT_LE(share, 1.0);
    obs |= name.find("RT 'obs'") != std::string::npos;
  }
  EXPECT_TRUE(obs) << "the observations are among the placed outputs";
}

TEST(Placement, BadSolversAreClearErrors) {
  RlProgram prog;
  testing::expect_user_error([&] { place_rl_program(prog, "greedy"); },
                             {"expected largest, heuristic or learned:FILE"});
  testing::expect_user_error([&] { place_rl_program(prog, "learned:"); }, {"needs the network"});
  testing::expect_user_error([&] { place_rl_program(prog, "learned:/nonexistent/net"); },
                             {"/nonexistent/net"});
}

}  // namespace
}  // namespace tempo::mmap
