#include "rewrite/env.h"

#include <cmath>

#include "util/error.h"

namespace tempo::rewrite {

RewriteEnv::RewriteEnv(Graph graph, CostModel& cost, EnvOptions options)
    : original_(std::move(graph)), cost_(cost), options_(options) {
  if (options_.max_locations < 1 || options_.max_steps < 1)
    throw UserError("rewrite env: max_locations and max_steps must be positive");
  original_.validate();
  initial_cost_ = cost_.graph_cost(original_);
  reset();
}

Observation RewriteEnv::reset() {
  graph_ = original_;
  cost_now_ = initial_cost_;
  taken_.clear();
  steps_ = 0;
  done_ = false;
  return observe();
}

Observation RewriteEnv::observe() {
  Observation o;
  const Graph& g = graph_;
  o.num_nodes = static_cast<int64_t>(g.nodes.size());
  o.node_features.assign(g.nodes.size() * kNodeFeatures, 0.f);
  std::vector<bool> folded = g.constant_nodes();
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const Node& x = g.nodes[n];
    float* f = &o.node_features[n * kNodeFeatures];
    f[static_cast<int>(x.op)] = 1;
    f[kNumOps + static_cast<int>(x.attrs.act)] = 1;
    float* rest = f + kNumOps + 4;
    double size = 1;
    for (int64_t d : x.outputs[0]) size *= static_cast<double>(d);
    rest[0] = static_cast<float>(std::log1p(size) / 16);
    if (x.op == Op::Conv2d) {
      const Shape& w = g.shape(x.inputs[1]);
      rest[1] = w[2] / 7.f;
      rest[2] = w[3] / 7.f;
    } else if (x.op == Op::MaxPool || x.op == Op::AvgPool) {
      rest[1] = x.attrs.kh / 7.f;
      rest[2] = x.attrs.kw / 7.f;
    }
    rest[3] = x.attrs.sh / 2.f;
    rest[4] = folded[n] ? 1.f : 0.f;
    rest[5] = folded[n] ? 0.f : static_cast<float>(std::log1p(cost_.op_cost(g, n) * 10));
    for (const Ref& r : x.inputs) o.edges.push_back({r.node, static_cast<int>(n)});
  }
  int nr = num_rules();
  locations_.assign(nr, {});
  Uses u(g);
  o.mask.assign((nr + 1) * options_.max_locations, 0);
  o.rule_mask.assign(nr + 1, 0);
  for (int k = 0; k < nr; ++k) {
    auto locs = rules()[k].match(g, u);
    if (static_cast<int64_t>(locs.size()) > options_.max_locations)
      locs.resize(options_.max_locations);
    for (size_t l = 0; l < locs.size(); ++l) o.mask[k * options_.max_locations + l] = 1;
    o.rule_mask[k] = !locs.empty();
    locations_[k] = std::move(locs);
  }
  o.mask[nr * options_.max_locations] = 1;  // the no-op
  o.rule_mask[nr] = 1;
  return o;
}

StepResult RewriteEnv::step(int rule, int location) {
  if (done_) throw UserError("rewrite env: the episode has ended; call reset()");
  StepResult s;
  int nr = num_rules();
  if (rule == nr) {  // the no-op ends the episode
    done_ = true;
    s.observation = observe();
    s.done = true;
    return s;
  }
  if (rule < 0 || rule > nr || location < 0 ||
      location >= static_cast<int>(locations_[rule].size()))
    throw UserError(cat("rewrite env: illegal action (substitution ", rule, ", location ",
                        location, ")"));
  Match m{rule, locations_[rule][location]};
  graph_ = apply(graph_, m);
  taken_.push_back(m);
  ++steps_;
  double c = cost_.graph_cost(graph_);
  s.reward = cost_now_ - c;
  cost_now_ = c;
  s.observation = observe();
  bool any = false;
  for (int k = 0; k < nr; ++k) any = any || s.observation.rule_mask[k];
  done_ = !any || steps_ >= options_.max_steps;
  s.done = done_;
  return s;
}

}  // namespace tempo::rewrite
