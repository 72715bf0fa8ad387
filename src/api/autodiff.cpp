// Symbolic reverse-mode automatic differentiation over the SDG (TEMPO §3, Fig. 7).
//
// The gradient of an op output is an RT over the op's whole domain. For an edge where sink S reads
// source P at phi(p), the local gradient L (over S's domain, with the type S receives) contributes
//   grad P[q] += sum over the readers p of q (the inverse phi^-1(q)) of L[p] at q's position,
// built with ordinary RT operations:
//   1. L[phi^-1] indexes L with the inverse (sym::invert), written in P's variables; each slice
//      entry of the inverse stacks the readers into a new leading dim.
//   2. For each slice entry of phi (S received several points of P stacked), pick the element
//      that is q: its position is q - start(p). When start does not vary over the stacked
//      readers it is one symbolic Index; otherwise the per-reader positions are computed as an
//      int64 tensor (arange over each stacked dim + the inverse's start, pushed through start's
//      expression) and selected with Gather. This is exact for any start built from +, *, min,
//      max (t:T, 0:t+1, max(0,t-3):t+1, t:min(t+3,T), 0:T, ...).
//   3. Sum the stacked reader dims (an empty range sums to zeros of the right shape).
//   4. Where some source points have no reader (invert's `when`), a Merge selects the
//      contribution there and zeros elsewhere, and the ops of steps 1-3 carry `when` as their
//      condition so they never read outside S's domain.
// Contributions of all consumers are summed.
//
// Merges: the gradient of a merge output goes to the branch taken at that point: branch k's
// local gradient is the output gradient under its effective condition (its cond and no earlier
// branch's), zeros elsewhere, then accumulated through the branch's phi like any edge. The
// gradient of every differentiated merge is a placeholder (a Merge with one branch, added last),
// so that state cycles (s[t+1] = f(s[t])) give recurrent gradient programs.
//
// Where the walk stops: it does not go through the inputs of an RT in `wrt` (its gradient is the
// gradient at that RT, as a leaf), nor through Detach. For parameters held in a state cycle
// (p[i+1] = update(p[i], g[i])), grad(loss, {p}) is then dloss[i]/dp[i] at each iteration i, not
// differentiated through the update into earlier iterations: what training needs. An RT in `wrt`
// that the loss reaches only through another RT in `wrt` gets a zero gradient.
#include "api/autodiff.h"

#include <algorithm>
#include <map>
#include <numeric>

#include "api/context.h"
#include "api/grad_rules.h"
#include "symbolic/invert.h"
#include "symbolic/simplify.h"
#include "util/error.h"

namespace tempo {

using ir::Edge;
using ir::OpId;
using ir::OpKind;
using ir::OpNode;

namespace {

using Key = std::pair<OpId, int>;  // an op output

Expr and_cond(const Expr& a, const Expr& b) {
  if (!a.defined()) return b;
  if (!b.defined()) return a;
  return a && b;
}

bool is_true(const Expr& e) {
  return !e.defined() || (e.is_bool_const() && e.value());
}
bool is_false(const Expr& e) {
  return e.defined() && e.is_bool_const() && !e.value();
}

bool same_dims(const Dims& a, const Dims& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!(a[i] == b[i])) return false;
  return true;
}

Expr identity_phi(const Dims& dims) {
  std::vector<Expr> v;
  for (const Dim& d : dims) v.push_back(d.var);
  return sym::seq(std::move(v));
}

// The context dims whose variables occur in e.
Dims dims_of(const Context& ctx, const Expr& e) {
  Dims out;
  for (const Dim& d : ctx.dims())
    if (sym::depends_on(e, d.var)) out.push_back(d);
  return out;
}

class Differentiator {
 public:
  Differentiator(Context& ctx, Loc loc) : ctx_(ctx), g_(ctx.graph()), loc_(loc) {}

