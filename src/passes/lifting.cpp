#include "passes/lifting.h"

#include "passes/graph_edit.h"
#include "symbolic/simplify.h"

namespace tempo::passes {

namespace {

using ir::EdgeId;
using ir::OpId;
using ir::OpKind;
using ir::OpNode;

// The window read by `sum(x[..., a:b, ...], 0)`: which entry of phi is the slice.
int window_entry(const Expr& phi) {
  int found = -1;
  for (size_t k = 0; k < phi.size(); ++k) {
    if (!phi.arg(k).is_slice()) continue;
    if (found >= 0) return -1;  // several stacked dims
    found = static_cast<int>(k);
  }
  return found;
}

OpId add(ir::Graph& g, OpKind kind, ir::Attrs attrs, Dims domain, ir::TensorType type,
         const OpNode& like) {
  OpNode op;
  op.kind = kind;
  op.attrs = std::move(attrs);
  op.domain = std::move(domain);
  op.outputs = {std::move(type)};
  op.name = like.name;
  op.loc = like.loc;
  return g.add_op(std::move(op));
}

// Whether `to` is reachable from `from` along reads (a lifted scan of `to` would then wait for
// its own reader: the window's source must not depend on the sum).
bool reaches(const ir::Graph& g, const std::vector<std::vector<EdgeId>>& readers, OpId from,
             OpId to) {
  std::vector<bool> seen(g.num_ops(), false);
  std::vector<OpId> work{from};
  while (!work.empty()) {
    OpId v = work.back();
    work.pop_back();
    if (v == to) return true;
    for (EdgeId e : readers[v])
      if (!seen[g.edge(e).sink]) {
        seen[g.edge(e).sink] = true;
        work.push_back(g.edge(e).sink);
      }
  }
  return false;
}

// sum(x[a:b], 0) = P[b] - P[a] with P = pad(cumsum(x[0:N], 0), 1 before): every window sum over
// dimension n of x is read from one prefix scan of all of x (O(N) instead of O(N) per window).
// In floating point the difference of prefix sums rounds like a sum of N terms, not of b - a.
bool lift_window_sum(ir::Graph& g, const std::vector<std::vector<EdgeId>>& readers, OpId id) {
  const OpNode sum = g.op(id);
  if (sum.kind != OpKind::Sum || sum.attrs.ints != std::vector<int64_t>{0} || sum.attrs.keepdim ||
      sum.cond.defined() || !ir::is_floating(sum.outputs[0].dtype))
    return false;
  const ir::Edge read = g.edge(sum.inputs[0]);
  const OpNode& src = g.op(read.source);
  const int sp = window_entry(read.phi);
  if (sp < 0) return false;
  const Expr window = read.phi.arg(sp);
  const Dim n = src.domain[sp];
  if (!window.arg(2).is_const(1)) return false;
  // The scan runs over the dims the other entries need; a dim only the window mentions is the
  // one the window moves along (nothing to lift if the window does not move).
  Dims scan_domain;
  bool moves = false;
  for (const Dim& d : sum.domain) {
    bool in_window = mentions(window, d), elsewhere = false;
    for (size_t k = 0; k < read.phi.size(); ++k)
      if (static_cast<int>(k) != sp) elsewhere |= mentions(read.phi.arg(k), d);
    if (in_window && elsewhere) return false;
    moves |= in_window;
    if (elsewhere) scan_domain.push_back(d);
  }
  const ir::TensorType& point = src.outputs[read.source_output];
  for (const Expr& s : point.shape.dims)
    if (mentions(s, n)) return false;  // points of different shapes do not stack
  if (!moves || reaches(g, readers, id, read.source)) return false;

  ir::TensorType stacked = point;
  stacked.shape.dims.insert(stacked.shape.dims.begin(), n.bound);
  ir::Attrs scan_attrs;
  scan_attrs.ints = {0};
  OpId scan = add(g, OpKind::CumSum, scan_attrs, scan_domain, stacked, sum);
  std::vector<Expr> all = read.phi.args();
  all[sp] = slice(0, n.bound);
  g.add_edge(scan, read.source, read.source_output, seq(all));

  ir::TensorType padded = point;
  padded.shape.dims.insert(padded.shape.dims.begin(), sym::simplify(n.bound + 1, scan_domain));
  ir::Attrs pad_attrs;
  pad_attrs.ints = {0};
  pad_attrs.exprs = {Expr(1), Expr(0)};
  OpId prefix = add(g, OpKind::Pad, pad_attrs, scan_domain, padded, sum);
  g.add_edge(prefix, scan, 0, identity_phi(scan_domain));

  OpId at[2];
  for (int k = 0; k < 2; ++k) {
    ir::Attrs a;
    a.ints = {0};
    a.exprs = {window.arg(1 - k)};  // b, then a
    at[k] = add(g, OpKind::Index, a, sum.domain, point, sum);
    g.add_edge(at[k], prefix, 0, identity_phi(scan_domain));
  }
  // The sum becomes P[b] - P[a] in place: its readers (and Executable::get) keep their op.
  OpNode& op = g.op(id);
  op.kind = OpKind::Sub;
  op.attrs = ir::Attrs{};
  ir::Edge& first = g.edge(op.inputs[0]);
  first.source = at[0];
  first.source_output = 0;
  first.phi = identity_phi(sum.domain);
  g.add_edge(id, at[1], 0, identity_phi(sum.domain));
  return true;
}

}  // namespace

bool lift_scans(Program& p) {
  bool changed = false;
  const size_t n = p.graph.num_ops();  // the ops added are not lifted again
  std::vector<std::vector<EdgeId>> readers = consumers(p.graph);  // of the original ops
  for (size_t k = 0; k < n; ++k) changed |= lift_window_sum(p.graph, readers, static_cast<OpId>(k));
  return changed;
}

}  // namespace tempo::passes
