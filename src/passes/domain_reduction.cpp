#include "passes/domain_reduction.h"

#include "passes/graph_edit.h"

namespace tempo::passes {

namespace {

// Whether the value of `op` cannot depend on dimension `d` of its domain.
bool invariant_along(const ir::Graph& g, const ir::OpNode& op, const Dim& d) {
  // Merges (placeholders) keep the domain their branches are written over.
  if (has_effect(op) || op.kind == ir::OpKind::Merge) return false;
  if (mentions(op.cond, d)) return false;
  for (const Expr& e : op.attrs.exprs)
    if (mentions(e, d)) return false;
  for (const ir::TensorType& t : op.outputs)
    for (const Expr& e : t.shape.dims)
      if (mentions(e, d)) return false;
  for (ir::EdgeId id : op.inputs) {
    const ir::Edge& e = g.edge(id);
    if (mentions(e.phi, d) || mentions(e.cond, d)) return false;
  }
  return true;
}

}  // namespace

bool reduce_domains(Program& p) {
  ir::Graph& g = p.graph;
  bool changed = false;
  // Removing a dimension from an op can free its readers of it: repeat to a fixed point.
  for (bool again = true; again;) {
    again = false;
    std::vector<std::vector<ir::EdgeId>> readers = consumers(g);
    for (size_t k = 0; k < g.num_ops(); ++k) {
      ir::OpNode& op = g.op(static_cast<ir::OpId>(k));
      if (p.is_retained(op.id)) continue;  // Executable::get indexes it by its full domain
      for (size_t pos = 0; pos < op.domain.size(); ++pos) {
        if (!invariant_along(g, op, op.domain[pos])) continue;
        // A reader that stacks the op along the dimension (a slice entry) expects copies.
        bool stacked = false;
        for (ir::EdgeId id : readers[op.id]) stacked |= g.edge(id).phi.arg(pos).is_slice();
        if (stacked) continue;
        for (ir::EdgeId id : readers[op.id]) {
          ir::Edge& e = g.edge(id);
          std::vector<Expr> entries = e.phi.args();
          entries.erase(entries.begin() + static_cast<std::ptrdiff_t>(pos));
          e.phi = seq(entries);
        }
        op.domain.erase(op.domain.begin() + static_cast<std::ptrdiff_t>(pos));
        again = changed = true;
        break;
      }
    }
  }
  return changed;
}

}  // namespace tempo::passes