  std::vector<RT> run(const RT& loss_in, const std::vector<RT>& wrt) {
    RT loss = checked_loss(loss_in);
    for (const RT& w : wrt) check_wrt(w);
    for (const RT& w : wrt) wrt_ops_.push_back(w.op());
    find_relevant(loss.op());

    if (relevant_[loss.op()]) {
      const OpNode& lop = g_.op(loss.op());
      add_contribution({loss.op(), loss.output()},
                       ctx_.constant(1.0, Shape(), loss.dtype(), lop.domain, loc_));
      process_all();
    }
    std::vector<RT> out;
    for (const RT& w : wrt) out.push_back(result_for(w));
    return out;
  }

 private:
  // ---- setup ---------------------------------------------------------------------------------

  RT checked_loss(const RT& loss) {
    if (!loss.defined()) throw UserError(cat("grad at ", where(loc_), ": the loss is undefined"));
    const OpNode& node = g_.op(loss.op());
    if (loss.rank() != 0)
      throw UserError(cat("grad at ", where(loc_), ": the loss ", node.describe(),
                          " must be a scalar at each point of its domain, but has shape ",
                          loss.shape().str(), " (reduce it first, e.g. with sum())"));
    if (!ir::is_floating(loss.dtype()))
      throw UserError(cat("grad at ", where(loc_), ": the loss ", node.describe(),
                          " is not floating point (", ir::dtype_name(loss.dtype()), ")"));
    bool pending = loss.phi().defined() ||
                   (loss.cond().defined() && !(node.cond.defined() && node.cond.same(loss.cond())));
    if (!pending) return loss;
    return ctx_.add_op1(OpKind::Identity, {}, {loss}, loc_);
  }

  void check_wrt(const RT& w) {
    if (!w.defined()) throw UserError(cat("grad at ", where(loc_), ": an RT in wrt is undefined"));
    if (&w.ctx() != &ctx_)
      throw UserError(cat("grad at ", where(loc_), ": ", g_.op(w.op()).describe(),
                          " belongs to another Context"));
    if (!ir::is_floating(w.dtype()))
      throw UserError(cat("grad at ", where(loc_), ": cannot differentiate with respect to ",
                          g_.op(w.op()).describe(), " of non-floating type ",
                          ir::dtype_name(w.dtype())));
  }

  bool is_wrt(OpId id) const {
    return std::find(wrt_ops_.begin(), wrt_ops_.end(), id) != wrt_ops_.end();
  }

  // The walk does not go through the inputs of these ops.
  bool stops(OpId id) const { return is_wrt(id) || !ir::is_differentiable(g_.op(id).kind); }

  bool float_edge(const Edge& e) const {
    return ir::is_floating(g_.op(e.source).outputs[e.source_output].dtype);
  }

  // Relevant ops: on a path from some wrt to the loss (backward from the loss, not through the
  // inputs of a stopping op; forward from wrt within that set).
  void find_relevant(OpId loss) {
    size_t n = g_.num_ops();
    std::vector<bool> back(n, false), fwd(n, false);
    std::vector<OpId> stack{loss};
    back[loss] = true;
    while (!stack.empty()) {
      OpId id = stack.back();
      stack.pop_back();
      if (stops(id)) continue;
      for (ir::EdgeId eid : g_.op(id).inputs) {
        const Edge& e = g_.edge(eid);
        if (!float_edge(e) || back[e.source]) continue;
        back[e.source] = true;
        stack.push_back(e.source);
      }
    }
    for (OpId w : wrt_ops_)
      if (back[w] && !fwd[w]) {
        fwd[w] = true;
        stack.push_back(w);
      }
    while (!stack.empty()) {
      OpId id = stack.back();
      stack.pop_back();
      for (ir::EdgeId eid : g_.out_edges(id)) {
        const Edge& e = g_.edge(eid);
        if (!float_edge(e) || !back[e.sink] || fwd[e.sink] || stops(e.sink)) continue;
        fwd[e.sink] = true;
        stack.push_back(e.sink);
      }
    }
    relevant_.assign(n, false);
    for (size_t i = 0; i < n; ++i) relevant_[i] = back[i] && fwd[i];
  }

  // ---- the reverse walk ------------------------------------------------------------------------

