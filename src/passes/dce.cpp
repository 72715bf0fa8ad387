#include "passes/dce.h"

#include "passes/graph_edit.h"

namespace tempo::passes {

bool eliminate_dead_code(Program& p) {
  const ir::Graph& g = p.graph;
  std::vector<bool> live(g.num_ops(), false);
  std::vector<ir::OpId> work;
  auto mark = [&](ir::OpId id) {
    if (!live[id]) {
      live[id] = true;
      work.push_back(id);
    }
  };
  for (const ir::OpNode& op : g.ops())
    if (has_effect(op) || p.is_retained(op.id)) mark(op.id);
  while (!work.empty()) {
    ir::OpId id = work.back();
    work.pop_back();
    for (ir::EdgeId e : g.op(id).inputs) mark(g.edge(e).source);
  }
  bool changed = false;
  for (bool l : live) changed |= !l;
  if (changed) compact(p, live);
  return changed;
}

}  // namespace tempo::passes
