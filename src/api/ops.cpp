// RT operations lowered to SDG op kinds; derived operations built from primitives.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>

#include "api/context.h"
#include "symbolic/simplify.h"
#include "util/error.h"

namespace tempo {

using ir::Attrs;
using ir::OpKind;

namespace {

[[noreturn]] void fail_at(const RT& x, Loc loc, const std::string& what, const std::string& msg) {
  throw UserError(
      cat(what, " at ", where(loc), " on ", x.ctx().graph().op(x.op()).describe(), ": ", msg));
}

// Normalizes a possibly negative dim against a rank (rank + 1 for insertion points).
int64_t norm_dim(const RT& x, int64_t d, int64_t rank, Loc loc, const char* what) {
  int64_t n = d < 0 ? d + rank : d;
  if (n < 0 || n >= rank)
    fail_at(x, loc, what, cat("dimension ", d, " out of range for shape ", x.shape().str()));
  return n;
}

Attrs ints_attr(std::vector<int64_t> ints) {
  Attrs a;
  a.ints = std::move(ints);
  return a;
}

// The context dims whose variables occur in the expressions (for ops whose attributes depend on
// the temporal point, e.g. a slice t:T).
Dims dims_in(const Context& ctx, const std::vector<Expr>& es, Loc loc) {
  Dims out;
  for (const Expr& e : es) {
    if (!e.defined()) throw UserError(cat("undefined expression at ", where(loc)));
    for (const Expr& s : sym::free_symbols(e)) {
      bool found = false;
      for (const Dim& d : ctx.dims()) {
        if (d.var.same(s)) out.push_back(d);
        found = found || d.var.same(s) || d.bound.same(s);
      }
      if (!found)
        throw UserError(cat("symbol ", s.str(), " in `", e.str(), "` at ", where(loc),
                            " is not a dimension of this context"));
    }
  }
  return ctx.ordered(out);
}

// A scalar as a shape-() Const op whose dtype suits the other operand.
RT scalar_rt(Context& ctx, double v, const RT* other, Loc loc) {
  DType dt = other ? other->dtype() : DType::Float32;
  if (!ir::is_floating(dt) && v != std::floor(v)) dt = DType::Float32;
  if (dt == DType::Bool && v != 0.0 && v != 1.0) dt = DType::Int64;
  return ctx.constant(v, Shape(), dt, {}, loc);
}

// Turns operands into RTs: scalars become constants of the RT operands' dtype.
std::vector<RT> to_rts(const std::vector<const Operand*>& ops, Loc loc, const char* what) {
  const RT* first = nullptr;
  for (const Operand* o : ops)
    if (o->rt) {
      first = o->rt;
      break;
    }
  if (!first)
    throw UserError(cat(what, " at ", where(loc), ": at least one operand must be an RT"));
  std::vector<RT> out;
  for (const Operand* o : ops)
    out.push_back(o->rt ? *o->rt : scalar_rt(first->ctx(), o->scalar, first, loc));
  return out;
}

RT binary(OpKind k, const Operand& a, const Operand& b, Loc loc) {
  std::vector<RT> in = to_rts({&a, &b}, loc, ir::op_kind_name(k));
  return in[0].ctx().add_op1(k, {}, in, loc);
}

RT unary(OpKind k, const RT& x, Loc loc) {
  return x.ctx().add_op1(k, {}, {x}, loc);
}

std::vector<int64_t> norm_dims(const RT& x, const std::vector<int64_t>& dims, Loc loc,
                               const char* what) {
  int64_t r = static_cast<int64_t>(x.rank());
  std::vector<int64_t> out;
  if (dims.empty()) {
    out.resize(r);
    std::iota(out.begin(), out.end(), 0);
    return out;
  }
  for (int64_t d : dims) out.push_back(norm_dim(x, d, r, loc, what));
  std::sort(out.begin(), out.end());
  if (std::adjacent_find(out.begin(), out.end()) != out.end())
    fail_at(x, loc, what, "a dimension is reduced twice");
  return out;
}

// The number of elements over the given dims, as an RT of x's floating dtype (a constant when
// static, an evaluated symbol otherwise).
RT count_rt(const RT& x, const std::vector<int64_t>& dims, Loc loc) {
  Expr n(1);
  for (int64_t d : dims) n = n * x.shape()[d];
  n = sym::simplify(n, x.domain());
  DType dt = ir::is_floating(x.dtype()) ? x.dtype() : DType::Float32;
  if (n.is_const()) return x.ctx().constant(static_cast<double>(n.value()), Shape(), dt, {}, loc);
  return x.ctx().symbol(n, loc).cast(dt, loc);
}

}  // namespace

// ---- elementwise ---------------------------------------------------------------------------

RT RT::exp(Loc loc) const {
  return unary(OpKind::Exp, *this, loc);
}
RT RT::log(Loc loc) const {
  return unary(OpKind::Log, *this, loc);
}
RT RT::sqrt(Loc loc) const {
  return unary(OpKind::Sqrt, *this, loc);
}
RT RT::sin(Loc loc) const {
  return unary(OpKind::Sin, *this, loc);
}
RT RT::cos(Loc loc) const {
  return unary(OpKind::Cos, *this, loc);
}
RT RT::tanh(Loc loc) const {
  return unary(OpKind::Tanh, *this, loc);
}
RT RT::sigmoid(Loc loc) const {
  return unary(OpKind::Sigmoid, *this, loc);
}
RT RT::relu(Loc loc) const {
  return unary(OpKind::Relu, *this, loc);
}
RT RT::abs(Loc loc) const {
  return unary(OpKind::Abs, *this, loc);
}
RT RT::sign(Loc loc) const {
  return unary(OpKind::Sign, *this, loc);
}
RT RT::floor(Loc loc) const {
  return unary(OpKind::Floor, *this, loc);
}
RT RT::ceil(Loc loc) const {
  return unary(OpKind::Ceil, *this, loc);
}
RT RT::logical_not(Loc loc) const {
  return unary(OpKind::Not, *this, loc);
}
RT RT::square(Loc loc) const {
  return ctx().add_op1(OpKind::Mul, {}, {*this, *this}, loc);
}
RT RT::pow(const Operand& e, Loc loc) const {
  return binary(OpKind::Pow, *this, e, loc);
}

RT RT::cast(DType dtype, Loc loc) const {
  Attrs a;
  a.dtype = dtype;
  return ctx().add_op1(OpKind::Cast, std::move(a), {*this}, loc);
}

RT RT::maximum(const Operand& o, Loc loc) const {
  return binary(OpKind::Maximum, *this, o, loc);
}
RT RT::minimum(const Operand& o, Loc loc) const {
  return binary(OpKind::Minimum, *this, o, loc);
}

RT RT::clamp(double lo, double hi, Loc loc) const {
  if (lo > hi) fail_at(*this, loc, "clamp", cat("lower bound ", lo, " exceeds upper bound ", hi));
  return maximum(lo, loc).minimum(hi, loc);
}

// ---- reductions ----------------------------------------------------------------------------

RT RT::sum(Axes dims, bool keepdim, Loc loc) const {
  Attrs a;
  a.ints = norm_dims(*this, dims.dims, loc, "sum");
  a.keepdim = keepdim;
  return ctx().add_op1(OpKind::Sum, std::move(a), {*this}, loc);
}

RT RT::mean(Axes dims, bool keepdim, Loc loc) const {
  std::vector<int64_t> nd = norm_dims(*this, dims.dims, loc, "mean");
  RT s = sum(nd, keepdim, loc);
  return s / count_rt(*this, nd, loc);
}

RT RT::var(Axes dims, bool keepdim, Loc loc) const {
  std::vector<int64_t> nd = norm_dims(*this, dims.dims, loc, "var");
  RT d = *this - mean(nd, true, loc);
  return d.square(loc).mean(nd, keepdim, loc);
}

std::pair<RT, RT> RT::max_with_indices(int64_t dim, bool keepdim, Loc loc) const {
  if (rank() == 0) fail_at(*this, loc, "max", "cannot reduce a scalar");
  Attrs a = ints_attr({norm_dim(*this, dim, rank(), loc, "max")});
  a.keepdim = keepdim;
  std::vector<RT> out = ctx().add_op(OpKind::ReduceMax, std::move(a), {*this}, loc);
  return {out[0], out[1]};
}

std::pair<RT, RT> RT::topk(int64_t k, int64_t dim, Loc loc) const {
  if (rank() == 0) fail_at(*this, loc, "topk", "cannot take the top k of a scalar");
  if (k < 1) fail_at(*this, loc, "topk", cat("k must be at least 1, got ", k));
  Attrs a = ints_attr({norm_dim(*this, dim, rank(), loc, "topk")});
  a.exprs = {Expr(k)};
  std::vector<RT> out = ctx().add_op(OpKind::TopK, std::move(a), {*this}, loc);
  return {out[0], out[1]};
}

RT RT::max(int64_t dim, bool keepdim, Loc loc) const {
  return max_with_indices(dim, keepdim, loc).first;
}

RT RT::argmax(int64_t dim, bool keepdim, Loc loc) const {
  return max_with_indices(dim, keepdim, loc).second;
}

RT RT::cumsum(int64_t dim, Loc loc) const {
  return ctx().add_op1(OpKind::CumSum, ints_attr({norm_dim(*this, dim, rank(), loc, "cumsum")}),
                       {*this}, loc);
}

RT RT::softmax(int64_t dim, Loc loc) const {
  int64_t d = norm_dim(*this, dim, rank(), loc, "softmax");
  RT e = (*this - max(d, true, loc)).exp(loc);
  return e / e.sum(d, true, loc);
}

RT RT::log_softmax(int64_t dim, Loc loc) const {
  int64_t d = norm_dim(*this, dim, rank(), loc, "log_softmax");
  RT z = *this - max(d, true, loc);
  return z - z.exp(loc).sum(d, true, loc).log(loc);
}

RT RT::logsumexp(int64_t dim, bool keepdim, Loc loc) const {
  int64_t d = norm_dim(*this, dim, rank(), loc, "logsumexp");
  RT m = max(d, true, loc);
  RT r = (*this - m).exp(loc).sum(d, true, loc).log(loc) + m;
  return keepdim ? r : r.squeeze(d, loc);
}

namespace {

// The attributes of a discounted sum (direction: none) or scan (reverse or forward) along dim.
Attrs discounted_attrs(const RT& x, double gamma, int64_t dim, std::optional<bool> reverse,
                       Loc loc) {
  Attrs a = ints_attr(
      {norm_dim(x, dim, x.rank(), loc, reverse ? "discounted_cumsum" : "discounted_sum")});
  a.scalar = gamma;
  if (reverse) a.exprs = {Expr(*reverse ? 1 : 0)};
  return a;
}

}  // namespace

RT RT::discounted_sum(double gamma, int64_t dim, Loc loc) const {
  return ctx().add_op1(OpKind::DiscountedSum,
                       discounted_attrs(*this, gamma, dim, std::nullopt, loc), {*this}, loc);
}

RT RT::discounted_sum(double gamma, const RT& done, int64_t dim, Loc loc) const {
  return ctx().add_op1(OpKind::DiscountedSum,
                       discounted_attrs(*this, gamma, dim, std::nullopt, loc), {*this, done}, loc);
}

RT RT::discounted_cumsum(double gamma, int64_t dim, bool reverse, Loc loc) const {
  return ctx().add_op1(OpKind::DiscountedCumSum,
                       discounted_attrs(*this, gamma, dim, reverse, loc), {*this}, loc);
}

RT RT::discounted_cumsum(double gamma, const RT& done, int64_t dim, bool reverse, Loc loc) const {
  return ctx().add_op1(OpKind::DiscountedCumSum,
                       discounted_attrs(*this, gamma, dim, reverse, loc), {*this, done}, loc);
}

// ---- movement ------------------------------------------------------------------------------

RT RT::reshape(Shape shape, Loc loc) const {
  Attrs a;
  a.exprs = shape.dims;
  return ctx().add_op1(OpKind::Reshape, std::move(a), {*this}, loc,
                       dims_in(ctx(), shape.dims, loc));
}

RT RT::permute(std::vector<int64_t> dims, Loc loc) const {
  int64_t r = static_cast<int64_t>(rank());
  if (static_cast<int64_t>(dims.size()) != r)
    fail_at(*this, loc, "permute", cat(dims.size(), " dims given for rank ", r));
  for (int64_t& d : dims) d = norm_dim(*this, d, r, loc, "permute");
  return ctx().add_op1(OpKind::Permute, ints_attr(std::move(dims)), {*this}, loc);
}

RT RT::transpose(int64_t a, int64_t b, Loc loc) const {
  int64_t r = static_cast<int64_t>(rank());
  a = norm_dim(*this, a, r, loc, "transpose");
  b = norm_dim(*this, b, r, loc, "transpose");
  std::vector<int64_t> p(r);
  std::iota(p.begin(), p.end(), 0);
  std::swap(p[a], p[b]);
  return permute(p, loc);
}

RT RT::expand(Shape shape, Loc loc) const {
  Attrs a;
  a.exprs = shape.dims;
  return ctx().add_op1(OpKind::Expand, std::move(a), {*this}, loc, dims_in(ctx(), shape.dims, loc));
}

RT RT::squeeze(int64_t dim, Loc loc) const {
  return ctx().add_op1(OpKind::Squeeze, ints_attr({norm_dim(*this, dim, rank(), loc, "squeeze")}),
                       {*this}, loc);
}

RT RT::unsqueeze(int64_t dim, Loc loc) const {
  int64_t r = static_cast<int64_t>(rank()) + 1;
  return ctx().add_op1(OpKind::Unsqueeze, ints_attr({norm_dim(*this, dim, r, loc, "unsqueeze")}),
                       {*this}, loc);
}

RT RT::slice(int64_t dim, const Expr& start, const Expr& stop, Loc loc) const {
  Attrs a = ints_attr({norm_dim(*this, dim, rank(), loc, "slice")});
  a.exprs = {start, stop};
  return ctx().add_op1(OpKind::Slice, std::move(a), {*this}, loc,
                       dims_in(ctx(), {start, stop}, loc));
}

RT RT::pad(int64_t dim, const Expr& before, const Expr& after, double value, Loc loc) const {
  Attrs a = ints_attr({norm_dim(*this, dim, rank(), loc, "pad")});
  a.exprs = {before, after};
  a.scalar = value;
  return ctx().add_op1(OpKind::Pad, std::move(a), {*this}, loc,
                       dims_in(ctx(), {before, after}, loc));
}

RT RT::flip(int64_t dim, Loc loc) const {
  return ctx().add_op1(OpKind::Flip, ints_attr({norm_dim(*this, dim, rank(), loc, "flip")}),
                       {*this}, loc);
}

std::vector<RT> RT::split(int64_t dim, int64_t size, Loc loc) const {
  int64_t d = norm_dim(*this, dim, rank(), loc, "split");
  if (size <= 0) fail_at(*this, loc, "split", cat("split size must be positive, got ", size));
  Expr n = sym::simplify(shape()[d], domain());
  if (!n.is_const())
    fail_at(*this, loc, "split", cat("dimension ", d, " has dynamic size ", n.str()));
  std::vector<RT> out;
  for (int64_t k = 0; k < n.value(); k += size)
    out.push_back(slice(d, k, std::min(k + size, n.value()), loc));
  return out;
}

RT RT::flatten(Loc loc) const {
  Expr n(1);
  for (const Expr& d : shape().dims) n = n * d;
  return reshape(Shape({sym::simplify(n, domain())}), loc);
}

// ---- spatial indexing ----------------------------------------------------------------------

RT RT::index(int64_t dim, const Expr& e, Loc loc) const {
  Attrs a = ints_attr({norm_dim(*this, dim, rank(), loc, "index")});
  if (!e.defined() || e.type() != sym::Type::Int)
    fail_at(*this, loc, "index", "the position must be an integer expression");
  a.exprs = {e};
  return ctx().add_op1(OpKind::Index, std::move(a), {*this}, loc, dims_in(ctx(), {e}, loc));
}

RT RT::index_select(int64_t dim, const RT& idx, Loc loc) const {
  return ctx().add_op1(OpKind::IndexSelect,
                       ints_attr({norm_dim(*this, dim, rank(), loc, "index_select")}), {*this, idx},
                       loc);
}

RT RT::gather(int64_t dim, const RT& idx, Loc loc) const {
  return ctx().add_op1(OpKind::Gather, ints_attr({norm_dim(*this, dim, rank(), loc, "gather")}),
                       {*this, idx}, loc);
}

RT RT::scatter_add(int64_t dim, const RT& idx, const RT& src, Loc loc) const {
  return ctx().add_op1(OpKind::ScatterAdd,
                       ints_attr({norm_dim(*this, dim, rank(), loc, "scatter_add")}),
                       {*this, idx, src}, loc);
}

RT RT::index_add(int64_t dim, const RT& idx, const RT& src, Loc loc) const {
  return ctx().add_op1(OpKind::IndexAdd,
                       ints_attr({norm_dim(*this, dim, rank(), loc, "index_add")}),
                       {*this, idx, src}, loc);
}

// ---- linear algebra ------------------------------------------------------------------------

RT RT::matmul(const RT& o, Loc loc) const {
  return ctx().add_op1(OpKind::MatMul, {}, {*this, o}, loc);
}

RT RT::conv2d(const RT& weight, int64_t stride, int64_t padding, Loc loc) const {
  return ctx().add_op1(OpKind::Conv2d, ints_attr({stride, padding}), {*this, weight}, loc);
}

RT RT::detach(Loc loc) const {
  return unary(OpKind::Detach, *this, loc);
}

// ---- free operators ------------------------------------------------------------------------

RT operator+(const Operand& a, const Operand& b) {
  return binary(OpKind::Add, a, b, a.loc);
}
RT operator-(const Operand& a, const Operand& b) {
  return binary(OpKind::Sub, a, b, a.loc);
}
RT operator*(const Operand& a, const Operand& b) {
  return binary(OpKind::Mul, a, b, a.loc);
}
RT operator/(const Operand& a, const Operand& b) {
  return binary(OpKind::Div, a, b, a.loc);
}
RT operator-(const Operand& a) {
  if (!a.rt) throw UserError(cat("negation at ", where(a.loc), " needs an RT"));
  return unary(OpKind::Neg, *a.rt, a.loc);
}
RT operator==(const Operand& a, const Operand& b) {
  return binary(OpKind::Eq, a, b, a.loc);
}
RT operator!=(const Operand& a, const Operand& b) {
  return binary(OpKind::Ne, a, b, a.loc);
}
RT operator<(const Operand& a, const Operand& b) {
  return binary(OpKind::Lt, a, b, a.loc);
}
RT operator<=(const Operand& a, const Operand& b) {
  return binary(OpKind::Le, a, b, a.loc);
}
RT operator>(const Operand& a, const Operand& b) {
  return binary(OpKind::Gt, a, b, a.loc);
}
RT operator>=(const Operand& a, const Operand& b) {
  return binary(OpKind::Ge, a, b, a.loc);
}
RT operator&&(const Operand& a, const Operand& b) {
  return binary(OpKind::And, a, b, a.loc);
}
RT operator||(const Operand& a, const Operand& b) {
  return binary(OpKind::Or, a, b, a.loc);
}

RT where(const RT& cond, const Operand& a, const Operand& b, Loc loc) {
  // Scalars take the dtype of the other branch (not the condition's bool).
  const RT* other = a.rt ? a.rt : b.rt;
  Context& ctx = cond.ctx();
  RT ra = a.rt ? *a.rt : scalar_rt(ctx, a.scalar, other, loc);
  RT rb = b.rt ? *b.rt : scalar_rt(ctx, b.scalar, other, loc);
  return ctx.add_op1(OpKind::Where, {}, {cond, ra, rb}, loc);
}

RT cat(const std::vector<RT>& parts, int64_t dim, Loc loc) {
  if (parts.empty()) throw UserError(cat("cat at ", where(loc), " needs at least one RT"));
  int64_t d = norm_dim(parts[0], dim, parts[0].rank(), loc, "cat");
  return parts[0].ctx().add_op1(OpKind::Cat, ints_attr({d}), parts, loc);
}

RT cat(const std::vector<RT>& parts, int dim, Loc loc) {
  return cat(parts, static_cast<int64_t>(dim), loc);
}

RT stack(const std::vector<RT>& parts, int64_t dim, Loc loc) {
  if (parts.empty()) throw UserError(cat("stack at ", where(loc), " needs at least one RT"));
  int64_t d = norm_dim(parts[0], dim, parts[0].rank() + 1, loc, "stack");
  std::vector<RT> u;
  for (const RT& p : parts) u.push_back(p.unsqueeze(d, loc));
  return cat(u, d, loc);
}

}  // namespace tempo