  // Ops whose inputs get gradients, each after all its processed consumers (merges first: their
  // gradients are placeholders, which breaks every cycle of the graph).
  void process_all() {
    // The ops find_relevant saw: ops added since (the loss's seed gradient, and the gradient ops
    // added below) are not walked.
    const size_t n0 = relevant_.size();
    std::vector<OpId> todo;
    for (size_t i = 0; i < n0; ++i)
      if (relevant_[i] && !stops(static_cast<OpId>(i))) todo.push_back(static_cast<OpId>(i));
    auto processed = [&](OpId id) {
      return id < static_cast<OpId>(n0) && relevant_[id] && !stops(id);
    };

    for (OpId id : todo)
      if (g_.op(id).kind == OpKind::Merge) {
        const OpNode m = g_.op(id);  // copied: adding ops moves nodes
        RT ph = ctx_.placeholder(m.outputs[0], m.domain, "grad_" + m.name, loc_);
        placeholder_[{id, 0}] = ph;
      }
    for (OpId id : todo)
      if (g_.op(id).kind == OpKind::Merge) process_merge(id);

    // Kahn's order over the non-merge ops: pending = processed non-merge consumers left.
    std::map<OpId, int> pending;
    for (OpId id : todo) {
      if (g_.op(id).kind == OpKind::Merge) continue;
      int c = 0;
      for (ir::EdgeId eid : g_.out_edges(id)) {
        OpId s = g_.edge(eid).sink;
        if (processed(s) && g_.op(s).kind != OpKind::Merge) ++c;
      }
      pending[id] = c;
    }
    std::vector<OpId> ready;
    for (auto& [id, c] : pending)
      if (c == 0) ready.push_back(id);
    size_t done = 0;
    while (!ready.empty()) {
      OpId id = ready.back();
      ready.pop_back();
      ++done;
      process_op(id);
      for (ir::EdgeId eid : g_.op(id).inputs) {
        OpId src = g_.edge(eid).source;
        auto it = pending.find(src);
        if (it != pending.end() && --it->second == 0) ready.push_back(src);
      }
    }
    if (done != pending.size())
      throw InternalError(
          cat("grad at ", where(loc_), ": a cycle of the graph does not go through a Merge"));

    // Close the placeholders: each merge's gradient is the sum of its contributions.
    for (auto& [key, ph] : placeholder_) {
      RT total = sum_contributions(key);
      g_.add_edge(ph.op(), total.op(), total.output(), total.read_phi(), total.cond());
    }
  }

  // The gradient flowing into an op output (undefined: none).
  RT grad_of(const Key& k) {
    auto p = placeholder_.find(k);
    if (p != placeholder_.end()) return p->second;
    auto it = contributions_.find(k);
    if (it == contributions_.end()) return RT();
    return sum_contributions(k);
  }

  RT sum_contributions(const Key& k) {
    auto done = totals_.find(k);
    if (done != totals_.end()) return done->second;
    const OpNode op = g_.op(k.first);  // copied: adding ops moves nodes
    const ir::TensorType type = op.outputs[k.second];
    RT total;
    auto it = contributions_.find(k);
    if (it != contributions_.end())
      for (const RT& c : it->second) total = total.defined() ? total + c : c;
    if (!total.defined()) total = ctx_.constant(0.0, type.shape, type.dtype, op.domain, loc_);
    total = over_domain(total, op.domain);
    totals_[k] = total;
    return total;
  }

  void add_contribution(const Key& k, RT c) { contributions_[k].push_back(std::move(c)); }

  // An RT over exactly `domain` with no pending index (an Identity over the missing dims).
  RT over_domain(const RT& x, const Dims& domain) {
    if (!x.phi().defined() && !x.cond().defined() && same_dims(x.domain(), domain)) return x;
    return ctx_.add_op1(OpKind::Identity, {}, {x}, loc_, domain);
  }

  // x where cond holds, zeros elsewhere, over `domain` (a Merge; x's ops may carry cond).
  RT masked(const RT& x, const Expr& cond, const Dims& domain, const ir::TensorType& type) {
    RT ph = ctx_.placeholder(type, domain, "masked_grad", loc_);
    g_.add_edge(ph.op(), x.op(), x.output(), x.read_phi(), and_cond(cond, x.cond()));
    RT zero = ctx_.constant(0.0, type.shape, type.dtype, {}, loc_);
    g_.add_edge(ph.op(), zero.op(), zero.output(), zero.read_phi());
    return ph;
  }

