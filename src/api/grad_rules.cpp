// Local gradient rules (ARCHITECTURE.md "one table per op kind"): a dispatch on the op kind's
// category (op_kind.h) to its rules (grad_rules_<category>.cpp). Each rule builds the input
// gradients with ordinary RT operations, so the gradient program is itself an RT program that
// the normal pipeline optimizes and schedules.
#include "api/grad_rules.h"

#include <numeric>

#include "api/grad_rules_detail.h"
#include "util/error.h"

namespace tempo::autodiff {

using ir::OpKind;

namespace detail {

RT zeros_like(Context& ctx, const RT& x, Loc loc) {
  return ctx.constant(0.0, x.shape(), x.dtype(), {}, loc);
}

// Where the index picks one element per position of the other dims (size 1 along d), the
// gradient is g where the position along d equals the index, else 0: elementwise ops that
// vectorize over temporal dims and fuse, where a scatter of g into zeros does neither.
RT pick_grad(Context& ctx, const RT& x, int64_t d, const RT& index, const RT& g, Loc loc) {
  const Shape &xs = x.shape(), &is = index.shape();
  bool one = is.rank() == xs.rank() && is[d].is_const(1) && g.shape().same(is);
  for (size_t k = 0; one && k < xs.rank(); ++k)
    one = static_cast<int64_t>(k) == d || is[k].same(xs[k]);
  if (!one) return zeros_like(ctx, x, loc).scatter_add(d, index, g, loc);
  RT position = ctx.arange(xs[d], DType::Int64, loc);
  for (size_t k = static_cast<size_t>(d) + 1; k < xs.rank(); ++k)
    position = position.unsqueeze(-1, loc);
  return where(position == index, g, 0.0, loc);
}

void flow_grads(const GradCtx& c, std::vector<RT>& out) {
  switch (c.r.op.kind) {
    case OpKind::Merge:
      throw InternalError("local_grads called for a Merge (routed by autodiff)");
    case OpKind::Identity:
      out[0] = c.g;
      break;
    default:
      throw InternalError(cat("no gradient rule for differentiable op ", c.r.op.describe()));
  }
}

}  // namespace detail

RT unbroadcast(const RT& g, const Shape& shape, Loc loc) {
  RT out = g;
  size_t rg = g.rank(), rt = shape.rank();
  if (rg > rt) {
    std::vector<int64_t> lead(rg - rt);
    std::iota(lead.begin(), lead.end(), 0);
    out = out.sum(lead, false, loc);
  }
  std::vector<int64_t> ones;
  for (size_t i = 0; i < rt; ++i)
    if (shape[i].is_const(1) && !out.shape()[i].is_const(1))
      ones.push_back(static_cast<int64_t>(i));
  if (!ones.empty()) out = out.sum(ones, true, loc);
  return out;
}

std::vector<RT> local_grads(const RuleInput& r) {
  const std::vector<RT>& x = r.in;
  std::vector<RT> out(x.size());
  if (r.g.empty() || !r.g[0].defined()) return out;
  if (!ir::is_differentiable(r.op.kind)) return out;
  const RT& g = r.g[0];
  const detail::GradCtx c{r, r.op.attrs, r.ctx, r.loc, x, g, r.out.empty() ? g : r.out[0]};
  switch (ir::op_kind_category(r.op.kind)) {
    case ir::OpCategory::Flow:
      detail::flow_grads(c, out);
      break;
    case ir::OpCategory::Unary:
      detail::unary_grads(c, out);
      break;
    case ir::OpCategory::Binary:
      detail::binary_grads(c, out);
      break;
    case ir::OpCategory::Reduction:
      detail::reduction_grads(c, out);
      break;
    case ir::OpCategory::Movement:
      detail::movement_grads(c, out);
      break;
    case ir::OpCategory::Indexing:
      detail::indexing_grads(c, out);
      break;
    case ir::OpCategory::LinearAlgebra:
      detail::linalg_grads(c, out);
      break;
    case ir::OpCategory::Source:
    case ir::OpCategory::Region:
    case ir::OpCategory::Collective:
      throw InternalError(cat("no gradient rule for differentiable op ", r.op.describe()));
  }

  // Gradients keep their input's floating dtype (e.g. f32 * f64 -> f64 back to f32).
  for (size_t k = 0; k < out.size(); ++k) {
    if (!out[k].defined()) continue;
    if (!c.need(k) || !ir::is_floating(x[k].dtype())) {
      out[k] = RT();
      continue;
    }
    if (out[k].dtype() != x[k].dtype()) out[k] = out[k].cast(x[k].dtype(), r.loc);
  }
  return out;
}

}  // namespace tempo::autodiff
