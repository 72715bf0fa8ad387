#include "passes/pipeline.h"

#include <algorithm>
#include <chrono>
#include <iostream>

#include "passes/algebraic.h"
#include "passes/conditional_execution.h"
#include "passes/cse.h"
#include "passes/dce.h"
#include "passes/domain_reduction.h"
#include "passes/fold_constants.h"
#include "passes/fusion.h"
#include "passes/graph_edit.h"
#include "passes/lifting.h"
#include "passes/recompute.h"
#include "passes/rewrites.h"
#include "passes/simplify_indices.h"
#include "passes/tiling.h"
#include "passes/vectorize.h"
#include "util/error.h"

namespace tempo::passes {

namespace {

struct Pass {
  const char* name;
  bool Options::*enabled;
  PassFn run;
};

// The pipeline, in order.
constexpr Pass kPipeline[] = {
    // First, so that every later pass compares and inverts simplified expressions.
    {"simplify-indices", &Options::simplify_indices, simplify_indices},
    {"fold-constants", &Options::fold_constants, fold_constants},
    {"algebraic", &Options::algebraic, simplify_algebra},
    // After the rewrites above, which make more ops structurally equal.
    {"cse", &Options::cse, eliminate_common_subexpressions},
    // Before vectorization: lifting turns the per-timestep x[a(t):b(t)] window sums into point
    // reads of one scan over the whole dimension, which vectorization then batches.
    {"lifting", &Options::lifting, lift_scans},
    // Before vectorization (an op that does not vary along t must not be batched), after lifting
    // (whose reads of the scan's last point, x[0:T].sum(), do not vary along t).
    {"domain-reduction", &Options::domain_reduction, reduce_domains},
    // Before vectorization, which batches a condition's per-point symbols into one tensor (where
    // it is no longer a function of the point) and leaves an op whose condition varies along a
    // dimension per point along it.
    {"conditional-execution", &Options::conditional_execution, execute_conditionally},
    // Before vectorization, which batches the copies over the window the late reader reads.
    {"recompute", &Options::recompute, recompute_activations},
    // Before vectorization, whose choices weigh every reader of an op: the ops that lifting
    // replaced (a running sum's adds) would keep the summands they read per step.
    {"dce", &Options::dce, eliminate_dead_code},
    {"vectorize", &Options::vectorize, vectorize},
    // Again after vectorization, which makes ops that need not run at every point of their
    // domain: a decoder layer's weights indexed from the stacked ones at every step (t, l) are
    // indexed once per layer (decoding at batch 1: 8% less time per token on the tiny model).
    {"domain-reduction", &Options::domain_reduction, reduce_domains},
    // Again after vectorization, whose batched ops match rules that per-step ops do not (a sum
    // over t of per-step matmuls).
    {"algebraic", &Options::algebraic, simplify_algebra},
    // After vectorization, whose batched reads of whole dimensions (a learner's x[0:T]) are
    // windows it splits; after lifting, which turns window sums into scans (no tiles needed).
    {"tiling", &Options::tiling, tile_windows},
    // On the batched, tiled program, whose regions are the ops that run; before CSE and DCE,
    // which merge the copies a rewrite makes of shared reads and drop the ops it replaced.
    {"rewrites", &Options::rewrites, apply_rewrites},
    // Vectorization leaves ops that compute the same batched value from the same inputs.
    {"cse", &Options::cse, eliminate_common_subexpressions},
    // After every pass above leaves the ops it replaced unread.
    {"dce", &Options::dce, eliminate_dead_code},
    // Last: the passes above match single ops, which fusion hides inside regions.
    {"fusion", &Options::fusion, fuse_dataflow},
};

size_t live_ops(const Program& p) {
  std::vector<bool> read(p.graph.num_ops(), false);
  for (const ir::OpNode& op : p.graph.ops())
    for (ir::EdgeId e : op.inputs) read[p.graph.edge(e).source] = true;
  size_t n = 0;
  for (const ir::OpNode& op : p.graph.ops())
    n += read[op.id] || op.kind == ir::OpKind::Udf || p.is_retained(op.id);
  return n;
}

}  // namespace

}  // namespace tempo::passes

namespace tempo {

// One switch per pass name, in the order the pipeline first runs it.
const std::vector<PassOptions::Switch>& PassOptions::switches() {
  static const std::vector<Switch> all = [] {
    std::vector<Switch> out;
    for (const passes::Pass& pass : passes::kPipeline)
      if (std::none_of(out.begin(), out.end(),
                       [&](const Switch& s) { return s.on == pass.enabled; }))
        out.push_back({pass.name, pass.enabled});
    return out;
  }();
  return all;
}

}  // namespace tempo

namespace tempo::passes {

Program::Program(ir::Graph g, std::vector<std::pair<ir::OpId, int>> r)
    : graph(std::move(g)), retained(std::move(r)) {
  op_map.resize(graph.num_ops());
  for (size_t k = 0; k < op_map.size(); ++k) op_map[k] = static_cast<ir::OpId>(k);
}

bool Program::is_retained(ir::OpId op) const {
  return std::any_of(retained.begin(), retained.end(),
                     [&](const auto& r) { return r.first == op; });
}

void run_pipeline(Program& p, const Options& options) {
  using Clock = std::chrono::steady_clock;
  p.options = options;
  for (const Pass& pass : kPipeline) {
    if (!(options.*pass.enabled)) continue;
    auto t0 = Clock::now();
    bool changed = pass.run(p);
    if (options.verbose)
      std::cerr << "[tempo] pass " << pass.name << ": "
                << std::chrono::duration<double, std::milli>(Clock::now() - t0).count() << " ms, "
                << live_ops(p) << " ops" << (changed ? "" : " (unchanged)") << "\n";
    if (options.check_ir && changed) {
      try {
        ir::validate(p.graph);
      } catch (const UserError& e) {
        internal_error(cat("the IR is invalid after pass ", pass.name, ": ", e.what()));
      }
    }
  }
  // Edges left unread by the passes (and, without DCE, nothing else) go; ids become dense.
  compact(p, std::vector<bool>(p.graph.num_ops(), true));
}

}  // namespace tempo::passes