  void process_merge(OpId id) {
    const OpNode m = g_.op(id);  // copied: adding ops moves nodes
    RT gm = placeholder_.at({id, 0});
    Expr earlier;  // some earlier branch holds
    for (size_t k = 0; k < m.inputs.size(); ++k) {
      const Edge e = g_.edge(m.inputs[k]);
      Expr eff = e.cond;
      if (earlier.defined()) eff = and_cond(eff, !earlier);
      if (eff.defined()) eff = sym::simplify(eff, m.domain);
      bool was_always = earlier.defined() && is_true(sym::simplify(earlier, m.domain));
      if (!e.cond.defined())
        earlier = Expr::boolean(true);
      else
        earlier = earlier.defined() ? (earlier || e.cond) : e.cond;
      if (was_always || is_false(eff)) break;
      if (!relevant_[e.source] || !float_edge(e)) continue;
      RT local = is_true(eff) ? gm : masked(gm, eff, m.domain, m.outputs[0]);
      accumulate(e, local);
    }
  }

  void process_op(OpId id) {
    const OpNode op = g_.op(id);  // copied: adding ops moves nodes
    autodiff::RuleInput r{ctx_, op, {}, {}, {}, {}, loc_};
    bool any = false;
    for (size_t k = 0; k < op.outputs.size(); ++k) {
      RT gk = ir::is_floating(op.outputs[k].dtype) ? grad_of({id, static_cast<int>(k)}) : RT();
      any = any || gk.defined();
      r.g.push_back(gk);
      r.out.emplace_back(&ctx_, id, static_cast<int>(k), op.domain, Expr(), op.cond);
    }
    if (!any) return;
    if (!r.g[0].defined()) {  // e.g. only a secondary output is read: seed the first with zeros
      const ir::TensorType t = op.outputs[0];
      r.g[0] = ctx_.constant(0.0, t.shape, t.dtype, op.domain, loc_);
    }
    bool need_any = false;
    for (ir::EdgeId eid : op.inputs) {
      const Edge e = g_.edge(eid);
      const OpNode& src = g_.op(e.source);
      Expr phi = e.phi.same(identity_phi(src.domain)) ? Expr() : e.phi;
      Dims dom = phi.defined() ? dims_of(ctx_, phi) : src.domain;
      if (op.cond.defined()) dom = ctx_.domain_union(dom, dims_of(ctx_, op.cond));
      r.in.emplace_back(&ctx_, e.source, e.source_output, dom, phi, op.cond);
      bool need = relevant_[e.source] && float_edge(e);
      r.need.push_back(need);
      need_any = need_any || need;
    }
    if (!need_any) return;
    std::vector<RT> locals = autodiff::local_grads(r);
    for (size_t k = 0; k < op.inputs.size(); ++k) {
      if (!r.need[k] || !locals[k].defined()) continue;
      RT local = locals[k];
      const ir::TensorType want{r.in[k].dtype(), r.in[k].shape()};
      // Points where the op does not execute contribute nothing.
      local = op.cond.defined() ? masked(local, op.cond, op.domain, want)
                                : over_domain(local, op.domain);
      accumulate(g_.edge(op.inputs[k]), local);
    }
  }

  // ---- temporal accumulation through one edge (see the file comment) -------------------------

