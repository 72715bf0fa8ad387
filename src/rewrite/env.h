// RLFlow's environment (§3.3): the state is the graph (node features and edges for a graph
// network), an action is a (substitution, location) pair drawn from a mask of the legal pairs,
// plus the no-op (substitution index = number of substitutions) that ends the episode, and the
// reward is the decrease of the estimated runtime (TASO's cost model) caused by the action.
#pragma once

#include <cstdint>
#include <vector>

#include "rewrite/graph.h"
#include "rewrite/subst.h"
#include "rewrite/evaluate.h"

namespace tempo::rewrite {

// Node features: one-hot op kind, one-hot fused activation, log of the output size, kernel
// height and width and stride (convolutions and pooling), whether the node is folded (computed
// from weights only), and the node's measured cost (log).
constexpr int kNodeFeatures = kNumOps + 4 + 6;

struct EnvOptions {
  int64_t max_steps = 50;      // an episode ends after this many substitutions
  int64_t max_locations = 64;  // locations per substitution the agent can choose from
};

struct Observation {
  int64_t num_nodes = 0;
  std::vector<float> node_features;       // num_nodes x kNodeFeatures
  std::vector<std::pair<int, int>> edges;  // (producer, consumer)
  // (num_rules + 1) x max_locations: legal (substitution, location) pairs; the last row is the
  // no-op, legal at location 0 only.
  std::vector<uint8_t> mask;
  std::vector<uint8_t> rule_mask;  // num_rules + 1: a substitution with any legal location
};

struct StepResult {
  Observation observation;
  double reward = 0;  // ms saved by the action (by the cost model)
  bool done = false;
};

class RewriteEnv {
 public:
  RewriteEnv(Graph graph, CostModel& cost, EnvOptions options = {});
  Observation reset();
  // UserError for an illegal action (masked out, or after the episode ended).
  StepResult step(int rule, int location);
  int num_actions_per_rule() const { return static_cast<int>(options_.max_locations); }
  static int num_rules() { return static_cast<int>(rules().size()); }  // the no-op: this index

  const Graph& graph() const { return graph_; }
  double cost() const { return cost_now_; }
  double initial_cost() const { return initial_cost_; }
  const std::vector<Match>& taken() const { return taken_; }
  int64_t steps() const { return steps_; }
  bool done() const { return done_; }

 private:
  Observation observe();
  Graph original_, graph_;
  CostModel& cost_;
  EnvOptions options_;
  double initial_cost_ = 0, cost_now_ = 0;
  std::vector<std::vector<Location>> locations_;  // per rule, the first max_locations matches
  std::vector<Match> taken_;
  int64_t steps_ = 0;
  bool done_ = false;
};

}  // namespace tempo::rewrite
