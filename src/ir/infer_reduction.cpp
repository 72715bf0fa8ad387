// Inference for reductions and scans along dimensions.
#include "ir/infer_rules.h"

namespace tempo::ir::detail {

namespace {

TensorType reduce_shape(const InferCtx& c, const TensorType& x, const std::vector<int64_t>& dims,
                        bool keepdim) {
  std::vector<bool> reduced(x.shape.rank(), dims.empty());
  for (int64_t d : dims) {
    if (d < 0 || d >= static_cast<int64_t>(x.shape.rank()))
      c.fail(cat("dimension ", d, " out of range for ", x.str()));
    reduced[d] = true;
  }
  TensorType out = x;
  out.shape.dims.clear();
  for (size_t i = 0; i < x.shape.rank(); ++i) {
    if (!reduced[i])
      out.shape.dims.push_back(x.shape[i]);
    else if (keepdim)
      out.shape.dims.emplace_back(1);
  }
  return out;
}

// The inputs of the discounted sums and scans: a floating x and an optional done of x's shape.
void check_discounted(const InferCtx& c, const Types& in) {
  if (in.empty() || in.size() > 2) c.fail("takes x and an optional done");
  if (!is_floating(in[0].dtype)) c.fail(cat("needs a floating tensor, got ", in[0].str()));
  if (in.size() == 2) {
    bool same = in[1].shape.rank() == in[0].shape.rank();
    for (size_t k = 0; same && k < in[0].shape.rank(); ++k)
      same = c.same_size(in[0].shape[k], in[1].shape[k]);
    if (!same) c.fail(cat("done must have x's shape: ", shapes_str(in)));
  }
}

Types top_k(const InferCtx& c) {
  const TensorType& x = c.in[0];
  if (x.shape.rank() == 0) c.fail("cannot take the top k of a scalar");
  int64_t d = c.dim(0, x.shape.rank());
  const Expr& k = c.expr(0);
  if (!k.is_const() || k.value() < 1) c.fail(cat("k must be a positive integer, got ", k.str()));
  Expr n = c.simp(x.shape[d]);
  if (n.is_const() && k.value() > n.value())
    c.fail(cat("k = ", k.value(), " is larger than dimension ", d, " of ", x.str()));
  TensorType v = x;
  v.shape.dims[d] = k;
  return {v, TensorType{DType::Int64, v.shape}};
}

}  // namespace

Types infer_reduction(const InferCtx& c) {
  const Types& in = c.in;
  const Attrs& a = c.attrs;
  switch (c.kind) {
    case OpKind::Sum: {
      TensorType t = reduce_shape(c, in[0], a.ints, a.keepdim);
      if (!is_floating(t.dtype)) t.dtype = DType::Int64;
      return {t};
    }
    case OpKind::ReduceMax: {
      if (in[0].shape.rank() == 0) c.fail("cannot reduce a scalar");
      int64_t d = c.dim(0, in[0].shape.rank());
      TensorType v = reduce_shape(c, in[0], {d}, a.keepdim);
      return {v, TensorType{DType::Int64, v.shape}};
    }
    case OpKind::TopK:
      return top_k(c);
    case OpKind::DiscountedSum: {
      check_discounted(c, in);
      int64_t d = c.dim(0, in[0].shape.rank());
      return {reduce_shape(c, in[0], {d}, false)};
    }
    case OpKind::DiscountedCumSum: {
      check_discounted(c, in);
      c.dim(0, in[0].shape.rank());
      if (a.exprs.size() != 1 || !a.exprs[0].is_const())
        c.fail("needs its direction (1: reverse, 0: forward) as exprs[0]");
      return {in[0]};
    }
    case OpKind::CumSum: {
      c.dim(0, in[0].shape.rank());
      TensorType t = in[0];
      if (!is_floating(t.dtype)) t.dtype = DType::Int64;
      return {t};
    }
    default:
      c.unknown_kind();
  }
}

}  // namespace tempo::ir::detail
