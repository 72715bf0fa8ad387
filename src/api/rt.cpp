// RT basics, temporal indexing with domain inference (TEMPO §3) and placeholder branches.
#include <algorithm>

#include "api/context.h"
#include "symbolic/simplify.h"
#include "util/error.h"

namespace tempo {

namespace {

std::string dims_list(const Dims& dims) {
  std::string s = "(";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + dims[i].name();
  return s + ")";
}

std::string entries_str(const std::vector<Expr>& es) {
  std::string s = "[";
  for (size_t i = 0; i < es.size(); ++i) s += (i ? ", " : "") + es[i].str();
  return s + "]";
}

Expr identity_phi(const Dims& dims) {
  std::vector<Expr> v;
  for (const Dim& d : dims) v.push_back(d.var);
  return sym::seq(std::move(v));
}

Expr and_cond(const Expr& a, const Expr& b) {
  if (!a.defined()) return b;
  if (!b.defined()) return a;
  return a && b;
}

// The context dims whose variables occur in the expressions, in context order.
Dims dims_used(const Context& ctx, const std::vector<Expr>& es) {
  Dims out;
  for (const Dim& d : ctx.dims())
    for (const Expr& e : es)
      if (e.defined() && sym::depends_on(e, d.var)) {
        out.push_back(d);
        break;
      }
  return out;
}

bool contains(const Dims& dims, const Dim& d) {
  return std::find(dims.begin(), dims.end(), d) != dims.end();
}

}  // namespace

// ---- Operand, Index ------------------------------------------------------------------------

Operand::Operand(const RT& r, Loc l) : rt(&r), loc(l) {}
Operand::Operand(double v, Loc l) : scalar(v), loc(l) {}

RT::Index::Index(const Expr& e, Loc l) : entries{e}, loc(l) {}
RT::Index::Index(int v, Loc l) : entries{Expr(v)}, loc(l) {}
RT::Index::Index(int64_t v, Loc l) : entries{Expr(v)}, loc(l) {}
RT::Index::Index(std::initializer_list<Expr> es, Loc l) : entries(es), loc(l) {}

// ---- RT basics -----------------------------------------------------------------------------

RT::RT(Context* ctx, ir::OpId op, int output, Dims domain, Expr phi, Expr cond)
    : ctx_(ctx), op_(op), output_(output), domain_(std::move(domain)), phi_(std::move(phi)),
      cond_(std::move(cond)) {
  const ir::OpNode& node = ctx_->graph().op(op_);
  TEMPO_ASSERT(output_ >= 0 && output_ < static_cast<int>(node.outputs.size()), "bad output ",
               output_, " of ", node.describe());
  type_ = node.outputs[output_];
  if (phi_.defined()) {
    TEMPO_ASSERT(phi_.is_seq() && phi_.size() == node.domain.size(), "bad phi ", phi_.str(),
                 " for ", node.describe());
    std::vector<Expr> lead;
    for (const Expr& e : phi_.args()) {
      if (!e.is_slice()) continue;
      const Expr &start = e.arg(0), &stop = e.arg(1), &step = e.arg(2);
      Expr size = step.is_const(1) ? stop - start : (stop - start + step - 1) / step;
      lead.push_back(sym::simplify(size, domain_));
    }
    type_.shape.dims.insert(type_.shape.dims.begin(), lead.begin(), lead.end());
  }
}

Context& RT::ctx() const {
  if (!ctx_) throw UserError("use of an undefined RT");
  return *ctx_;
}

DType RT::dtype() const {
  ctx();
  return type_.dtype;
}

const Shape& RT::shape() const {
  ctx();
  return type_.shape;
}

const Dims& RT::domain() const { return domain_; }

const std::string& RT::name() const { return ctx().graph().op(op_).name; }

RT& RT::named(const std::string& name, Loc loc) {
  if (has_pending_index()) *this = ctx().add_op1(ir::OpKind::Identity, {}, {*this}, loc);
  ctx().graph().op(op_).name = name;
  return *this;
}

bool RT::has_pending_index() const {
  const ir::OpNode& node = ctx().graph().op(op_);
  return phi_.defined() || (cond_.defined() && !(node.cond.defined() && node.cond.same(cond_)));
}

Expr RT::read_phi() const {
  if (phi_.defined()) return phi_;
  return identity_phi(ctx().graph().op(op_).domain);
}

// ---- temporal indexing ---------------------------------------------------------------------

RT::Indexed RT::operator[](const Index& ix) const {
  Context& c = ctx();
  // Ops are looked up afresh: adding an op (materialization) may move the graph's nodes.
  auto fail = [&](const std::string& msg) {
    throw UserError(cat(c.graph().op(op_).describe(), ", indexed at ", where(ix.loc), ": ", msg));
  };
  std::vector<Expr> entries = ix.entries;
  for (const Expr& e : entries)
    if (!e.defined()) fail("undefined index expression");
  if (entries.size() == 1 && entries[0].is_seq()) entries = entries[0].args();

  // Every symbol must belong to the context.
  for (const Expr& e : entries)
    for (const Expr& s : sym::free_symbols(e)) {
      bool ok = std::any_of(c.dims().begin(), c.dims().end(), [&](const Dim& d) {
        return d.var.same(s) || d.bound.same(s);
      });
      if (!ok) fail(cat("symbol ", s.str(), " in `", e.str(), "` is not a dimension of this context"));
    }

  // A single boolean: a condition.
  if (entries.size() == 1 && entries[0].type() == sym::Type::Bool) {
    Expr cond = and_cond(cond_, entries[0]);
    Dims dom = dims_used(c, {read_phi(), cond});
    RT view(ctx_, op_, output_, dom, phi_, cond);
    return Indexed(view, *this, entries[0], ix.loc);
  }

  if (entries.size() != domain_.size())
    fail(cat("its domain ", dims_list(domain_), " has ", domain_.size(),
             " dimensions but the index ", entries_str(entries), " has ", entries.size(),
             " entries"));
  bool slices = false;
  for (size_t k = 0; k < entries.size(); ++k) {
    const Expr& e = entries[k];
    if (e.type() == sym::Type::Bool)
      fail(cat("boolean `", e.str(), "` where an index of dimension ", domain_[k].name(),
               " is expected (a condition must be the only index)"));
    if (e.type() != sym::Type::Int && e.type() != sym::Type::Slice)
      fail(cat("`", e.str(), "` is not a point or a slice"));
    slices = slices || e.is_slice();
  }
  Expr raw = entries.size() == 1 ? entries[0] : sym::seq(entries);

  // A pending index with slices (or a slice read of a pending index) is materialized first:
  // slices do not compose by substitution.
  RT x = *this;
  if (phi_.defined() && (sym::has_slice(phi_) || slices)) {
    x = c.add_op1(ir::OpKind::Identity, {}, {*this}, ix.loc);
    std::string name = c.graph().op(op_).name;
    x.named(name);
  }

  std::vector<std::pair<Expr, Expr>> repl;
  std::vector<std::pair<Expr, Expr>> point_repl;
  std::vector<Expr> slice_vars;
  for (size_t k = 0; k < entries.size(); ++k) {
    repl.emplace_back(x.domain_[k].var, entries[k]);
    if (entries[k].is_slice())
      slice_vars.push_back(x.domain_[k].var);
    else
      point_repl.emplace_back(x.domain_[k].var, entries[k]);
  }
  Expr phi = sym::substitute(x.read_phi(), repl);
  // The condition follows the points; conjuncts over a sliced variable are dropped (the reader
  // exists regardless of which of the covered points exist).
  Expr cond;
  if (x.cond_.defined()) {
    std::vector<Expr> parts =
        x.cond_.op() == sym::Op::And ? x.cond_.args() : std::vector<Expr>{x.cond_};
    for (const Expr& p : parts) {
      bool over_slice = std::any_of(slice_vars.begin(), slice_vars.end(),
                                    [&](const Expr& v) { return sym::depends_on(p, v); });
      if (!over_slice) cond = and_cond(cond, sym::substitute(p, point_repl));
    }
    if (cond.defined() && cond.is_bool_const()) {
      if (!cond.value()) fail(cat("the index never satisfies the condition ", x.cond_.str()));
      cond = Expr();
    }
  }
  Dims dom = dims_used(c, {phi, cond});
  const ir::OpNode& xnode = c.graph().op(x.op_);
  if (phi.same(identity_phi(xnode.domain))) phi = Expr();
  RT view(ctx_, x.op_, x.output_, dom, phi, cond);
  return Indexed(view, *this, raw, ix.loc);
}

RT::Indexed::Indexed(RT view, RT base, Expr index, Loc loc)
    : RT(std::move(view)), base_(std::move(base)), index_(std::move(index)), loc_(loc) {}

RT::Indexed& RT::Indexed::operator=(const RT& value) {
  Context& c = base_.ctx();
  ir::Graph& g = c.graph();
  const ir::OpNode& ph = g.op(base_.op());
  auto fail = [&](const std::string& msg) {
    throw UserError(cat("cannot define ", ph.describe(), " at ", where(loc_), ": ", msg));
  };
  if (ph.kind != ir::OpKind::Merge || base_.phi().defined() || base_.cond().defined())
    fail("only a placeholder (Context::placeholder) can be defined by assignment");
  if (!value.defined()) fail("the value is an undefined RT");
  if (&value.ctx() != &c) fail("the value belongs to another Context");
  const ir::OpNode& vnode = g.op(value.op());

  std::vector<Expr> entries = index_.is_seq() ? index_.args() : std::vector<Expr>{index_};
  if (entries.size() == 1 && entries[0].type() == sym::Type::Bool)
    fail(cat("a branch is defined by an index per dimension, not by the condition `",
             index_.str(), "`"));
  const Dims& dom = ph.domain;
  if (entries.size() != dom.size())
    fail(cat("its domain ", dims_list(dom), " has ", dom.size(), " dimensions but the index ",
             entries_str(entries), " has ", entries.size(), " entries"));

  for (const Dim& d : value.domain())
    if (!contains(dom, d))
      fail(cat("the value ", vnode.describe(), " varies in dimension ", d.name(),
               " which is not in the placeholder's domain ", dims_list(dom)));

  Expr cond;
  std::vector<std::pair<Expr, Expr>> repl;
  for (size_t k = 0; k < dom.size(); ++k) {
    const Expr& e = entries[k];
    const Expr& v = dom[k].var;
    if (e.is_const()) {
      // A fixed point of this dimension: the value must not vary in it.
      if (contains(value.domain(), dom[k]))
        fail(cat("the value ", vnode.describe(), " varies in ", v.str(), " but is assigned at ",
                 v.str(), " == ", e.str(), " only"));
      cond = and_cond(cond, v == e);
      continue;
    }
    int64_t off = 0;
    bool ok = false;
    if (e.same(v)) {
      ok = true;
    } else if (e.op() == sym::Op::Add && e.size() == 2) {
      if (e.arg(0).same(v) && e.arg(1).is_const()) {
        off = e.arg(1).value();
        ok = true;
      } else if (e.arg(1).same(v) && e.arg(0).is_const()) {
        off = e.arg(0).value();
        ok = true;
      }
    }
    if (!ok)
      fail(cat("index entry `", e.str(), "` of dimension ", v.str(), " must be ", v.str(),
               " + constant or a constant"));
    if (off > 0) cond = and_cond(cond, v >= Expr(off));
    if (off < 0) cond = and_cond(cond, v < dom[k].bound + Expr(off));
    if (off != 0) repl.emplace_back(v, v - Expr(off));
  }

  TensorType want = ph.outputs[0];
  TensorType got{value.dtype(), value.shape()};
  bool same = want.dtype == got.dtype && want.shape.rank() == got.shape.rank();
  for (size_t i = 0; same && i < want.shape.rank(); ++i)
    same = want.shape[i].same(got.shape[i]) ||
           sym::simplify(want.shape[i], dom).same(sym::simplify(got.shape[i], dom));
  if (!same)
    fail(cat("the value ", vnode.describe(), " has type ", got.str(),
             " but the placeholder has type ", want.str()));

  Expr phi = sym::substitute(value.read_phi(), repl);
  if (value.cond().defined()) cond = and_cond(cond, sym::substitute(value.cond(), repl));
  g.add_edge(base_.op(), value.op(), value.output(), phi, cond);
  return *this;
}

RT RT::retain(Loc loc) const {
  Context& c = ctx();
  std::string name = c.graph().op(op_).name;  // copied: adding an op may move the nodes
  RT r = *this;
  if (has_pending_index()) {
    r = c.add_op1(ir::OpKind::Identity, {}, {*this}, loc);
    r.named(name, loc);
  }
  c.mark_retained(r.op(), r.output());
  return r;
}

}  // namespace tempo
