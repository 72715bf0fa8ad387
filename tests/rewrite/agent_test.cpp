// The PPO agent trained by Tempo on a small graph: it runs, its sequence replays to its graph
// and keeps the outputs; an agent trained on several graphs is saved, loaded and played.
#include "rewrite/agent.h"

#include <gtest/gtest.h>

#include <cmath>

#include "expect_error.h"
#include "fire.h"
#include "nn/safetensors.h"

namespace tempo::rewrite {
namespace {

Graph small_fire() {
  Graph g;
  g.outputs = {testing::fire(g, g.input("x", {1, 8, 10, 10}), 8, 8)};
  return g;
}

CostModel quick_costs() {
  CostOptions co;
  co.rounds = 1;
  co.min_ms = 0.2;
  return CostModel(co);
}

PpoOptions small_ppo() {
  PpoOptions o;
  o.hidden = 16;
  o.rollouts = 3;
  o.episodes_per_rollout = 2;
  o.updates_per_rollout = 3;
  o.batch = 8;
  o.max_steps = 8;
  o.max_locations = 4;
  return o;
}

// Two matmuls reading one input, as an actor-critic's heads (TASO merges them).
Graph two_heads() {
  Graph g;
  Ref x = g.input("x", {16, 32});
  g.outputs = {g.matmul(x, g.weight("wa", {32, 8}), Act::Tanh),
               g.matmul(x, g.weight("wb", {32, 4}))};
  return g;
}

// The agent's best graph is no costlier than `g`, its steps replay to it, and its outputs are g's.
void expect_replays_and_keeps_outputs(const Graph& g, const AgentResult& r) {
  EXPECT_LE(r.best_cost, r.initial_cost);
  Graph replay = g;
  for (const Match& m : r.steps) replay = apply(replay, m);
  EXPECT_EQ(replay.hash(), r.best.hash());
  EXPECT_LT(max_difference(evaluate(r.best), evaluate(g)), 1e-4);
}

TEST(rewrite_agent, PpoTrainsAndKeepsOutputs) {
  CostModel cost = quick_costs();
  const PpoOptions o = small_ppo();
  Graph g = small_fire();
  AgentResult r = train_ppo(g, cost, o);
  EXPECT_EQ(r.curve.size(), 6u);
  EXPECT_EQ(r.losses.size(), 3u);
  for (double l : r.losses) EXPECT_TRUE(std::isfinite(l));
  EXPECT_GT(r.env_steps, 0);
  EXPECT_LT(r.logp_gap, 1e-3);  // the CPU forward pass agrees with the learner's network
  expect_replays_and_keeps_outputs(g, r);
}

TEST(rewrite_agent, SavedAgentPlaysOtherGraphsWithoutTraining) {
  CostModel cost = quick_costs();
  const PpoOptions o = small_ppo();
  const std::vector<Graph> graphs = {small_fire(), two_heads()};
  AgentTraining t = train_agent(graphs, cost, o);
  EXPECT_EQ(t.curve.size(), 6u);  // 3 rollouts of 2 episodes, one on each graph
  EXPECT_EQ(t.losses.size(), 3u);
  const std::string file = ::testing::TempDir() + "rewrite_agent.safetensors";
  t.agent.save(file);
  const RewriteAgent loaded = RewriteAgent::load(file);
  ASSERT_EQ(loaded.weights.size(), t.agent.weights.size());
  for (const auto& [name, w] : t.agent.weights) EXPECT_EQ(loaded.weights.at(name).data, w.data);
  EXPECT_EQ(loaded.max_locations(), o.max_locations);

  // A graph it never saw: the same episodes from the saved agent as from the trained one.
  Graph other;
  Ref x = other.input("x", {4, 8});
  Ref h = other.matmul(x, other.weight("w1", {8, 8}), Act::Relu);
  other.outputs = {other.matmul(h, other.weight("w2", {8, 3})),
                   other.matmul(h, other.weight("w3", {8, 5}))};
  const AgentResult a = play_agent(other, cost, t.agent, o), b = play_agent(other, cost, loaded, o);
  EXPECT_EQ(a.best.hash(), b.best.hash());
  EXPECT_EQ(a.best_cost, b.best_cost);
  EXPECT_TRUE(a.curve.empty());
  EXPECT_GT(a.env_steps, 0);
  expect_replays_and_keeps_outputs(other, a);
}

TEST(rewrite_agent, LoadingWhatIsNotAnAgentIsAClearError) {
  const std::string dir = ::testing::TempDir();
  tempo::testing::expect_user_error([&] { RewriteAgent::load(dir + "no_such_agent.safetensors"); },
                             {"no_such_agent.safetensors"});
  nn::save(dir + "not_an_agent.safetensors",
           {{"w", ir::HostTensor::from(std::vector<float>{1, 2}, {2})}});
  tempo::testing::expect_user_error([&] { RewriteAgent::load(dir + "not_an_agent.safetensors"); },
                             {"not_an_agent.safetensors", "no tensor 'enc1.weight'",
                              "tempo rewrite train"});
  // An agent of another substitution library: its substitution head has one output too many.
  CostModel cost = quick_costs();
  PpoOptions o = small_ppo();
  o.rollouts = 1;
  RewriteAgent agent = train_agent({two_heads()}, cost, o).agent;
  ir::HostTensor& w = agent.weights.at("rule.1.weight");
  w = ir::HostTensor(ir::DType::Float32, {w.shape[0] + 1, w.shape[1]});
  agent.save(dir + "other_library.safetensors");
  tempo::testing::expect_user_error([&] { RewriteAgent::load(dir + "other_library.safetensors"); },
                             {"other_library.safetensors", "layer 'rule.1'", "substitutions",
                              "another version"});
}

}  // namespace
}  // namespace tempo::rewrite
