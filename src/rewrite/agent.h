// RLFlow's model-free agent (§3.4): PPO with a graph-network encoder and a masked two-headed
// policy over the rewrite environment (env.h).
//
//   encoder   H1 = relu(Lin1(Â X)), H2 = relu(Lin2(Â H1)), g = mean over nodes of H2
//             (X: node features, Â: the row-normalized adjacency with self loops, both
//             directions; dense and padded to a fixed node count in the learner)
//   heads     substitution logits = MLP_r(g) (masked by the legal substitutions, no-op included)
//             location logits     = MLP_l([g, one-hot substitution]) (masked by its locations)
//             value               = MLP_v(g)
//
// The learner is a Tempo program over an iteration dimension i (nn::Linear/MLP, optim::Adam,
// PPO's clipped loss); a UDF receives the current parameters, plays episodes in the environment
// with them through a plain C++ forward pass of the same network (sparse adjacency) at the start
// of each rollout, computes GAE advantages, and returns minibatches. Rewards are the decrease of
// the estimated runtime in percent of the original graph's.
#pragma once

#include <cstdint>
#include <vector>

#include "rewrite/env.h"

namespace tempo::rewrite {

struct PpoOptions {
  int64_t hidden = 32;
  int64_t max_locations = 16;  // the environment's locations per substitution
  int64_t max_steps = 40;      // the environment's episode length
  int64_t rollouts = 8;        // acting then learning, alternately
  int64_t episodes_per_rollout = 4;
  int64_t updates_per_rollout = 8;  // Adam steps on minibatches of the rollout
  int64_t batch = 32;
  double learning_rate = 3e-3, clip = 0.2, gamma = 0.99, lambda = 0.95, entropy = 0.01;
  int64_t eval_episodes = 4;  // sampled episodes after training (besides the greedy one)
  uint64_t seed = 1;
  double max_seconds = 0;  // > 0: no new rollouts after this much training time
};

struct CurvePoint {
  double seconds = 0;      // since training started
  int64_t episode = 0;
  double improvement = 0;  // the episode's runtime decrease, percent of the original
};

struct AgentResult {
  Graph best;  // the cheapest graph an episode reached (training or evaluation after it)
  double initial_cost = 0, best_cost = 0;
  std::vector<Match> steps;  // from the original graph to `best`
  double seconds = 0;        // training and evaluation wall time
  int64_t env_steps = 0;     // steps taken in the real environment
  double env_seconds = 0;    // of which in the environment (apply, cost, observe)
  std::vector<CurvePoint> curve;
  std::vector<double> losses;  // the learner's loss per rollout (mean over its updates)
  // The largest mean |log-prob difference| between the learner and the acting network at a
  // rollout's first update (where their parameters are the same): ~0.
  double logp_gap = 0;
};

AgentResult train_ppo(const Graph& g, CostModel& cost, const PpoOptions& options = {});

}  // namespace tempo::rewrite