  void accumulate(const Edge e, RT local) {
    const OpNode sink = g_.op(e.sink);  // copied: adding ops moves nodes
    const OpNode src = g_.op(e.source);
    local = over_domain(local, sink.domain);
    auto fail = [&](const std::string& msg) -> UserError {
      return UserError(cat("grad at ", where(loc_), ": cannot propagate the gradient of ",
                           sink.describe(), " to its input ", src.describe(), " read at `",
                           e.phi.str(), "`: ", msg));
    };
    std::vector<Expr> phi = e.phi.is_seq() ? e.phi.args() : std::vector<Expr>{e.phi};

    // Step 1: the inverse, in the source's variables.
    std::vector<Expr> inv;
    Expr when = Expr::boolean(true);
    if (sink.domain.empty()) {
      for (size_t d = 0; d < phi.size(); ++d) {
        const Expr& q = src.domain[d].var;
        const Expr& f = phi[d];
        when = when && (f.is_slice() ? (f.arg(0) <= q && q < f.arg(1)) : (q == f));
      }
      when = sym::simplify(when, src.domain);
    } else if (src.domain.empty()) {
      for (const Dim& d : sink.domain) inv.push_back(sym::slice(0, d.bound));
    } else {
      sym::Inversion iv;
      try {
        iv = sym::invert_when(e.phi, sink.domain, src.domain);
      } catch (const UserError& err) {
        throw fail(err.what());
      }
      inv = iv.inverse.is_seq() ? iv.inverse.args() : std::vector<Expr>{iv.inverse};
      when = iv.when.defined() ? iv.when : Expr::boolean(true);
      // The inverse is exact only within the sink's domain (t - 1 inverts to t + 1, which is T at
      // the last step): read it only where it lies inside, and is non-empty.
      for (size_t i = 0; i < inv.size(); ++i) {
        const Expr& b = sink.domain[i].bound;
        const Expr& x = inv[i];
        when = x.is_slice() ? (when && Expr(0) <= x.arg(0) && x.arg(0) < x.arg(1) && x.arg(1) <= b)
                            : (when && Expr(0) <= x && x < b);
      }
      // Over both domains: the sink's bounds (0:I) are known to be >= 1 too.
      when = sym::simplify(when, ctx_.domain_union(src.domain, sink.domain));
    }
    if (is_false(when)) return;  // no source point is read
    for (const Expr& f : phi)
      if (f.is_slice() && !f.arg(2).is_const(1)) throw fail("only unit-step slices are supported");

    // Readers stacked by the inverse must agree in shape: a slice of phi whose length varies with
    // a stacked sink variable (0:t+1, t:T, ...) is zero-padded at its end to an upper bound of
    // that length. Positions 0..len-1 keep their meaning, so step 2 is unchanged.
    std::vector<Expr> stacked_vars;
    for (size_t i = 0; i < inv.size(); ++i)
      if (inv[i].is_slice()) stacked_vars.push_back(sink.domain[i].var);
    auto on_stacked = [&](const Expr& x) {
      return std::any_of(stacked_vars.begin(), stacked_vars.end(),
                         [&](const Expr& v) { return sym::depends_on(x, v); });
    };
    {
      size_t j = 0;
      for (size_t d = 0; d < phi.size(); ++d) {
        if (!phi[d].is_slice()) continue;
        Expr len = local.shape()[j];
        if (on_stacked(len)) {
          Expr hi = sym::range_of(len, sink.domain).hi;
          if (!hi.defined() || !dims_of(ctx_, hi).empty()) hi = src.domain[d].bound;
          local = local.pad(static_cast<int64_t>(j), 0, sym::simplify(hi - len, sink.domain), 0.0,
                            loc_);
        }
        ++j;
      }
      for (; j < local.rank(); ++j)
        if (on_stacked(local.shape()[j]))
          throw fail(cat("its gradient has a shape ", local.shape().str(),
                         " that varies with the reading points"));
    }

    RT lv = running_sum(phi, inv, when, local, sink);
    const bool summed = lv.defined();
    if (!summed) lv = inv.empty() ? local : RT(local[RT::Index(sym::seq(inv), loc_)]);
    if (!is_true(when)) lv = lv[RT::Index(when, loc_)];

    // Stacked reader dims, and the slice-inverted sink variables -> their stacked dim.
    std::vector<std::pair<Expr, size_t>> stacked;  // (sink var, stacked dim)
    std::vector<std::pair<Expr, Expr>> point_sub;  // sink var -> source expression
    std::vector<Expr> stacked_start;
    size_t k = 0;
    for (size_t i = 0; i < inv.size(); ++i) {
      if (inv[i].is_slice()) {
        stacked.emplace_back(sink.domain[i].var, k++);
        stacked_start.push_back(inv[i].arg(0));
      } else {
        point_sub.emplace_back(sink.domain[i].var, inv[i]);
      }
    }

    // Step 2: select q in each slice entry of phi (leading dims after the stacked ones).
    for (size_t d = 0; d < phi.size(); ++d) {
      if (!phi[d].is_slice()) continue;
      const Expr& q = src.domain[d].var;
      const Expr& start = phi[d].arg(0);
      bool varies = std::any_of(stacked.begin(), stacked.end(),
                                [&](const auto& s) { return sym::depends_on(start, s.first); });
      if (!varies) {
        Expr pos = sym::simplify(q - sym::substitute(start, point_sub), src.domain);
        lv = lv.index(static_cast<int64_t>(k), pos, loc_);
        continue;
      }
      // Per-reader positions q - start(p) over the stacked dims, selected with Gather.
      std::vector<Expr> n(lv.shape().dims.begin(), lv.shape().dims.begin() + k);
      RT st = start_rt(start, stacked, stacked_start, point_sub, n, src.domain, fail);
      RT pos = ctx_.symbol(q, loc_) - st;
      if (!pos.shape().same(Shape(n))) pos = pos.expand(Shape(n), loc_);
      std::vector<Expr> idx_shape = n;
      idx_shape.emplace_back(1);
      for (size_t j = k + 1; j < lv.rank(); ++j) {
        pos = pos.unsqueeze(-1, loc_);
        idx_shape.push_back(lv.shape()[j]);
      }
      pos = pos.unsqueeze(static_cast<int64_t>(k), loc_);
      if (!pos.shape().same(Shape(idx_shape))) pos = pos.expand(Shape(idx_shape), loc_);
      lv = lv.gather(static_cast<int64_t>(k), pos, loc_).squeeze(static_cast<int64_t>(k), loc_);
    }

    // Step 3: sum over the readers.
    if (k > 0 && !summed) {
      std::vector<int64_t> dims(k);
      std::iota(dims.begin(), dims.end(), 0);
      lv = lv.sum(dims, false, loc_);
    }

    // Step 4: zeros where no sink point reads; the source's whole domain and dtype.
    const ir::TensorType type = src.outputs[e.source_output];
    if (lv.dtype() != type.dtype) lv = lv.cast(type.dtype, loc_);
    if (!is_true(when)) lv = masked(lv, when, src.domain, type);
    add_contribution({e.source, e.source_output}, over_domain(lv, src.domain));
  }

