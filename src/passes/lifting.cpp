#include "passes/lifting.h"

#include <algorithm>

#include "passes/graph_edit.h"
#include "symbolic/simplify.h"

namespace tempo::passes {

namespace {

using ir::EdgeId;
using ir::OpId;
using ir::OpKind;
using ir::OpNode;

// The entry of phi that is a slice, if it is the only one (the window the sum runs over).
int window_entry(const Expr& phi) {
  int found = -1;
  for (size_t k = 0; k < phi.size(); ++k) {
    if (!phi.arg(k).is_slice()) continue;
    if (found >= 0) return -1;  // several stacked dims
    found = static_cast<int>(k);
  }
  return found;
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

ir::Attrs dim_attrs(int64_t dim, std::vector<Expr> exprs = {}) {
  ir::Attrs a;
  a.ints = {dim};
  a.exprs = std::move(exprs);
  return a;
}

struct Read {
  OpId op;
  int output;
  Expr phi;
};

// Adds the ops of a lifted sum, each with the name and line of the sum it replaces (errors then
// name the user's line) and its output types inferred from its inputs.
class Builder {
 public:
  Builder(ir::Graph& g, const OpNode& like) : g_(g), name_(like.name), loc_(like.loc) {}

  OpId add(OpKind kind, ir::Attrs attrs, const Dims& domain, const std::vector<Read>& inputs) {
    OpNode node;
    node.kind = kind;
    node.attrs = std::move(attrs);
    node.domain = domain;
    node.name = name_;
    node.loc = loc_;
    OpId id = g_.add_op(std::move(node));
    std::vector<ir::TensorType> types;
    for (const Read& in : inputs)
      types.push_back(g_.input_type(g_.add_edge(id, in.op, in.output, in.phi)));
    OpNode& op = g_.op(id);
    op.outputs = ir::infer_types(kind, op.attrs, types, domain, op.describe());
    return id;
  }
  // The whole of `x` (over `domain`) with dim 0 padded by `before` and `after` zeros.
  OpId pad(OpId x, const Dims& domain, int64_t before, int64_t after) {
    ir::Attrs a = dim_attrs(0, {Expr(before), Expr(after)});
    return add(OpKind::Pad, std::move(a), domain, {{x, 0, identity_phi(domain)}});
  }
  OpId along0(OpKind kind, const Read& x, const Dims& domain) {
    return add(kind, dim_attrs(0), domain, {x});
  }

 private:
  ir::Graph& g_;
  std::string name_;
  std::source_location loc_;
};

// Rewrites op `id` in place (its readers, and Executable::get if it is retained, keep their op)
// as the position `at` of dim 0 of `whole`, read over `domain` (a subset of the op's domain).
void become_index(ir::Graph& g, OpId id, OpId whole, const Dims& domain, const Expr& at) {
  OpNode& op = g.op(id);
  op.kind = OpKind::Index;
  op.attrs = dim_attrs(0, {at});
  ir::Edge& in = g.edge(op.inputs[0]);
  in.source = whole;
  in.source_output = 0;
  in.phi = identity_phi(domain);
}

// Lifts y = sum(x[..., a:b, ...], {0, rest...}) where the window a:b moves with the sink's point:
// every window sum is read from one scan of all N points of x, O(N) work instead of O(N) per
// point. With X = x[..., 0:N, ...] (its `rest` dims summed first: a smaller scan):
//   prefix, a == 0:  sum(x[0:b]) = cumsum(X)[b - 1]  (padded 1 before, at b, if b may be 0)
//   suffix, b == N:  sum(x[a:N]) = flip(cumsum(flip(X)))[a]  (padded 1 after if a may be N)
//   other windows:   sum(x[a:b]) = P[b] - P[a]  with P = pad(cumsum(X), 1 before)
// The prefix and suffix forms round like the sequential sum of the window. In the window form
// both terms carry the rounding of a scan over up to N points, so in float32 a short window's
// error grows with N (for values of one sign about 1e-5 relative at N = 1600 and 5e-4 at
// N = 10000, against 1e-6 and 3e-6 summed in order); TEMPO does the same. Only floating sums are
// lifted.
bool lift_window_sum(ir::Graph& g, const std::vector<std::vector<EdgeId>>& readers, OpId id) {
  const OpNode sum = g.op(id);  // a copy: adding ops invalidates references
  if (sum.kind != OpKind::Sum || sum.attrs.keepdim || sum.cond.defined() ||
      sum.inputs.size() != 1 || !ir::is_floating(sum.outputs[0].dtype))
    return false;
  const std::vector<int64_t>& dims = sum.attrs.ints;
  if (std::find(dims.begin(), dims.end(), 0) == dims.end()) return false;
  std::vector<int64_t> rest;
  for (int64_t d : dims)
    if (d != 0) rest.push_back(d);

  const ir::Edge read = g.edge(sum.inputs[0]);
  if (read.cond.defined()) return false;
  const OpNode& src = g.op(read.source);
  const int sp = window_entry(read.phi);
  if (sp < 0) return false;
  const Expr window = read.phi.arg(sp);
  if (!window.arg(2).is_const(1)) return false;
  const Dim n = src.domain[sp];
  // The scan runs over the dims the other entries need; a dim only the window mentions is one
  // the window moves along (nothing to lift if the window does not move).
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
  for (const Expr& s : src.outputs[read.source_output].shape.dims)
    if (mentions(s, n)) return false;  // points of different shapes do not stack
  if (!moves || reaches(g, readers, id, read.source)) return false;
  // 0 <= a <= b <= N at every point: a window reaching outside x stays, for the scheduler to
  // report as the user's error (the scan would read past its ends instead).
  const Expr lo = window.arg(0), hi = window.arg(1);
  const Dims& at = sum.domain;  // where the positions are evaluated
  if (!sym::prove_nonneg(lo, at) || !sym::prove_nonneg(hi - lo, at) ||
      !sym::prove_nonneg(n.bound - hi, at))
    return false;

  Builder b(g, sum);
  const Expr here = identity_phi(scan_domain);
  std::vector<Expr> all = read.phi.args();
  all[sp] = slice(0, n.bound);
  Read x{read.source, read.source_output, seq(all)};
  if (!rest.empty()) {
    ir::Attrs a;
    a.ints = rest;
    x = Read{b.add(OpKind::Sum, std::move(a), scan_domain, {x}), 0, here};
  }
  if (lo.is_const(0)) {
    OpId scan = b.along0(OpKind::CumSum, x, scan_domain);
    if (sym::prove_positive(hi, at)) {
      become_index(g, id, scan, scan_domain, sym::simplify(hi - 1, at));
    } else {
      become_index(g, id, b.pad(scan, scan_domain, 1, 0), scan_domain, hi);
    }
    return true;
  }
  if (sym::simplify(hi - n.bound, at).is_const(0)) {
    OpId flipped = b.along0(OpKind::Flip, x, scan_domain);
    OpId scan = b.along0(OpKind::CumSum, {flipped, 0, here}, scan_domain);
    OpId suffix = b.along0(OpKind::Flip, {scan, 0, here}, scan_domain);
    if (!sym::prove_positive(n.bound - lo, at)) suffix = b.pad(suffix, scan_domain, 0, 1);
    become_index(g, id, suffix, scan_domain, lo);
    return true;
  }
  OpId scan = b.along0(OpKind::CumSum, x, scan_domain);
  OpId prefix = b.pad(scan, scan_domain, 1, 0);
  OpId upto_hi = b.add(OpKind::Index, dim_attrs(0, {hi}), sum.domain, {{prefix, 0, here}});
  OpId upto_lo = b.add(OpKind::Index, dim_attrs(0, {lo}), sum.domain, {{prefix, 0, here}});
  // The sum becomes P[b] - P[a] in place: its readers (and Executable::get) keep their op.
  OpNode& op = g.op(id);
  op.kind = OpKind::Sub;
  op.attrs = ir::Attrs{};
  ir::Edge& first = g.edge(op.inputs[0]);
  first.source = upto_hi;
  first.source_output = 0;
  first.phi = identity_phi(sum.domain);
  g.add_edge(id, upto_lo, 0, identity_phi(sum.domain));
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
