#include "passes/simplify_indices.h"

#include "symbolic/simplify.h"

namespace tempo::passes {

namespace {

// Simplified over `dims`; an always-true condition becomes undefined (no condition).
Expr simplified_cond(const Expr& cond, const Dims& dims) {
  if (!cond.defined()) return cond;
  Expr s = sym::simplify(cond, dims);
  return s.is_bool_const() && s.value() ? Expr() : s;
}

bool update(Expr& e, Expr next) {
  if (e.defined() == next.defined() && (!e.defined() || e.same(next))) return false;
  e = std::move(next);
  return true;
}

}  // namespace

bool simplify_indices(Program& p) {
  ir::Graph& g = p.graph;
  bool changed = false;
  for (size_t k = 0; k < g.num_ops(); ++k) {
    ir::OpNode& op = g.op(static_cast<ir::OpId>(k));
    changed |= update(op.cond, simplified_cond(op.cond, op.domain));
    for (ir::EdgeId id : op.inputs) {
      ir::Edge& e = g.edge(id);
      changed |= update(e.phi, sym::simplify(e.phi, op.domain));
      changed |= update(e.cond, simplified_cond(e.cond, op.domain));
    }
  }
  return changed;
}

}  // namespace tempo::passes
