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
//
// An agent trained on several graphs is saved and played on others without training (RLFlow's
// generalization): train_agent, RewriteAgent::save/load, play_agent.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ir/types.h"
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

// A trained policy network: its parameters by name (enc1, enc2, rule, loc, value), whose shapes
// also say the hidden width, the substitution count and the locations per substitution.
struct RewriteAgent {
  std::map<std::string, ir::HostTensor> weights;
  int64_t max_locations() const { return weights.at("loc.1.weight").shape[0]; }
  void save(const std::string& path) const;  // safetensors
  // UserError naming the file where it is missing, not a rewrite agent, or trained for another
  // substitution library or node features than this build's.
  static RewriteAgent load(const std::string& path);
};

struct AgentTraining {
  RewriteAgent agent;
  std::vector<CurvePoint> curve;  // every episode, the graphs taken in turn
  std::vector<double> losses;
  double seconds = 0;
};

// One agent trained on all of `graphs`, their episodes taken in turn (`options.max_locations`,
// `hidden` and the schedule as for one graph).
AgentTraining train_agent(const std::vector<Graph>& graphs, CostModel& cost,
                          const PpoOptions& options = {});

// A saved agent's greedy episode and `options.eval_episodes` sampled ones on `g`, without
// training: the cheapest graph they reach (`curve` and `losses` empty). `options.max_locations`
// and `hidden` are the agent's.
AgentResult play_agent(const Graph& g, CostModel& cost, const RewriteAgent& agent,
                       const PpoOptions& options = {});

}  // namespace tempo::rewrite
