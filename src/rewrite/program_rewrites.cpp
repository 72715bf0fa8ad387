#include "rewrite/program_rewrites.h"

#include <filesystem>
#include <memory>
#include <mutex>

#include "rewrite/agent.h"
#include "rewrite/evaluate.h"
#include "rewrite/world_model.h"
#include "util/env.h"
#include "util/error.h"

namespace tempo::rewrite {

namespace {

Op op_of(const std::string& name, const std::string& where) {
  for (int k = 0; k < kNumOps; ++k)
    if (name == op_name(static_cast<Op>(k))) return static_cast<Op>(k);
  internal_error(cat("a rewrite region of ", where, " has an unknown operator '", name, "'"));
}

Op unary_op(Act a) {
  switch (a) {
    case Act::Relu: return Op::Relu;
    case Act::Tanh: return Op::Tanh;
    default: return Op::Sigmoid;
  }
}

}  // namespace

Graph to_graph(const RewriteRegion& region) {
  Graph g;
  std::vector<std::vector<Ref>> refs;  // per region node, its outputs
  for (const RewriteRegion::Node& n : region.nodes) {
    const Op op = op_of(n.op, region.where);
    if (op == Op::Input || op == Op::Weight) {
      refs.push_back({op == Op::Input ? g.input(n.name, n.ints) : g.weight(n.name, n.ints)});
      continue;
    }
    std::vector<Ref> in;
    for (auto [node, out] : n.inputs) in.push_back(refs.at(node).at(out));
    Attrs a;
    a.axis = n.axis;
    a.ints = n.ints;
    refs.push_back(g.add(op, in, a));
  }
  for (auto [node, out] : region.outputs) g.outputs.push_back(refs.at(node).at(out));
  return g;
}

RewriteRegion to_region(const Graph& g) {
  RewriteRegion r;
  std::vector<int> first(g.nodes.size());  // per graph node: its first output's region node
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const Node& x = g.nodes[k];
    RewriteRegion::Node n;
    n.op = op_name(x.op);
    n.axis = x.attrs.axis;
    n.ints = x.attrs.ints;
    n.name = x.attrs.name;
    for (Ref in : x.inputs) n.inputs.push_back({first[in.node], in.out});
    // Tempo's regions hold no images: a substitution cannot bring these in.
    if (x.op == Op::Conv2d || x.op == Op::MaxPool || x.op == Op::AvgPool || x.op == Op::Enlarge)
      internal_error(cat("a rewrite of a Tempo region made a ", op_name(x.op)));
    first[k] = static_cast<int>(r.nodes.size());
    r.nodes.push_back(n);
    if (x.attrs.act != Act::None) {  // the fused activation as its own node, which reads it
      RewriteRegion::Node act;
      act.op = op_name(unary_op(x.attrs.act));
      act.inputs = {{first[k], 0}};
      first[k] = static_cast<int>(r.nodes.size());
      r.nodes.push_back(act);
    }
  }
  for (Ref out : g.outputs) r.outputs.push_back({first[out.node], out.out});
  return r;
}

RewritePolicy program_rewrite_policy(const ProgramRewriteOptions& options) {
  CostOptions co;
  co.rounds = 3;
  co.min_ms = 1.0;
  std::error_code ec;
  std::filesystem::create_directories(cache_dir(), ec);
  if (!ec) co.cache_file = cache_dir() + "/rewrite_costs.tsv";
  struct Shared {
    explicit Shared(CostOptions o) : cost(std::move(o)) {}
    std::mutex mutex;  // one region at a time: the costs are measured on this thread's core
    CostModel cost;
  };
  auto shared = std::make_shared<Shared>(co);
  return [options, shared](const RewriteRegion& region) {
    std::lock_guard<std::mutex> lock(shared->mutex);
    const Graph g = to_graph(region);
    const size_t places = all_matches(g).size();
    Graph best = g;
    size_t steps = 0;
    using Chooser = ProgramRewriteOptions::Chooser;
    if (places > 0 && options.chooser == Chooser::Agent) {
      PpoOptions po;
      po.max_seconds = options.agent_seconds;
      AgentResult a = train_ppo(g, shared->cost, po);
      best = std::move(a.best), steps = a.steps.size();
    } else if (places > 0 && options.chooser == Chooser::SavedAgent) {
      AgentResult a = play_agent(g, shared->cost, *options.agent);
      best = std::move(a.best), steps = a.steps.size();
    } else if (places > 0 && options.chooser == Chooser::WorldModel) {
      WorldModelResult w = train_world_model(g, shared->cost);
      best = std::move(w.best), steps = w.steps.size();
    } else if (places > 0) {
      SearchResult s = taso_search(g, shared->cost, options.search);
      best = std::move(s.best), steps = s.steps.size();
    }
    // Costed as Tempo runs it: a fused activation is an op of its own there.
    RewriteRegion r = to_region(best.rebuilt());
    const double before = shared->cost.graph_cost(g);
    const double after = steps ? shared->cost.graph_cost(to_graph(r)) : before;
    const bool faster = after <= before * (1 - options.min_gain);
    double difference = 0;
    if (faster) {
      EvalOptions eo;
      eo.weight_scale = 0.1;
      difference = max_difference(evaluate(best, eo), evaluate(g, eo));
    }
    RewriteChoice c;
    c.why = cat(g.num_ops(), " ops, ", places, " places a substitution applies, ", before,
                " ms -> ", after, " ms by the cost model after ", steps, " substitutions",
                faster && difference > 1e-4 ? " (outputs differ)" : "");
    if (faster && difference <= 1e-4) c.graph = std::move(r);
    return c;
  };
}

void set_rewrites(CompileOptions& o, const std::string& name, const std::string& what) {
  if (name == "none") {
    o.passes.rewrite_policy = nullptr;
    return;
  }
  using Chooser = ProgramRewriteOptions::Chooser;
  ProgramRewriteOptions po;
  if (name == "search") po.chooser = Chooser::Search;
  else if (name == "learned") po.chooser = Chooser::Agent;
  else if (name == "world-model") po.chooser = Chooser::WorldModel;
  else if (name.rfind("learned:", 0) == 0 && name.size() > 8) {
    po.chooser = Chooser::SavedAgent;
    po.agent = std::make_shared<const RewriteAgent>(RewriteAgent::load(name.substr(8)));
  } else {
    throw UserError(cat(what, " '", name,
                        "': expected none, search, learned, learned:FILE (an agent saved by "
                        "`tempo rewrite train`) or world-model"));
  }
  o.passes.rewrite_policy = program_rewrite_policy(po);
}

}  // namespace tempo::rewrite
