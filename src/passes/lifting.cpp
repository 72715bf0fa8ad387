#include "passes/lifting.h"

#include <algorithm>
#include <optional>

#include "passes/dataflow_paths.h"
#include "passes/graph_edit.h"
#include "passes/lookahead.h"
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

// Whether `to` is reachable from `from` along reads.
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

// Whether a scan at a point q of `scan_domain`, reading all of `source` along the window's
// dimension, would wait for the sum it replaces: some path of reads from the sum back to
// `source` ends at a point not certainly lexicographically after q. The returns of iteration i
// may feed acting from iteration i + 1 on (the policy learns from them).
bool scan_waits_for_reader(const ir::Graph& g, const std::vector<std::vector<EdgeId>>& readers,
                           OpId sum, OpId source, const Dims& scan_domain) {
  if (!reaches(g, readers, sum, source)) return false;
  std::vector<int> group_of(g.num_ops());
  std::vector<std::vector<OpId>> members(g.num_ops());
  for (size_t k = 0; k < g.num_ops(); ++k) {
    group_of[k] = static_cast<int>(k);
    members[k] = {static_cast<OpId>(k)};
  }
  const std::vector<std::vector<EdgeId>> now = consumers(g);  // with the ops lifting added
  DataflowPaths paths(g, group_of, members, now);
  return !paths.trackable() || paths.comes_back_early({sum}, {source}, scan_domain);
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
  SourceLoc loc_;
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

// A read x[..., a:b, ...] of a reduction at `op` whose window a:b (one slice entry, step 1) moves
// with op's point and stays inside x's dimension: 0 <= a <= b <= N everywhere (a window reaching
// outside x stays unlifted, for the scheduler to report as the user's error; a scan would read
// past its ends instead). Every window is then a piece of one scan over all N points of x,
// computed over the dims the other entries of the read need (`scan_domain`).
struct MovingWindow {
  int entry = -1;  // the slice entry of phi
  Expr lo, hi;     // a, b
  Dim n;           // x's dimension the window slides along
  Dims scan_domain;
  Read whole;  // x[..., 0:N, ...]
};

std::optional<MovingWindow> moving_window(const ir::Graph& g,
                                          const std::vector<std::vector<EdgeId>>& readers,
                                          const OpNode& op, EdgeId e) {
  const ir::Edge& read = g.edge(e);
  if (read.cond.defined()) return std::nullopt;
  const OpNode& src = g.op(read.source);
  MovingWindow w;
  w.entry = window_entry(read.phi);
  if (w.entry < 0) return std::nullopt;
  const Expr window = read.phi.arg(w.entry);
  if (!window.arg(2).is_const(1)) return std::nullopt;
  w.n = src.domain[w.entry];
  // A dim only the window mentions is one the window moves along (nothing to lift if it does
  // not move).
  bool moves = false;
  for (const Dim& d : op.domain) {
    bool in_window = mentions(window, d), elsewhere = false;
    for (size_t k = 0; k < read.phi.size(); ++k)
      if (static_cast<int>(k) != w.entry) elsewhere |= mentions(read.phi.arg(k), d);
    if (in_window && elsewhere) return std::nullopt;
    moves |= in_window;
    if (elsewhere) w.scan_domain.push_back(d);
  }
  for (const Expr& s : src.outputs[read.source_output].shape.dims)
    if (mentions(s, w.n)) return std::nullopt;  // points of different shapes do not stack
  if (!moves) return std::nullopt;
  w.lo = window.arg(0);
  w.hi = window.arg(1);
  const Dims& at = op.domain;  // where the positions are evaluated
  if (!sym::prove_nonneg(w.lo, at) || !sym::prove_nonneg(w.hi - w.lo, at) ||
      !sym::prove_nonneg(w.n.bound - w.hi, at))
    return std::nullopt;
  if (scan_waits_for_reader(g, readers, op.id, read.source, w.scan_domain)) return std::nullopt;
  std::vector<Expr> all = read.phi.args();
  all[w.entry] = slice(0, w.n.bound);
  w.whole = Read{read.source, read.source_output, seq(all)};
  return w;
}

bool is_suffix(const MovingWindow& w, const Dims& at) {
  return sym::simplify(w.hi - w.n.bound, at).is_const(0);
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
// With interleaving (PassOptions::interleave): whether x streams with a recurrence along d (is
// one, or reads one a bounded number of steps ahead). A lift that reads x whole would make
// every point wait for the end of the recurrence, so such sums are left as they are.
bool streams_along(const ir::Graph& g, OpId x, const Dim& d) {
  Dims outer;
  for (const Dim& k : g.op(x).domain) {
    if (k == d) break;
    outer.push_back(k);
  }
  return streams(recurrence_lookahead(g, d, outer)[x]);
}

bool lift_window_sum(ir::Graph& g, const std::vector<std::vector<EdgeId>>& readers, OpId id,
                     bool interleave) {
  const OpNode sum = g.op(id);  // a copy: adding ops invalidates references
  if (sum.kind != OpKind::Sum || sum.attrs.keepdim || sum.cond.defined() ||
      sum.inputs.size() != 1 || !ir::is_floating(sum.outputs[0].dtype))
    return false;
  const std::vector<int64_t>& dims = sum.attrs.ints;
  if (std::find(dims.begin(), dims.end(), 0) == dims.end()) return false;
  std::vector<int64_t> rest;
  for (int64_t d : dims)
    if (d != 0) rest.push_back(d);
  const std::optional<MovingWindow> w = moving_window(g, readers, sum, sum.inputs[0]);
  if (!w || (interleave && streams_along(g, w->whole.op, w->n))) return false;

  Builder b(g, sum);
  const Dims& at = sum.domain;
  const Dims& scan_domain = w->scan_domain;
  const Expr here = identity_phi(scan_domain);
  Read x = w->whole;
  if (!rest.empty()) {
    ir::Attrs a;
    a.ints = rest;
    x = Read{b.add(OpKind::Sum, std::move(a), scan_domain, {x}), 0, here};
  }
  const Expr &lo = w->lo, &hi = w->hi;
  if (lo.is_const(0)) {
    OpId scan = b.along0(OpKind::CumSum, x, scan_domain);
    if (sym::prove_positive(hi, at)) {
      become_index(g, id, scan, scan_domain, sym::simplify(hi - 1, at));
    } else {
      become_index(g, id, b.pad(scan, scan_domain, 1, 0), scan_domain, hi);
    }
    return true;
  }
  if (is_suffix(*w, at)) {
    OpId flipped = b.along0(OpKind::Flip, x, scan_domain);
    OpId scan = b.along0(OpKind::CumSum, {flipped, 0, here}, scan_domain);
    OpId suffix = b.along0(OpKind::Flip, {scan, 0, here}, scan_domain);
    if (!sym::prove_positive(w->n.bound - lo, at)) suffix = b.pad(suffix, scan_domain, 0, 1);
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

// Lifts the discounted sum over the future, y = x[..., a:N, ...].discounted_sum(gamma[, done
// read over the same window]) along dim 0 (the returns of RL), to position a of one reverse
// discounted scan of all N points, Y[k] = X[k] + gamma link(k) Y[k + 1]: the recurrence that
// gives every step's return in one pass (padded 1 after if a may be N). Windows that end before
// N (n-step returns) stay per point: with episode ends a window's sum is not a difference of
// scans.
bool lift_discounted_suffix(ir::Graph& g, const std::vector<std::vector<EdgeId>>& readers,
                            OpId id) {
  const OpNode sum = g.op(id);  // a copy: adding ops invalidates references
  if (sum.kind != OpKind::DiscountedSum || sum.attrs.ints[0] != 0 || sum.cond.defined())
    return false;
  const std::optional<MovingWindow> w = moving_window(g, readers, sum, sum.inputs[0]);
  if (!w || !is_suffix(*w, sum.domain)) return false;
  std::vector<Read> inputs{w->whole};
  if (sum.inputs.size() == 2) {
    // done must be read over the same window of a dimension of the same bound.
    const ir::Edge &x = g.edge(sum.inputs[0]), &done = g.edge(sum.inputs[1]);
    const std::optional<MovingWindow> d = moving_window(g, readers, sum, sum.inputs[1]);
    if (!d || !done.phi.same(x.phi) || !d->n.bound.same(w->n.bound)) return false;
    inputs.push_back(d->whole);
  }
  Builder b(g, sum);
  ir::Attrs a = dim_attrs(0, {Expr(1)});
  a.scalar = sum.attrs.scalar;
  OpId scan = b.add(OpKind::DiscountedCumSum, std::move(a), w->scan_domain, inputs);
  if (!sym::prove_positive(w->n.bound - w->lo, sum.domain))
    scan = b.pad(scan, w->scan_domain, 0, 1);
  become_index(g, id, scan, w->scan_domain, w->lo);
  g.op(id).inputs.resize(1);  // done's edge is left unread (compaction drops it)
  return true;
}

// Lifts a running sum written as a recurrence and read only at its end,
//   acc[.., 0, ..] = x[.., 0, ..];  acc[.., d, ..] = acc[.., d - 1, ..] + x[.., d, ..] (d >= 1);
//   y = acc[.., D - 1, ..],
// to y = x[.., 0:D, ..].sum(0): one reduction that vectorization batches, instead of D dependent
// adds. Symbolic autodiff writes the gradient of a parameter read at every step this way (it
// frees each step's contribution as soon as it is added); as a sum, TEMPO Alg. 1's per-step
// learner runs batched over t. The sum rounds like LibTorch's reduction, not like the chain.
// With `interleave`, a summand that streams with a recurrence (an n-step learner's per-step
// gradient) keeps its running sum.
bool lift_running_sum(ir::Graph& g, const std::vector<std::vector<EdgeId>>& readers, OpId id,
                      bool interleave) {
  const OpNode merge = g.op(id);  // a copy: adding ops invalidates references
  if (merge.kind != OpKind::Merge || merge.inputs.size() != 2 || merge.cond.defined() ||
      !ir::is_floating(merge.outputs[0].dtype))
    return false;
  const ir::Edge first = g.edge(merge.inputs[0]), step = g.edge(merge.inputs[1]);
  const OpNode add = g.op(step.source);  // a copy too
  if (add.kind != OpKind::Add || add.inputs.size() != 2 || readers[add.id].size() != 1)
    return false;
  const Dims& domain = merge.domain;
  const Expr here = identity_phi(domain);
  for (size_t j = 0; j < domain.size(); ++j) {
    const Dim& d = domain[j];
    auto at = [&](const Expr& e) {
      std::vector<Expr> p = here.args();
      p[j] = e;
      return seq(p);
    };
    auto same_cond = [&](const Expr& c, const Expr& want) {
      return c.defined() && sym::simplify(c, domain).same(sym::simplify(want, domain));
    };
    if (!same_cond(first.cond, d.var == 0) || !same_cond(step.cond, d.var >= 1) ||
        !same_cond(add.cond, d.var >= 1) || !step.phi.same(here) || !(add.domain == domain))
      continue;
    // The add reads acc one step back and x where the first branch reads x at 0.
    const ir::Edge &a0 = g.edge(add.inputs[0]), &a1 = g.edge(add.inputs[1]);
    const ir::Edge& back = a0.source == id ? a0 : a1;
    const ir::Edge& x = a0.source == id ? a1 : a0;
    if (back.source != id || x.source == id || back.cond.defined() || x.cond.defined() ||
        !sym::simplify(back.phi, domain).same(sym::simplify(at(d.var - 1), domain)) ||
        !x.phi.same(here) || first.source != x.source || first.source_output != x.source_output ||
        !sym::simplify(first.phi, domain).same(at(Expr(0))) ||
        !(g.op(x.source).domain == domain))
      continue;
    // Every other reader reads the last point along d, and nothing else changes along d.
    const Expr last = d.bound - 1;
    bool only_last = true;
    for (EdgeId e : readers[id]) {
      if (g.edge(e).sink == add.id) continue;
      const ir::Edge& r = g.edge(e);
      const Dims& at_sink = g.op(r.sink).domain;
      only_last &= !r.phi.arg(j).is_slice() &&
                   sym::simplify(r.phi.arg(j) - last, at_sink).is_const(0);
    }
    if (!only_last) continue;
    // With interleaving, a summand that streams is added as it comes (and freed).
    if (interleave && streams_along(g, x.source, d)) continue;
    Dims rest;
    for (const Dim& k : domain)
      if (!(k == d)) rest.push_back(k);
    const Read whole{x.source, x.source_output, at(slice(0, d.bound))};
    Builder b(g, merge);
    const OpId sum = b.add(OpKind::Sum, dim_attrs(0), rest, {whole});
    for (EdgeId e : readers[id]) {
      ir::Edge& r = g.edge(e);
      if (r.sink == add.id) continue;
      std::vector<Expr> p = r.phi.args();
      p.erase(p.begin() + static_cast<std::ptrdiff_t>(j));
      r.source = sum;
      r.source_output = 0;
      r.phi = seq(p);
    }
    return true;
  }
  return false;
}

}  // namespace

bool lift_scans(Program& p) {
  bool changed = false;
  const size_t n = p.graph.num_ops();  // the ops added are not lifted again
  std::vector<std::vector<EdgeId>> readers = consumers(p.graph);  // of the original ops
  for (size_t k = 0; k < n; ++k) {
    const OpId id = static_cast<OpId>(k);
    changed |= lift_window_sum(p.graph, readers, id, p.options.interleave) ||
               lift_discounted_suffix(p.graph, readers, id) ||
               lift_running_sum(p.graph, readers, id, p.options.interleave);
  }
  return changed;
}

}  // namespace tempo::passes
