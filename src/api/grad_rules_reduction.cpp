// Gradient rules of reductions and scans.
#include <numeric>

#include "api/grad_rules_detail.h"
#include "util/error.h"

namespace tempo::autodiff::detail {

using ir::OpKind;

namespace {

// Broadcasts g (the gradient of a reduction without its reduced dims) back to x's shape.
RT expand_to(const RT& g, const RT& x, Loc loc) {
  if (g.shape().same(x.shape())) return g;
  return g.expand(x.shape(), loc);
}

// The weight of each x[k] in a discounted sum: gamma^k alive(k).
RT discount_weights(const GradCtx& c) {
  const std::vector<RT>& x = c.x;
  Loc loc = c.loc;
  int64_t d = c.a.ints[0];
  DType dt = x[0].dtype();
  RT w = c.ctx.constant(c.a.scalar, Shape(), dt, {}, loc)
             .pow(c.ctx.arange(x[0].shape()[d], dt, loc), loc);
  for (int64_t k = d + 1; k < static_cast<int64_t>(x[0].rank()); ++k) w = w.unsqueeze(-1, loc);
  if (x.size() == 2) {
    RT ended = (x[1] >= 0.5).cast(dt, loc);
    w = where(ended.cumsum(d, loc) - ended < 0.5, w, 0.0, loc);
  }
  return w;
}

}  // namespace

void reduction_grads(const GradCtx& c, std::vector<RT>& out) {
  const auto& [r, a, ctx, loc, x, g, y] = c;
  switch (r.op.kind) {
    case OpKind::Sum: {
      RT gk = g;
      if (!a.keepdim) {
        std::vector<int64_t> dims = a.ints;
        if (dims.empty()) {
          dims.resize(x[0].rank());
          std::iota(dims.begin(), dims.end(), 0);
        }
        for (int64_t d : dims) gk = gk.unsqueeze(d, loc);  // ascending: positions stay right
      }
      out[0] = expand_to(gk, x[0], loc);
      break;
    }
    case OpKind::ReduceMax: {  // the gradient goes to the selected element (as LibTorch)
      int64_t d = a.ints[0];
      RT gk = a.keepdim ? g : g.unsqueeze(d, loc);
      RT ik = a.keepdim ? r.out[1] : r.out[1].unsqueeze(d, loc);
      out[0] = pick_grad(ctx, x[0], d, ik, gk, loc);
      break;
    }
    case OpKind::DiscountedSum: {
      RT w = discount_weights(c);
      if (c.need(0)) out[0] = expand_to(g.unsqueeze(a.ints[0], loc), x[0], loc) * w;
      break;
    }
    case OpKind::DiscountedCumSum: {  // the same links, in the other direction
      int64_t d = a.ints[0];
      bool reverse = a.exprs[0].value() != 0;
      if (c.need(0))
        out[0] = x.size() == 2 ? g.discounted_cumsum(a.scalar, x[1], d, !reverse, loc)
                               : g.discounted_cumsum(a.scalar, d, !reverse, loc);
      break;
    }
    case OpKind::CumSum: {  // reverse cumulative sum
      int64_t d = a.ints[0];
      out[0] = g.flip(d, loc).cumsum(d, loc).flip(d, loc);
      break;
    }
    default:
      throw InternalError(cat("no gradient rule for differentiable op ", r.op.describe()));
  }
}

}  // namespace tempo::autodiff::detail
