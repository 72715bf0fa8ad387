// Graph rewrites of Tempo's own programs: the policies behind CompileOptions' rewrite choice
// (passes/rewrite_region.h). A region of the optimized SDG becomes a rewrite graph (graph.h),
// a policy chooses substitutions on it, and the cheaper graph goes back to the compiler after
// its outputs are checked against the region's on random inputs.
//
//   none      the compiler's program (the default)
//   search    TASO's backtracking search (search.h) under the measured cost model (evaluate.h)
//   learned   RLFlow's model-free PPO agent (agent.h), trained on each region as it compiles
//   learned:FILE  a PPO agent trained before (`tempo rewrite train`) and saved: it plays each
//             region without training
//   world-model  RLFlow's model-based agent (world_model.h): a controller trained in a world
//             model of each region's rewrites, learned from random episodes as it compiles
#pragma once

#include <memory>
#include <string>

#include "driver/compile.h"
#include "passes/rewrite_region.h"
#include "rewrite/graph.h"
#include "rewrite/search.h"

namespace tempo::rewrite {

Graph to_graph(const RewriteRegion& region);
// `g`'s nodes as region nodes (a matmul's fused activation becomes a node of its own).
RewriteRegion to_region(const Graph& g);

struct RewriteAgent;

struct ProgramRewriteOptions {
  enum class Chooser { Search, Agent, SavedAgent, WorldModel } chooser = Chooser::Search;
  std::shared_ptr<const RewriteAgent> agent;  // SavedAgent's
  SearchOptions search{.alpha = 1.05, .budget = 100, .max_seconds = 5};
  double agent_seconds = 20;  // the model-free agent's training per region, at most
  // A graph replaces the region only where the cost model puts it at least this much faster
  // (a fraction of the region's cost): the model's error on small ops is a few percent.
  double min_gain = 0.05;
};

// The policy: the search's (or an agent's) cheapest graph, if it is `min_gain` faster and its
// outputs equal the region's (relative difference at most 1e-4); why: the region's ops, the
// places a substitution applies and the costs. Costs are measured once per (op, shapes) and
// kept in $TEMPO_CACHE_DIR/rewrite_costs.tsv.
RewritePolicy program_rewrite_policy(const ProgramRewriteOptions& options = {});

// Sets `o.passes.rewrite_policy` from a command-line value: none, search, learned,
// learned:FILE or world-model; `what` names the option in errors (and FILE's, read at once).
void set_rewrites(CompileOptions& o, const std::string& name, const std::string& what);

}  // namespace tempo::rewrite
