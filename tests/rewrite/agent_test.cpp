// The PPO agent trained by Tempo on a small graph: it runs, its sequence replays to its graph
// and keeps the outputs.
#include "rewrite/agent.h"

#include <gtest/gtest.h>

#include <cmath>

#include "fire.h"

namespace tempo::rewrite {
namespace {

Graph small_fire() {
  Graph g;
  g.outputs = {testing::fire(g, g.input("x", {1, 8, 10, 10}), 8, 8)};
  return g;
}

TEST(rewrite_agent, PpoTrainsAndKeepsOutputs) {
  CostOptions co;
  co.rounds = 1;
  co.min_ms = 0.2;
  CostModel cost(co);
  PpoOptions o;
  o.hidden = 16;
  o.rollouts = 3;
  o.episodes_per_rollout = 2;
  o.updates_per_rollout = 3;
  o.batch = 8;
  o.max_steps = 8;
  o.max_locations = 4;
  Graph g = small_fire();
  AgentResult r = train_ppo(g, cost, o);
  EXPECT_EQ(r.curve.size(), 6u);
  EXPECT_EQ(r.losses.size(), 3u);
  for (double l : r.losses) EXPECT_TRUE(std::isfinite(l));
  EXPECT_GT(r.env_steps, 0);
  EXPECT_LT(r.logp_gap, 1e-3);  // the CPU forward pass agrees with the learner's network
  EXPECT_LE(r.best_cost, r.initial_cost);
  Graph replay = g;
  for (const Match& m : r.steps) replay = apply(replay, m);
  EXPECT_EQ(replay.hash(), r.best.hash());
  EXPECT_LT(max_difference(evaluate(r.best), evaluate(g)), 1e-4);
}

}  // namespace
}  // namespace tempo::rewrite
