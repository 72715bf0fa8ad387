// Gradient rules of movement (the inverse movement) and indexing.
#include "api/grad_rules_detail.h"
#include "util/error.h"

namespace tempo::autodiff::detail {

using ir::OpKind;

void movement_grads(const GradCtx& c, std::vector<RT>& out) {
  const auto& [r, a, ctx, loc, x, g, y] = c;
  switch (r.op.kind) {
    case OpKind::Reshape:
      out[0] = g.reshape(x[0].shape(), loc);
      break;
    case OpKind::Permute: {
      std::vector<int64_t> inv(a.ints.size());
      for (size_t i = 0; i < a.ints.size(); ++i) inv[a.ints[i]] = static_cast<int64_t>(i);
      out[0] = g.permute(inv, loc);
      break;
    }
    case OpKind::Expand:
      out[0] = unbroadcast(g, x[0].shape(), loc);
      break;
    case OpKind::Squeeze:
      out[0] = g.unsqueeze(a.ints[0], loc);
      break;
    case OpKind::Unsqueeze:
      out[0] = g.squeeze(a.ints[0], loc);
      break;
    case OpKind::Slice: {  // pad back with zeros around start:stop
      int64_t d = a.ints[0];
      out[0] = g.pad(d, a.exprs[0], x[0].shape()[d] - a.exprs[1], 0.0, loc);
      break;
    }
    case OpKind::Pad: {  // cut the padding off
      int64_t d = a.ints[0];
      out[0] = g.slice(d, a.exprs[0], a.exprs[0] + x[0].shape()[d], loc);
      break;
    }
    case OpKind::Flip:
      out[0] = g.flip(a.ints[0], loc);
      break;
    case OpKind::Cat: {
      int64_t d = a.ints[0];
      Expr off(0);
      for (size_t k = 0; k < x.size(); ++k) {
        Expr end = off + x[k].shape()[d];
        if (c.need(k)) out[k] = g.slice(d, off, end, loc);
        off = end;
      }
      break;
    }
    default:
      throw InternalError(cat("no gradient rule for differentiable op ", r.op.describe()));
  }
}

void indexing_grads(const GradCtx& c, std::vector<RT>& out) {
  const auto& [r, a, ctx, loc, x, g, y] = c;
  switch (r.op.kind) {
    case OpKind::Index: {  // a one-hot slot along d
      int64_t d = a.ints[0];
      const Expr& pos = a.exprs[0];
      out[0] = g.unsqueeze(d, loc).pad(d, pos, x[0].shape()[d] - pos - 1, 0.0, loc);
      break;
    }
    case OpKind::IndexSelect:
      if (c.need(0)) out[0] = zeros_like(ctx, x[0], loc).index_add(a.ints[0], x[1], g, loc);
      break;
    case OpKind::Gather:
      if (c.need(0)) out[0] = pick_grad(ctx, x[0], a.ints[0], x[1], g, loc);
      break;
    case OpKind::ScatterAdd:
      if (c.need(0)) out[0] = g;
      if (c.need(2)) out[2] = g.gather(a.ints[0], x[1], loc);
      break;
    case OpKind::IndexAdd:
      if (c.need(0)) out[0] = g;
      if (c.need(2)) out[2] = g.index_select(a.ints[0], x[1], loc);
      break;
    default:
      throw InternalError(cat("no gradient rule for differentiable op ", r.op.describe()));
  }
}

}  // namespace tempo::autodiff::detail