  // A source point read at every point of one sink dimension d (a parameter read by every
  // timestep) gets the sum of those readers' gradients. Stacking them (steps 1-3) would hold all
  // of them at once; a running sum along d, acc[d] = acc[d - 1] + local[d], adds each one as
  // soon as it exists and frees it. Undefined where the edge is not of that form.
  RT running_sum(const std::vector<Expr>& phi, const std::vector<Expr>& inv, const Expr& when,
                 const RT& local, const OpNode& sink) {
    if (!is_true(when) || local.cond().defined() || sink.cond.defined()) return RT();
    if (std::any_of(phi.begin(), phi.end(), [](const Expr& f) { return f.is_slice(); }))
      return RT();
    int j = -1;
    for (size_t k = 0; k < inv.size(); ++k) {
      if (!inv[k].is_slice()) continue;
      if (j >= 0) return RT();  // several stacked dims
      j = static_cast<int>(k);
    }
    if (j < 0) return RT();
    const Dim& d = sink.domain[j];
    if (!inv[j].arg(0).is_const(0) || !inv[j].arg(1).same(d.bound) || !inv[j].arg(2).is_const(1))
      return RT();
    std::vector<Expr> at(sink.domain.size()), first, previous;
    for (size_t k = 0; k < sink.domain.size(); ++k) at[k] = sink.domain[k].var;
    first = previous = at;
    first[j] = Expr(0);
    previous[j] = d.var - 1;
    RT acc = ctx_.placeholder(TensorType{local.dtype(), local.shape()}, sink.domain,
                              "grad_sum_" + d.var.str(), loc_);
    acc[RT::Index(sym::seq(first), loc_)] = local[RT::Index(sym::seq(first), loc_)];
    RT later = local[RT::Index(d.var >= 1, loc_)];
    acc[RT::Index(sym::seq(at), loc_)] = acc[RT::Index(sym::seq(previous), loc_)] + later;
    std::vector<Expr> last = inv;
    last[j] = d.bound - 1;
    return acc[RT::Index(sym::seq(last), loc_)];
  }

