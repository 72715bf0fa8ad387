// The world-model agent on a small graph: the MDN-RNN learns (its loss falls), the controller
// trains in the dream, and the best graph it reaches in the real environment keeps the outputs.
#include "rewrite/world_model.h"

#include <gtest/gtest.h>

#include "fire.h"

namespace tempo::rewrite {
namespace {

TEST(rewrite_worldmodel, TrainsInTheDreamAndKeepsOutputs) {
  Graph g;
  g.outputs = {testing::fire(g, g.input("x", {1, 8, 10, 10}), 8, 8)};
  CostOptions co;
  co.rounds = 1;
  co.min_ms = 0.2;
  CostModel cost(co);
  WorldModelOptions o;
  o.hidden = 16;
  o.random_episodes = 6;
  o.max_steps = 8;
  o.seq_len = 4;
  o.wm_steps = 100;
  o.batch = 8;
  o.rollouts = 3;
  o.episodes_per_rollout = 4;
  o.updates_per_rollout = 2;
  o.eval_episodes = 2;
  o.iterations = 2;
  WorldModelResult r = train_world_model(g, cost, o);
  ASSERT_EQ(r.wm_losses.size(), 20u);
  // The world model learns in each iteration: its loss over the last 20% of its steps is below
  // the first 20%'s.
  for (size_t it = 0; it < 2; ++it) {
    const double* l = r.wm_losses.data() + 10 * it;
    EXPECT_LT(l[8] + l[9], l[0] + l[1]) << "iteration " << it;
  }
  // The random episodes and the controller's, 3 per iteration.
  EXPECT_GE(r.real_steps, o.random_episodes + 2 * 3);
  EXPECT_GT(r.dream_steps, 0);
  EXPECT_EQ(r.dream_curve.size(), 24u);
  EXPECT_LE(r.best_cost, r.initial_cost);
  Graph replay = g;
  for (const Match& m : r.steps) replay = apply(replay, m);
  EXPECT_EQ(replay.hash(), r.best.hash());
  EXPECT_LT(max_difference(evaluate(r.best), evaluate(g)), 1e-4);
}

}  // namespace
}  // namespace tempo::rewrite
