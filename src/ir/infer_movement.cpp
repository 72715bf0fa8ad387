// Inference for the kinds that move elements: reshapes, views, pads and concatenations.
#include "ir/infer_rules.h"

namespace tempo::ir::detail {

namespace {

Expr product(const Shape& s) {
  Expr p(1);
  for (const Expr& d : s.dims) p = p * d;
  return p;
}

Types reshape(const InferCtx& c) {
  const TensorType& x = c.in[0];
  Shape target(c.attrs.exprs);
  int infer_at = -1;
  for (size_t i = 0; i < target.rank(); ++i)
    if (target[i].is_const(-1)) {
      if (infer_at >= 0) c.fail("at most one size may be -1");
      infer_at = static_cast<int>(i);
    }
  Expr total = c.simp(product(x.shape));
  if (infer_at >= 0) {
    Shape rest = target;
    rest.dims.erase(rest.dims.begin() + infer_at);
    Expr r = c.simp(product(rest));
    if (total.is_const() && r.is_const()) {
      if (r.value() == 0 || total.value() % r.value() != 0)
        c.fail(cat("cannot reshape ", x.str(), " to ", target.str()));
      target.dims[infer_at] = Expr(total.value() / r.value());
    } else {
      target.dims[infer_at] = c.simp(total / r);
    }
  }
  Expr want = c.simp(product(target));
  if (total.is_const() && want.is_const() && total.value() != want.value())
    c.fail(cat("cannot reshape ", x.str(), " (", total.value(), " elements) to ", target.str(),
               " (", want.value(), " elements)"));
  return {TensorType{x.dtype, target}};
}

Types permute(const InferCtx& c) {
  const TensorType& x = c.in[0];
  const std::vector<int64_t>& perm = c.attrs.ints;
  size_t r = x.shape.rank();
  if (perm.size() != r) c.fail(cat("permutation ", perm.size(), " dims for rank ", r));
  std::vector<bool> seen(r, false);
  TensorType t{x.dtype, {}};
  for (int64_t d : perm) {
    if (d < 0 || d >= static_cast<int64_t>(r) || seen[d])
      c.fail(cat("invalid permutation of a rank-", r, " tensor"));
    seen[d] = true;
    t.shape.dims.push_back(x.shape[d]);
  }
  return {t};
}

Types expand(const InferCtx& c) {
  const TensorType& x = c.in[0];
  Shape target(c.attrs.exprs);
  const Shape& s = x.shape;
  if (target.rank() < s.rank())
    c.fail(cat("cannot expand ", x.str(), " to fewer dimensions ", target.str()));
  size_t off = target.rank() - s.rank();
  for (size_t i = 0; i < target.rank(); ++i) {
    if (target[i].is_const(-1)) {
      if (i < off) c.fail("-1 is only allowed for existing dimensions");
      target.dims[i] = s[i - off];
      continue;
    }
    if (i < off) continue;
    const Expr& d = s[i - off];
    if (!d.is_const(1) && !c.same_size(d, target[i]))
      c.fail(cat("cannot expand ", x.str(), " to ", target.str()));
  }
  return {TensorType{x.dtype, target}};
}

Types slice(const InferCtx& c) {
  int64_t d = c.dim(0, c.in[0].shape.rank());
  TensorType t = c.in[0];
  Expr size = c.simp(c.expr(1) - c.expr(0));
  if (size.is_const() && size.value() < 0)
    c.fail(cat("slice ", c.expr(0).str(), ":", c.expr(1).str(), " has negative length"));
  const Expr& n = c.simp(c.in[0].shape[d]);
  if (n.is_const() && c.simp(c.expr(1)).is_const() && c.simp(c.expr(1)).value() > n.value())
    c.fail(
        cat("slice ", c.expr(0).str(), ":", c.expr(1).str(), " out of range for size ", n.value()));
  t.shape.dims[d] = size;
  return {t};
}

Types concatenate(const InferCtx& c) {
  const Types& in = c.in;
  if (in.empty()) c.fail("needs at least one input");
  int64_t d = c.dim(0, in[0].shape.rank());
  TensorType t = in[0];
  Expr total = in[0].shape[d];
  for (size_t i = 1; i < in.size(); ++i) {
    if (in[i].shape.rank() != t.shape.rank())
      c.fail(cat("inputs differ in rank: ", shapes_str(in)));
    for (size_t k = 0; k < t.shape.rank(); ++k)
      if (static_cast<int64_t>(k) != d && !c.same_size(t.shape[k], in[i].shape[k]))
        c.fail(cat("inputs differ in dimension ", k, ": ", shapes_str(in)));
    total = total + in[i].shape[d];
    t.dtype = promote(t.dtype, in[i].dtype);
  }
  t.shape.dims[d] = c.simp(total);
  return {t};
}

}  // namespace

Types infer_movement(const InferCtx& c) {
  const Types& in = c.in;
  switch (c.kind) {
    case OpKind::Reshape:
      return reshape(c);
    case OpKind::Permute:
      return permute(c);
    case OpKind::Expand:
      return expand(c);
    case OpKind::Squeeze: {
      int64_t d = c.dim(0, in[0].shape.rank());
      if (!c.simp(in[0].shape[d]).is_const(1))
        c.fail(cat("dimension ", d, " of ", in[0].str(), " is not of size 1"));
      TensorType t = in[0];
      t.shape.dims.erase(t.shape.dims.begin() + d);
      return {t};
    }
    case OpKind::Unsqueeze: {
      int64_t d = c.dim(0, in[0].shape.rank(), true);
      TensorType t = in[0];
      t.shape.dims.insert(t.shape.dims.begin() + d, Expr(1));
      return {t};
    }
    case OpKind::Slice:
      return slice(c);
    case OpKind::Pad: {
      int64_t d = c.dim(0, in[0].shape.rank());
      TensorType t = in[0];
      t.shape.dims[d] = c.simp(t.shape[d] + c.expr(0) + c.expr(1));
      return {t};
    }
    case OpKind::Flip:
      c.dim(0, in[0].shape.rank());
      return {in[0]};
    case OpKind::Cat:
      return concatenate(c);
    default:
      c.unknown_kind();
  }
}

}  // namespace tempo::ir::detail