  // start(p) as an int64 tensor over the stacked reader dims `n`: each slice-inverted sink
  // variable is arange(n_i) + (start of its inverse slice), shaped to broadcast along dim i.
  template <typename Fail>
  RT start_rt(const Expr& e, const std::vector<std::pair<Expr, size_t>>& stacked,
              const std::vector<Expr>& stacked_start,
              const std::vector<std::pair<Expr, Expr>>& point_sub, const std::vector<Expr>& n,
              const Dims& src_domain, const Fail& fail) {
    bool varies = std::any_of(stacked.begin(), stacked.end(),
                              [&](const auto& s) { return sym::depends_on(e, s.first); });
    if (!varies) return ctx_.symbol(sym::simplify(sym::substitute(e, point_sub), src_domain), loc_);
    auto rec = [&](const Expr& x) {
      return start_rt(x, stacked, stacked_start, point_sub, n, src_domain, fail);
    };
    switch (e.op()) {
      case sym::Op::Symbol:
        for (const auto& [var, i] : stacked) {
          if (!var.same(e)) continue;
          RT r = ctx_.arange(n[i], DType::Int64, loc_) + ctx_.symbol(stacked_start[i], loc_);
          std::vector<Expr> shape(n.size(), Expr(1));
          shape[i] = n[i];
          return n.size() == 1 ? r : r.reshape(Shape(shape), loc_);
        }
        break;
      case sym::Op::Add:
      case sym::Op::Mul:
      case sym::Op::Min:
      case sym::Op::Max: {
        RT acc = rec(e.arg(0));
        for (size_t i = 1; i < e.size(); ++i) {
          RT b = rec(e.arg(i));
          switch (e.op()) {
            case sym::Op::Add:
              acc = acc + b;
              break;
            case sym::Op::Mul:
              acc = acc * b;
              break;
            case sym::Op::Min:
              acc = acc.minimum(b, loc_);
              break;
            default:
              acc = acc.maximum(b, loc_);
              break;
          }
        }
        return acc;
      }
      default:
        break;
    }
    throw fail(cat("the slice start `", e.str(), "` is not built from +, *, min and max"));
  }

  // ---- results -------------------------------------------------------------------------------

  RT result_for(const RT& w) {
    const OpNode op = g_.op(w.op());  // copied: adding ops moves nodes
    Key k{w.op(), w.output()};
    RT gr;
    if (relevant_.size() > static_cast<size_t>(w.op()) && relevant_[w.op()]) {
      gr = grad_of(k);
      if (gr.defined()) gr = over_domain(gr, op.domain);
    }
    if (!gr.defined()) {
      const ir::TensorType t = op.outputs[w.output()];
      gr = ctx_.constant(0.0, t.shape, t.dtype, op.domain, loc_);
      gr = over_domain(gr, op.domain);
    }
    gr.named("grad_" + op.name);
    if (!w.phi().defined() && !w.cond().defined()) return gr;
    // A view of the RT: the gradient read through the same index.
    return RT(&ctx_, gr.op(), gr.output(), w.domain(), w.phi(), w.cond());
  }

  Context& ctx_;
  ir::Graph& g_;
  Loc loc_;
  std::vector<OpId> wrt_ops_;
  std::vector<bool> relevant_;
  std::map<Key, RT> placeholder_;
  std::map<Key, std::vector<RT>> contributions_;
  std::map<Key, RT> totals_;
};

}  // namespace

std::vector<RT> grad(const RT& loss, const std::vector<RT>& wrt, Loc loc) {
  if (!loss.defined()) throw UserError(cat("grad at ", where(loc), ": the loss is undefined"));
  Differentiator d(loss.ctx(), loc);
  return d.run(loss, wrt);
}

}  // namespace tempo
