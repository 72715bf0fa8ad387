// Gradient rules of linear algebra.
#include "api/grad_rules_detail.h"
#include "util/error.h"

namespace tempo::autodiff::detail {

namespace {

std::vector<RT> matmul_grads(const RuleInput& r) {
  const RT &a = r.in[0], &b = r.in[1], &g = r.g[0];
  Loc loc = r.loc;
  std::vector<RT> out(2);
  size_t ra = a.rank(), rb = b.rank();
  if (ra == 1 && rb == 1) {  // dot product
    if (r.need[0]) out[0] = g * b;
    if (r.need[1]) out[1] = g * a;
  } else if (ra == 1) {  // [k] @ (..., k, n) -> (..., n)
    if (r.need[0])
      out[0] = unbroadcast(b.matmul(g.unsqueeze(-1, loc), loc).squeeze(-1, loc), a.shape(), loc);
    if (r.need[1])
      out[1] = unbroadcast(a.unsqueeze(-1, loc) * g.unsqueeze(-2, loc), b.shape(), loc);
  } else if (rb == 1) {  // (..., m, k) @ [k] -> (..., m)
    if (r.need[0]) out[0] = unbroadcast(g.unsqueeze(-1, loc) * b, a.shape(), loc);
    if (r.need[1])
      out[1] =
          unbroadcast(a.transpose(-1, -2, loc).matmul(g.unsqueeze(-1, loc), loc).squeeze(-1, loc),
                      b.shape(), loc);
  } else {
    if (r.need[0]) out[0] = unbroadcast(g.matmul(b.transpose(-1, -2, loc), loc), a.shape(), loc);
    if (r.need[1] && rb == 2) {
      // A matrix applied to rows (a Linear layer's weight): a batch's rows flattened into one
      // (k, B m) @ (B m, n) product instead of B products of (k, n) summed afterwards, as
      // (g^T a)^T, torch's own Linear backward order: a faster BLAS layout than a^T g, and a
      // weight read transposed gets a contiguous gradient.
      auto rows = [&](const RT& x) {
        if (x.rank() == 2) return x;
        Expr n = x.shape()[0];
        for (size_t d = 1; d + 1 < x.rank(); ++d) n = n * x.shape()[d];
        return x.reshape(Shape(std::vector<Expr>{n, x.shape()[x.rank() - 1]}), loc);
      };
      out[1] = rows(g).transpose(0, 1, loc).matmul(rows(a), loc).transpose(0, 1, loc);
    } else if (r.need[1]) {
      out[1] = unbroadcast(a.transpose(-1, -2, loc).matmul(g, loc), b.shape(), loc);
    }
  }
  return out;
}

}  // namespace

void linalg_grads(const GradCtx& c, std::vector<RT>& out) {
  switch (c.r.op.kind) {
    case ir::OpKind::MatMul:
      out = matmul_grads(c.r);
      break;
    case ir::OpKind::Conv2d:
      throw UserError(cat("no gradient for Conv2d yet: ", c.r.op.describe()));
    default:
      throw InternalError(cat("no gradient rule for differentiable op ", c.r.op.describe()));
  }
}

}  // namespace tempo::autodiff::detail
