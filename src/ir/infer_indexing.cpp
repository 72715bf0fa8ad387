// Inference for indexing (selections and scatters) and linear algebra.
#include "ir/infer_rules.h"

namespace tempo::ir::detail {

namespace {

TensorType matmul(const InferCtx& c, const TensorType& a, const TensorType& b) {
  if (a.shape.rank() == 0 || b.shape.rank() == 0)
    c.fail(cat("operands must have at least one dimension, got ", shapes_str(c.in)));
  DType dt = promote(a.dtype, b.dtype);
  Shape sa = a.shape, sb = b.shape;
  bool va = sa.rank() == 1, vb = sb.rank() == 1;
  if (va) sa.dims.insert(sa.dims.begin(), Expr(1));
  if (vb) sb.dims.emplace_back(1);
  const Expr& k1 = sa[sa.rank() - 1];
  const Expr& k2 = sb[sb.rank() - 2];
  if (!c.same_size(k1, k2))
    c.fail(cat("inner sizes differ: ", shapes_str(c.in), " (", k1.str(), " vs ", k2.str(), ")"));
  Shape ba(std::vector<Expr>(sa.dims.begin(), sa.dims.end() - 2));
  Shape bb(std::vector<Expr>(sb.dims.begin(), sb.dims.end() - 2));
  Shape batch = broadcast(c, {&ba, &bb});
  if (!va) batch.dims.push_back(sa[sa.rank() - 2]);
  if (!vb) batch.dims.push_back(sb[sb.rank() - 1]);
  return TensorType{dt, batch};
}

TensorType conv2d(const InferCtx& c) {
  const Types& in = c.in;
  const Attrs& a = c.attrs;
  const Shape &x = in[0].shape, &w = in[1].shape;
  if (x.rank() != 4 || w.rank() != 4)
    c.fail(cat("expects input (N, C, H, W) and weight (O, C, kh, kw), got ", shapes_str(in)));
  if (!c.same_size(x[1], w[1])) c.fail(cat("input channels differ: ", shapes_str(in)));
  int64_t stride = a.ints.size() > 0 ? a.ints[0] : 1;
  int64_t pad = a.ints.size() > 1 ? a.ints[1] : 0;
  if (stride <= 0 || pad < 0) c.fail(cat("bad stride ", stride, " or padding ", pad));
  auto out = [&](const Expr& n, const Expr& k) {
    Expr o = c.simp((n + Expr(2 * pad) - k) / Expr(stride) + 1);
    if (o.is_const() && o.value() <= 0)
      c.fail(cat("kernel larger than the padded input: ", shapes_str(in)));
    return o;
  };
  return TensorType{promote(in[0].dtype, in[1].dtype),
                    Shape({x[0], w[0], out(x[2], w[2]), out(x[3], w[3])})};
}

}  // namespace

Types infer_indexing(const InferCtx& c) {
  const Types& in = c.in;
  switch (c.kind) {
    case OpKind::Index: {
      int64_t d = c.dim(0, in[0].shape.rank());
      c.expr(0);
      TensorType t = in[0];
      t.shape.dims.erase(t.shape.dims.begin() + d);
      return {t};
    }
    case OpKind::IndexSelect: {
      int64_t d = c.dim(0, in[0].shape.rank());
      c.need_int(in[1], "index");
      if (in[1].shape.rank() != 1) c.fail(cat("index must be 1-D, got ", in[1].str()));
      TensorType t = in[0];
      t.shape.dims[d] = in[1].shape[0];
      return {t};
    }
    case OpKind::Gather: {
      c.dim(0, in[0].shape.rank());
      c.need_int(in[1], "index");
      if (in[1].shape.rank() != in[0].shape.rank())
        c.fail(cat("index rank differs from the source: ", shapes_str(in)));
      return {TensorType{in[0].dtype, in[1].shape}};
    }
    case OpKind::ScatterAdd: {
      c.dim(0, in[0].shape.rank());
      c.need_int(in[1], "index");
      if (in[1].shape.rank() != in[0].shape.rank() || in[2].shape.rank() != in[0].shape.rank())
        c.fail(cat("self, index and src must have the same rank: ", shapes_str(in)));
      return {in[0]};
    }
    case OpKind::IndexAdd: {
      int64_t d = c.dim(0, in[0].shape.rank());
      c.need_int(in[1], "index");
      if (in[1].shape.rank() != 1) c.fail(cat("index must be 1-D, got ", in[1].str()));
      if (in[2].shape.rank() != in[0].shape.rank())
        c.fail(cat("self and src must have the same rank: ", shapes_str(in)));
      if (!c.same_size(in[2].shape[d], in[1].shape[0]))
        c.fail(cat("src size along dim ", d, " must equal the index length: ", shapes_str(in)));
      return {in[0]};
    }
    default:
      c.unknown_kind();
  }
}

Types infer_linalg(const InferCtx& c) {
  switch (c.kind) {
    case OpKind::MatMul:
      return {matmul(c, c.in[0], c.in[1])};
    case OpKind::Conv2d:
      return {conv2d(c)};
    default:
      c.unknown_kind();
  }
}

}  // namespace tempo::ir::detail
