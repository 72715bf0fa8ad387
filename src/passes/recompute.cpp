#include "passes/recompute.h"

#include <algorithm>

#include "passes/graph_edit.h"
#include "symbolic/simplify.h"

namespace tempo::passes {

namespace {

using ir::Edge;
using ir::EdgeId;
using ir::Graph;
using ir::OpId;
using ir::OpKind;
using ir::OpNode;

// The dimension of `domain` that phi reads whole (a slice 0:D of it, every other entry at the
// sink's own point or a point of a dimension the sink has), or nullptr.
const Dim* whole_window(const Dims& domain, const Expr& phi) {
  if (!phi.is_seq() || phi.size() != domain.size()) return nullptr;
  const Dim* whole = nullptr;
  for (size_t k = 0; k < domain.size(); ++k) {
    const Expr& e = phi.arg(k);
    if (!e.is_slice()) continue;
    if (whole || !e.arg(0).is_const(0) || !e.arg(1).same(domain[k].bound) || !e.arg(2).is_const(1))
      return nullptr;
    whole = &domain[k];
  }
  return whole;
}

bool cheap(const OpNode& op) {
  return ir::vec_rule(op.kind) == ir::VecRule::Elementwise && !has_effect(op) &&
         op.kind != OpKind::Merge && !op.cond.defined() && op.outputs.size() == 1 &&
         !op.domain.empty();
}

// Whether reader `sink` reads (output `out` of) `source` through exactly `phi`.
bool reads_through(const Graph& g, OpId sink, OpId source, int out, const Expr& phi) {
  for (EdgeId id : g.op(sink).inputs) {
    const Edge& e = g.edge(id);
    if (e.source == source && e.source_output == out && !e.cond.defined() && e.phi.same(phi))
      return true;
  }
  return false;
}

bool recompute_one(Program& p, const std::vector<std::vector<EdgeId>>& readers, OpId id) {
  Graph& g = p.graph;
  const OpNode y = g.op(id);  // a copy: adding ops invalidates references
  if (!cheap(y) || p.is_retained(id)) return false;
  std::vector<EdgeId> late;
  bool near = false;
  const Dim* dim = nullptr;
  for (EdgeId rid : readers[id]) {
    const Edge& r = g.edge(rid);
    const Dim* w = whole_window(y.domain, r.phi);
    if (!w || r.cond.defined()) {
      near = true;
      continue;
    }
    if (dim && !(*dim == *w)) return false;
    dim = w;
    late.push_back(rid);
  }
  if (late.empty() || !near) return false;
  // Every input that varies along the window's dimension is read at y's own point, and every
  // late reader reads it through the same window: it is kept for them anyway.
  for (EdgeId iid : y.inputs) {
    const Edge& in = g.edge(iid);
    if (in.cond.defined()) return false;
    const Dims& src = g.op(in.source).domain;
    if (std::find(src.begin(), src.end(), *dim) == src.end()) continue;  // broadcast along it
    if (!(src == y.domain) || !in.phi.same(identity_phi(y.domain))) return false;
    for (EdgeId rid : late)
      if (!reads_through(g, g.edge(rid).sink, in.source, in.source_output, g.edge(rid).phi))
        return false;
  }
  OpNode copy = y;
  copy.inputs.clear();
  copy.name = y.name + ".recomputed";
  const OpId again = g.add_op(std::move(copy));
  for (EdgeId iid : y.inputs) {
    const Edge in = g.edge(iid);
    g.add_edge(again, in.source, in.source_output, in.phi, in.cond);
  }
  for (EdgeId rid : late) g.edge(rid).source = again;
  return true;
}

}  // namespace

bool recompute_activations(Program& p) {
  const std::vector<std::vector<EdgeId>> readers = consumers(p.graph);
  const size_t n = p.graph.num_ops();  // copies are not considered again
  bool changed = false;
  for (size_t k = 0; k < n; ++k) changed |= recompute_one(p, readers, static_cast<OpId>(k));
  return changed;
}

}  // namespace tempo::passes
